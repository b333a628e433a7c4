package hostpath

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csikit/csikit/driver/volumegroup"
)

// TestGroupSnapshotOfVolumeGroup: CreateVolumeGroupSnapshot with ParamVolumeGroup snapshots a
// volume group only when source_volume_ids are exactly its members, over the socket.
func TestGroupSnapshotOfVolumeGroup(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, blockCap()).GetVolumeId()
	outside := e.create(t, "outside", 1<<20, mountCap("")).GetVolumeId()
	e.setMembers(t, g, a, b)

	for _, tc := range []struct {
		name    string
		sources []string
		params  map[string]string
		want    codes.Code
	}{
		{"all the members, the group named by ID, are snapshotted", []string{a, b}, map[string]string{ParamVolumeGroup: g}, codes.OK},
		{"all the members, the group named by name, are snapshotted", []string{b, a}, map[string]string{ParamVolumeGroup: "g"}, codes.OK},
		{"a part of the group is refused", []string{a}, map[string]string{ParamVolumeGroup: g}, codes.InvalidArgument},
		{"the group plus a volume outside it is refused", []string{a, b, outside}, map[string]string{ParamVolumeGroup: g}, codes.InvalidArgument},
		{"a group that does not exist is refused", []string{a, b}, map[string]string{ParamVolumeGroup: "no-such-group"}, codes.InvalidArgument},
		{"an unknown parameter is refused", []string{a, b}, map[string]string{"consistency": "crash"}, codes.InvalidArgument},
		{"volumes without the parameter are snapshotted as before", []string{a, outside}, nil, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{
				Name: "snap-" + tc.name, SourceVolumeIds: tc.sources, Parameters: tc.params})
			wantCode(t, "CreateVolumeGroupSnapshot", err, tc.want)
			if err != nil {
				return
			}
			var sources []string
			for _, s := range resp.GetGroupSnapshot().GetSnapshots() {
				sources = append(sources, s.GetSourceVolumeId())
			}
			if !slices.Equal(sorted(sources), sorted(tc.sources)) {
				t.Errorf("member snapshots of %v, want %v", sources, tc.sources)
			}
		})
	}
	// Refused snapshots left nothing behind: three group snapshots of two, no stray backing.
	if got := len(backings(t, e.plugin.Controller.l.snapshotsDir())); got != 6 {
		t.Errorf("%d snapshot backings, want 6", got)
	}
}

// TestGroupSnapshotAbortedWhenTheGroupChanges: a membership change between the check and the
// commit of a volume-group snapshot aborts it, leaving no snapshot behind, and the CO's retry
// (with the new members) succeeds.
func TestGroupSnapshotAbortedWhenTheGroupChanges(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, mountCap("")).GetVolumeId()
	e.setMembers(t, g, a, b)
	failpoint = func(name string) error {
		if name == "create-group-snapshot:after-backing" {
			// Straight to the backend: the library's locks do not hold the volume group for a
			// group snapshot, so the driver must notice this itself.
			_, err := e.plugin.Controller.ModifyVolumeGroupMembership(ctx, &volumegroup.ModifyVolumeGroupMembershipRequest{GroupID: g, VolumeIDs: []string{a}})
			return err
		}
		return nil
	}
	t.Cleanup(func() { failpoint = nil })
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: "s", SourceVolumeIds: []string{a, b}, Parameters: map[string]string{ParamVolumeGroup: g}}
	_, err := e.group.CreateVolumeGroupSnapshot(ctx, req)
	wantCode(t, "CreateVolumeGroupSnapshot while the group changes", err, codes.Aborted)
	failpoint = nil
	if got := backings(t, e.plugin.Controller.l.snapshotsDir()); len(got) != 0 {
		t.Fatalf("an aborted group snapshot left backings %v", got)
	}
	req.Name, req.SourceVolumeIds = "s2", []string{a}
	if _, err := e.group.CreateVolumeGroupSnapshot(ctx, req); err != nil {
		t.Fatalf("CreateVolumeGroupSnapshot of the new membership: %v", err)
	}
}

// TestJoinParameterKeys: the operator's key volume_group joins like the driver's own key, and the
// two may not disagree.
func TestJoinParameterKeys(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	e.createGroup(t, "h")
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   codes.Code
		member bool
	}{
		{"the operator's key joins", map[string]string{ParamVolumeGroupOperator: "g"}, codes.OK, true},
		{"both keys naming one group join", map[string]string{ParamVolumeGroup: "g", ParamVolumeGroupOperator: "g"}, codes.OK, true},
		{"both keys naming different groups are refused", map[string]string{ParamVolumeGroup: "g", ParamVolumeGroupOperator: "h"}, codes.InvalidArgument, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: tc.name, VolumeCapabilities: []*csi.VolumeCapability{mountCap("")}, Parameters: tc.params})
			wantCode(t, "CreateVolume", err, tc.want)
			if got := slices.Contains(e.members(t, g), resp.GetVolume().GetVolumeId()); err == nil && got != tc.member {
				t.Errorf("member of g: %v, want %v", got, tc.member)
			}
		})
	}
}
