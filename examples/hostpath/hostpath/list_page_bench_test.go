package hostpath

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/csikit/csikit/driver"
)

// BenchmarkListVolumesPage is the backend's share of one ListVolumes page over 10,000 volumes:
// 101 entries (the library asks for one more than max_entries=100 to know whether another page
// follows), read after a cursor in the middle of the bucket.
//
//	go test -run '^$' -bench BenchmarkListVolumesPage -benchmem ./examples/hostpath/hostpath/
func BenchmarkListVolumesPage(b *testing.B) {
	c, err := NewController(Config{StateDir: filepath.Join(b.TempDir(), "state"), NodeID: "node-1"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ids := seedVolumes(b, c, "list", 10000)
	ctx := context.Background()
	req := &driver.ListVolumesRequest{After: ids[len(ids)/2], Limit: 101}
	for b.Loop() {
		page, err := c.ListVolumesPage(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) != 101 {
			b.Fatalf("page of %d entries, want 101", len(page))
		}
	}
}
