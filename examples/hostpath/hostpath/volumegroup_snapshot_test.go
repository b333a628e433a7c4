package hostpath

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
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

// TestGroupSnapshotAcceptsKubernetesE2EDeletionPolicy sends what the Kubernetes storage e2e suite
// (k8s.io/kubernetes v1.36.1) makes csi-snapshotter send: the VolumeGroupSnapshotClass parameters
// {"deletionPolicy": <the test pattern's policy>}, plus --extra-create-metadata's keys. The key is
// accepted with the class field's two values only (see checkGroupSnapshotParameters), and plain
// snapshots, whose classes the suite leaves without parameters, stay strict.
func TestGroupSnapshotAcceptsKubernetesE2EDeletionPolicy(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, mountCap("")).GetVolumeId()
	snapshotterMetadata := map[string]string{
		"csi.storage.k8s.io/volumegroupsnapshot/name":        "vgs-1",
		"csi.storage.k8s.io/volumegroupsnapshot/namespace":   "e2e-volumegroupsnapshottable-1234",
		"csi.storage.k8s.io/volumegroupsnapshotcontent/name": "groupsnapcontent-1",
	}
	for _, tc := range []struct {
		name   string
		policy string
		want   codes.Code
	}{
		{"the Delete pattern", "Delete", codes.OK},
		{"the Retain pattern", "Retain", codes.OK},
		{"a value the class field cannot hold", "Keep", codes.InvalidArgument},
		{"the field's value in the wrong case", "delete", codes.InvalidArgument},
		{"an empty value", "", codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := maps.Clone(snapshotterMetadata)
			params["deletionPolicy"] = tc.policy
			resp, err := e.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{
				Name: "groupsnapshot-" + tc.name, SourceVolumeIds: []string{a, b}, Parameters: params})
			wantCode(t, "CreateVolumeGroupSnapshot", err, tc.want)
			if err != nil {
				if !strings.Contains(status.Convert(err).Message(), "deletionPolicy") {
					t.Errorf("refusal %q does not name the parameter", status.Convert(err).Message())
				}
				return
			}
			if n := len(resp.GetGroupSnapshot().GetSnapshots()); n != 2 {
				t.Errorf("%d member snapshots, want 2", n)
			}
		})
	}
	_, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "plain", SourceVolumeId: a,
		Parameters: map[string]string{"deletionPolicy": "Delete"}})
	wantCode(t, "CreateSnapshot with deletionPolicy (the suite never sends it there)", err, codes.InvalidArgument)
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

// FuzzCheckGroupSnapshotParameters: a parameter is accepted exactly when it is the driver's own
// key, a csi.storage.k8s.io/ key of the CO, or the e2e suite's deletionPolicy with one of the
// class field's values; every refusal is INVALID_ARGUMENT naming the key.
func FuzzCheckGroupSnapshotParameters(f *testing.F) {
	for _, seed := range [][2]string{
		{"deletionPolicy", "Delete"}, {"deletionPolicy", "Retain"}, {"deletionPolicy", "delete"},
		{"DeletionPolicy", "Delete"}, {ParamVolumeGroup, "g"}, {"csi.storage.k8s.io/volumegroupsnapshot/name", "x"},
		{"consistency", "crash"}, {"", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		err := checkGroupSnapshotParameters(map[string]string{key: value})
		accepted := key == ParamVolumeGroup || strings.HasPrefix(key, "csi.storage.k8s.io/") ||
			(key == "deletionPolicy" && (value == "Delete" || value == "Retain"))
		if (err == nil) != accepted {
			t.Fatalf("checkGroupSnapshotParameters({%q: %q}) = %v, want accepted=%v", key, value, err, accepted)
		}
		if err != nil && (!errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), strconv.Quote(key))) {
			t.Fatalf("refusal %v: want INVALID_ARGUMENT naming %q", err, key)
		}
	})
}
