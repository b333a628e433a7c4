package plugin_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
)

// shortPager is a page lister that never returns more than cap items, whatever it is asked for,
// as cloud APIs with a fixed page size do.
type shortPager struct {
	minimal
	ids []string
	cap int
}

func (p shortPager) ListVolumesPage(_ context.Context, r *driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	i := sort.SearchStrings(p.ids, r.After)
	if i < len(p.ids) && p.ids[i] == r.After {
		i++
	}
	var out []driver.VolumeEntry
	for _, id := range p.ids[i:] {
		if len(out) == p.cap || (r.Limit > 0 && len(out) == r.Limit) {
			break
		}
		out = append(out, driver.VolumeEntry{Volume: driver.Volume{ID: id}})
	}
	return out, nil
}

func TestShortPagesDoNotTruncateTheListing(t *testing.T) {
	var ids []string
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("vol-%02d", i))
	}
	p := start(t, plugin.Config{Name: "short.example.com", VendorVersion: "1", Controller: shortPager{ids: ids, cap: 2}})
	for _, max := range []int32{0, 1, 3, 5, 10, 11} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			var seen []string
			token := ""
			for range 20 {
				resp, err := p.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: max, StartingToken: token})
				if err != nil {
					t.Fatal(err)
				}
				if max > 0 && len(resp.GetEntries()) > int(max) {
					t.Fatalf("%d entries for max_entries %d", len(resp.GetEntries()), max)
				}
				for _, e := range resp.GetEntries() {
					seen = append(seen, e.GetVolume().GetVolumeId())
				}
				if token = resp.GetNextToken(); token == "" {
					break
				}
			}
			if !slices.Equal(seen, ids) {
				t.Fatalf("listed %v, want %v", seen, ids)
			}
		})
	}
}

// cachedLister returns the same slice on every call, as a backend with a cache might.
type cachedLister struct {
	minimal
	cache []driver.Snapshot
}

func (c *cachedLister) CreateSnapshot(context.Context, *driver.CreateSnapshotRequest) (*driver.Snapshot, error) {
	return nil, driver.ErrUnsupported
}
func (c *cachedLister) DeleteSnapshot(context.Context, *driver.DeleteSnapshotRequest) error {
	return nil
}
func (c *cachedLister) ListSnapshots(context.Context, *driver.ListSnapshotsRequest) ([]driver.Snapshot, error) {
	return c.cache, nil
}

func TestTheLibraryDoesNotModifyTheBackendsSlices(t *testing.T) {
	now := time.Now()
	backend := &cachedLister{cache: []driver.Snapshot{
		{ID: "s3", SourceVolumeID: "vb", CreationTime: now},
		{ID: "s1", SourceVolumeID: "va", CreationTime: now},
		{ID: "s2", SourceVolumeID: "vb", CreationTime: now},
	}}
	before := slices.Clone(backend.cache)
	p := start(t, plugin.Config{Name: "cache.example.com", VendorVersion: "1", Controller: backend})
	for range 2 {
		resp, err := p.controller.ListSnapshots(context.Background(), &csi.ListSnapshotsRequest{SourceVolumeId: "va"})
		if err != nil || len(resp.GetEntries()) != 1 {
			t.Fatalf("ListSnapshots = %v, %v", resp, err)
		}
	}
	if !slices.EqualFunc(before, backend.cache, func(a, b driver.Snapshot) bool { return a.ID == b.ID && a.SourceVolumeID == b.SourceVolumeID }) {
		t.Fatalf("the backend's slice changed: %v -> %v", before, backend.cache)
	}
}

// emptyIDLister lists a volume without an ID: a backend bug the library must report, not page
// over forever.
type emptyIDLister struct{ minimal }

func (emptyIDLister) ListVolumes(context.Context, *driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	return []driver.VolumeEntry{{Volume: driver.Volume{ID: "a"}}, {}}, nil
}

func TestEmptyIDFromAFullListerIsAPluginBug(t *testing.T) {
	p := start(t, plugin.Config{Name: "empty.example.com", VendorVersion: "1", Controller: emptyIDLister{}})
	_, err := p.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: 1})
	if status.Code(err) != codes.Internal {
		t.Fatalf("listing with an empty ID: %v, want INTERNAL (plugin bug)", err)
	}
}
