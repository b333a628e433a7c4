package csikit

import (
	"os"
	"testing"
	"time"

	"github.com/csikit/csikit/internal/apirecord"
)

// TestExportedAPIIsRecorded fails when the exported API of the SDK's public packages differs from
// api/csikit.txt, the record users and reviewers read: a change to the API has to change the record
// in the same commit, where a reviewer sees it line by line. The failure lists the lines added and
// removed, says which break callers, and gives the command that rewrites the record.
func TestExportedAPIIsRecorded(t *testing.T) {
	recorded, err := os.ReadFile(apirecord.RecordFile)
	if err != nil {
		t.Fatalf("read the record: %v; write it with %s", err, apirecord.UpdateCommand)
	}
	start := time.Now()
	current, err := apirecord.Generate(t.Context(), apirecord.Options{Dir: "."})
	if err != nil {
		t.Fatalf("record the current API: %v", err)
	}
	t.Logf("recorded the current API in %v", time.Since(start).Round(time.Millisecond))
	d := apirecord.Compare(recorded, current)
	if !d.Empty() {
		t.Fatalf("%s does not match the exported API.\n%s", apirecord.RecordFile, d.Explain())
	}
	if string(recorded) != string(current) {
		// Same lines, other text: edited by hand or merged out of order.
		t.Fatalf("%s lists the right lines but is not as the generator writes it; rewrite it with %s", apirecord.RecordFile, apirecord.UpdateCommand)
	}
}
