package hostpath

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	bolt "go.etcd.io/bbolt"

	"github.com/csikit/csikit/driver/volumegroup"
)

// seedVolumes writes n volume records in one transaction, without backings: enough for the
// membership code, which reads records and never backings, and far faster than n CreateVolume
// calls with a durable commit each.
func seedVolumes(tb testing.TB, c *Controller, prefix string, n int) []string {
	tb.Helper()
	ids := make([]string, n)
	err := c.st.update(func(tx *bolt.Tx) error {
		for i := range ids {
			rec := &volumeRecord{ID: newID("vol"), Name: fmt.Sprintf("%s-%d", prefix, i), Kind: kindDir, Size: 1 << 20, Created: time.Now().UTC()}
			if err := putJSON(tx, bVolumes, rec.ID, rec); err != nil {
				return err
			}
			if err := putString(tx, bVolumeNames, rec.Name, rec.ID); err != nil {
				return err
			}
			ids[i] = rec.ID
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// BenchmarkModifyVolumeGroupMembership changes one member of a group per operation (one volume
// leaves, another joins: the CO's whole list is sent each time, as the operator sends it) with
// 100 or 10,000 volumes outside the group. The time per operation must not grow with the
// volumes outside: a membership change reads and writes the volumes it names and the group's
// members, never the whole store. It does grow with the group, whose whole list is read and
// answered.
//
// The durable cases commit as the driver does, with an fsync, which dominates and is the same
// for every store size; the cases without fsync show the work that is left.
func BenchmarkModifyVolumeGroupMembership(b *testing.B) {
	for _, bc := range []struct {
		members, others int
		durable         bool
	}{
		{10, 100, true},
		{100, 100, true},
		{100, 10_000, true},
		{10, 100, false},
		{100, 100, false},
		{100, 10_000, false},
	} {
		b.Run(fmt.Sprintf("fsync=%v/members=%d/others=%d", bc.durable, bc.members, bc.others), func(b *testing.B) {
			dir := b.TempDir()
			c, err := NewController(Config{StateDir: filepath.Join(dir, "state"), NodeID: "node-1"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			c.st.db.NoSync = !bc.durable
			ctx := context.Background()
			seedVolumes(b, c, "other", bc.others)
			vols := seedVolumes(b, c, "member", bc.members+1)
			g, err := c.CreateVolumeGroup(ctx, &volumegroup.CreateVolumeGroupRequest{Name: "g", Raw: &vgpb.CreateVolumeGroupRequest{Name: "g"}})
			if err != nil {
				b.Fatal(err)
			}
			// Two memberships that differ in one volume: the last member swaps with the spare.
			lists := [2][]string{vols[:bc.members], append(append([]string{}, vols[:bc.members-1]...), vols[bc.members])}
			for _, l := range lists {
				if _, err := c.ModifyVolumeGroupMembership(ctx, &volumegroup.ModifyVolumeGroupMembershipRequest{GroupID: g.ID, VolumeIDs: l}); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				i++
				if _, err := c.ModifyVolumeGroupMembership(ctx, &volumegroup.ModifyVolumeGroupMembershipRequest{GroupID: g.ID, VolumeIDs: lists[i%2]}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestListVolumeGroupsPagesEveryGroupOnce: 1,000 groups listed 10 at a time over the socket come
// back each exactly once, through the library's tokens and the cursor listing of the store.
func TestListVolumeGroupsPagesEveryGroupOnce(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	const groups = 1000
	want := map[string]bool{}
	// One transaction instead of 1,000 durable creates: the listing, not the create, is tested.
	err := e.plugin.Controller.st.update(func(tx *bolt.Tx) error {
		for i := range groups {
			g := &volumeGroupRecord{ID: newID("vg"), Name: fmt.Sprintf("g-%04d", i), Created: time.Now().UTC()}
			if err := putJSON(tx, bVolumeGroups, g.ID, g); err != nil {
				return err
			}
			if err := putString(tx, bVolumeGroupNames, g.Name, g.ID); err != nil {
				return err
			}
			want[g.ID] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	token := ""
	for page := 0; ; page++ {
		if page > groups {
			t.Fatalf("still paging after %d pages", page)
		}
		resp, err := e.vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{MaxEntries: 10, StartingToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if n := len(resp.GetEntries()); n > 10 {
			t.Fatalf("page %d has %d entries, more than max_entries 10", page, n)
		}
		for _, en := range resp.GetEntries() {
			seen[en.GetVolumeGroup().GetVolumeGroupId()]++
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	for id, n := range seen {
		if n != 1 || !want[id] {
			t.Errorf("group %s listed %d times (made by this test: %v)", id, n, want[id])
		}
	}
	if len(seen) != groups {
		t.Errorf("%d groups listed, want %d", len(seen), groups)
	}
}
