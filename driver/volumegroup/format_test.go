package volumegroup_test

import (
	"os"
	"testing"

	"github.com/csikit/csikit/internal/reqfmt"
)

// TestFormattersAreGenerated fails when requests_format.go is stale: a request type was added,
// renamed or removed without `go generate ./driver/volumegroup`, which runs this test with
// CSIKIT_WRITE_FORMATTERS=1 to rewrite the file. That the methods hide every secret is
// driver's TestPrintingARequestNeverLeaksItsSecrets, which prints these types too.
func TestFormattersAreGenerated(t *testing.T) {
	p := reqfmt.Package{Name: "volumegroup", Dir: "driver/volumegroup", Redaction: reqfmt.Marked}
	if err := reqfmt.Sync(".", p, os.Getenv(reqfmt.WriteEnv) == "1"); err != nil {
		t.Fatal(err)
	}
}
