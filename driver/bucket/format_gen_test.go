package bucket_test

import (
	"os"
	"testing"

	"github.com/csikit/csikit/internal/reqfmt"
)

// TestFormattersAreGenerated fails when requests_format.go is stale: a request type was added,
// renamed or removed without `go generate ./driver/bucket`, which runs this test with
// CSIKIT_WRITE_FORMATTERS=1 to rewrite the file. COSI marks no field secret, so the methods hide
// parameter values by their key (reqfmt.Heuristic).
func TestFormattersAreGenerated(t *testing.T) {
	p := reqfmt.Package{Name: "bucket", Dir: "driver/bucket", Redaction: reqfmt.Heuristic}
	if err := reqfmt.Sync(".", p, os.Getenv(reqfmt.WriteEnv) == "1"); err != nil {
		t.Fatal(err)
	}
}
