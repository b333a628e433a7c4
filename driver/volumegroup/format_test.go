package volumegroup_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/csikit/csikit/internal/reqfmt"
)

// TestFormattersAreGenerated fails when requests_format.go is stale: a request type was added,
// renamed or removed without `go generate ./driver/volumegroup`, which runs this test with
// CSIKIT_WRITE_FORMATTERS=1 to rewrite the file. That the methods hide every secret is
// driver's TestPrintingARequestNeverLeaksItsSecrets, which prints these types too.
func TestFormattersAreGenerated(t *testing.T) {
	types, err := reqfmt.RawRequestTypes(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(types) == 0 {
		t.Fatal("no request type found: the source walk is broken")
	}
	want, err := reqfmt.Render("volumegroup", "driver/volumegroup", types)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CSIKIT_WRITE_FORMATTERS") == "1" {
		if err := os.WriteFile(reqfmt.GeneratedFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(reqfmt.GeneratedFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./driver/volumegroup", reqfmt.GeneratedFile)
	}
}
