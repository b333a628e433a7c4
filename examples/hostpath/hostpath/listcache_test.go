package hostpath

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver"
)

// listed pages through ListVolumes (two entries a page, so the cache is used across pages) and
// returns the entries by volume ID.
func listed(t *testing.T, e *env) map[string]*csi.ListVolumesResponse_Entry {
	t.Helper()
	out := map[string]*csi.ListVolumesResponse_Entry{}
	token := ""
	for {
		resp, err := e.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: 2, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range resp.GetEntries() {
			if _, dup := out[en.GetVolume().GetVolumeId()]; dup {
				t.Fatalf("volume %s listed twice", en.GetVolume().GetVolumeId())
			}
			out[en.GetVolume().GetVolumeId()] = en
		}
		if token = resp.GetNextToken(); token == "" {
			return out
		}
	}
}

// TestListingSeesEveryChange: the listing cache never answers with an entry older than the
// record: each change to a volume shows in the next listing, and deleted volumes leave the cache
// after the passes that no longer see them.
func TestListingSeesEveryChange(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		ids = append(ids, e.create(t, name, 1<<20, mountCap("")).GetVolumeId())
	}
	listed(t, e) // warm the cache
	changes := []struct {
		name  string
		do    func(t *testing.T)
		check func(t *testing.T, got map[string]*csi.ListVolumesResponse_Entry)
	}{
		{"published", func(t *testing.T) {
			_, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: ids[0], NodeId: "node-1", VolumeCapability: mountCap("")})
			must(t, err)
		}, func(t *testing.T, got map[string]*csi.ListVolumesResponse_Entry) {
			if nodes := got[ids[0]].GetStatus().GetPublishedNodeIds(); !slices.Equal(nodes, []string{"node-1"}) {
				t.Fatalf("published nodes %v, want [node-1]", nodes)
			}
		}},
		{"unpublished", func(t *testing.T) {
			_, err := e.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: ids[0], NodeId: "node-1"})
			must(t, err)
		}, func(t *testing.T, got map[string]*csi.ListVolumesResponse_Entry) {
			if nodes := got[ids[0]].GetStatus().GetPublishedNodeIds(); len(nodes) != 0 {
				t.Fatalf("published nodes %v after unpublish, want none", nodes)
			}
		}},
		{"expanded", func(t *testing.T) {
			_, err := e.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: ids[1], CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
			must(t, err)
		}, func(t *testing.T, got map[string]*csi.ListVolumesResponse_Entry) {
			if c := got[ids[1]].GetVolume().GetCapacityBytes(); c != 2<<20 {
				t.Fatalf("capacity %d after expansion, want %d", c, 2<<20)
			}
		}},
		{"deleted", func(t *testing.T) {
			_, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[2]})
			must(t, err)
		}, func(t *testing.T, got map[string]*csi.ListVolumesResponse_Entry) {
			if _, ok := got[ids[2]]; ok || len(got) != len(ids)-1 {
				t.Fatalf("listed %d volumes, %s among them: %v; want the deleted one gone", len(got), ids[2], ok)
			}
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			c.do(t)
			c.check(t, listed(t, e))
		})
	}
	// Two more full passes: the deleted volume's entry, used by neither, is gone.
	listed(t, e)
	listed(t, e)
	if n := e.plugin.Controller.listed.len(); n != len(ids)-1 {
		t.Fatalf("the listing cache holds %d entries, want %d (the live volumes)", n, len(ids)-1)
	}
}

// TestListCacheGenerations: an entry is dropped at the end of the second pass in a row that did
// not use it, and an entry is only returned for the record bytes it was decoded from.
func TestListCacheGenerations(t *testing.T) {
	tests := []struct {
		name string
		// uses[i] says whether the i-th pass after the one that cached the entry reads it.
		uses []bool
		want bool
	}{
		{"used every pass", []bool{true, true, true}, true},
		{"unused for one pass", []bool{false}, true},
		{"unused for two passes", []bool{false, false}, false},
		{"used, then unused for two", []bool{true, false, false}, false},
		{"unused, used, unused", []bool{false, true, false}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := newListCache()
			raw := []byte(`{"id":"vol-1"}`)
			sum := lc.sum(raw)
			lc.put(sum, &driver.VolumeEntry{Volume: driver.Volume{ID: "vol-1"}})
			lc.endOfPass()
			for _, use := range tt.uses {
				if use && lc.get([]byte("vol-1"), sum) == nil {
					t.Fatal("entry gone while still in use")
				}
				lc.endOfPass()
			}
			if got := lc.get([]byte("vol-1"), sum) != nil; got != tt.want {
				t.Fatalf("entry kept %v, want %v", got, tt.want)
			}
			if lc.get([]byte("vol-1"), lc.sum([]byte(`{"id":"vol-1","size":2}`))) != nil {
				t.Fatal("an entry was returned for other record bytes")
			}
		})
	}
}
