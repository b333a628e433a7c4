package hostpath

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// newGroupEnv serves a plugin whose volume groups hold at most limit volumes.
func newGroupEnv(t *testing.T, limit int) *env {
	t.Helper()
	dir := t.TempDir()
	return newEnvAt(t, dir, Config{
		StateDir: filepath.Join(dir, "state"), NodeID: "node-1", CapacityBytes: 64 << 30,
		MaxVolumesPerNode: 8, MaxGroupMembers: limit,
	})
}

func (e *env) createGroup(t *testing.T, name string) string {
	t.Helper()
	resp, err := e.vg.CreateVolumeGroup(context.Background(), &vgpb.CreateVolumeGroupRequest{Name: name})
	if err != nil {
		t.Fatalf("CreateVolumeGroup(%s): %v", name, err)
	}
	return resp.GetVolumeGroup().GetVolumeGroupId()
}

func (e *env) setMembers(t *testing.T, group string, ids ...string) {
	t.Helper()
	resp, err := e.vg.ModifyVolumeGroupMembership(context.Background(), &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: group, VolumeIds: ids})
	if err != nil {
		t.Fatalf("ModifyVolumeGroupMembership(%s, %v): %v", group, ids, err)
	}
	if got := vgMembers(resp.GetVolumeGroup()); !slices.Equal(got, sorted(ids)) {
		t.Fatalf("ModifyVolumeGroupMembership answered members %v, want %v", got, sorted(ids))
	}
}

// members asks ControllerGetVolumeGroup for the group's volume IDs, sorted.
func (e *env) members(t *testing.T, group string) []string {
	t.Helper()
	resp, err := e.vg.ControllerGetVolumeGroup(context.Background(), &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: group})
	if err != nil {
		t.Fatalf("ControllerGetVolumeGroup(%s): %v", group, err)
	}
	return vgMembers(resp.GetVolumeGroup())
}

func vgMembers(g *vgpb.VolumeGroup) []string {
	out := []string{}
	for _, v := range g.GetVolumes() {
		out = append(out, v.GetVolumeId())
	}
	slices.Sort(out)
	return out
}

func sorted(ids []string) []string {
	out := append([]string{}, ids...)
	slices.Sort(out)
	return out
}

func TestVolumeGroupLifecycle(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g1")
	if again := e.createGroup(t, "g1"); again != g {
		t.Fatalf("a repeated create gave group %s, want %s", again, g)
	}
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, blockCap()).GetVolumeId()
	c := e.create(t, "c", 1<<20, mountCap("")).GetVolumeId()
	outside := e.create(t, "outside", 1<<20, mountCap("")).GetVolumeId()

	for _, step := range [][]string{{a, b}, {b, c}, {a, b, c}, {}, {c}, {a, b, c}} {
		e.setMembers(t, g, step...)
		if got := e.members(t, g); !slices.Equal(got, sorted(step)) {
			t.Fatalf("after setting %v the group has %v", step, got)
		}
	}
	list, err := e.vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetEntries()); n != 1 || list.GetEntries()[0].GetVolumeGroup().GetVolumeGroupId() != g {
		t.Fatalf("ListVolumeGroups: %v", list)
	}

	// A member is deleted with its group, never alone.
	_, err = e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: a})
	wantCode(t, "DeleteVolume of a member", err, codes.FailedPrecondition)
	if !strings.Contains(err.Error(), g) {
		t.Fatalf("DeleteVolume of a member does not name the group %s: %v", g, err)
	}

	if _, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: g}); err != nil {
		t.Fatal(err)
	}
	if got := backings(t, e.plugin.Controller.l.volumesDir()); !slices.Equal(got, []string{outside}) {
		t.Fatalf("backings after the group delete: %v, want only %s", got, outside)
	}
	for _, id := range []string{a, b, c} {
		_, err := e.controller.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: id})
		wantCode(t, "ControllerGetVolume of a deleted member", err, codes.NotFound)
	}
	_, err = e.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: g})
	wantCode(t, "ControllerGetVolumeGroup after delete", err, codes.NotFound)
	if _, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: g}); err != nil {
		t.Fatalf("a repeated delete: %v", err)
	}
	// The volume names and the group name are free again.
	e.create(t, "a", 1<<20, mountCap(""))
	if again := e.createGroup(t, "g1"); again == g {
		t.Fatalf("the deleted group %s came back", g)
	}
}

func TestVolumeGroupErrors(t *testing.T) {
	e := newGroupEnv(t, 2)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	other := e.createGroup(t, "other")
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, mountCap("")).GetVolumeId()
	c := e.create(t, "c", 1<<20, mountCap("")).GetVolumeId()
	taken := e.create(t, "taken", 1<<20, mountCap("")).GetVolumeId()
	published := e.create(t, "published", 1<<20, mountCap("")).GetVolumeId()
	e.setMembers(t, g, a)
	e.setMembers(t, other, taken, published)
	if _, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: published, NodeId: "node-1", VolumeCapability: mountCap("")}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"create with a parameter", func() error {
			_, err := e.vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{Name: "p", Parameters: map[string]string{"replication": "sync"}})
			return err
		}, codes.InvalidArgument},
		{"create an existing name with other parameters", func() error {
			_, err := e.vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{Name: "g", Parameters: map[string]string{"replication": "sync"}})
			return err
		}, codes.AlreadyExists},
		{"modify a missing group", func() error {
			_, err := e.vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: "vg-00000000000000000000000000000000", VolumeIds: []string{b}})
			return err
		}, codes.NotFound},
		{"modify with a missing volume", func() error {
			_, err := e.vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: g, VolumeIds: []string{b, "vol-00000000000000000000000000000000"}})
			return err
		}, codes.NotFound},
		{"modify with a volume of another group", func() error {
			_, err := e.vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: g, VolumeIds: []string{b, taken}})
			return err
		}, codes.InvalidArgument},
		{"modify beyond the member limit", func() error {
			_, err := e.vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: g, VolumeIds: []string{a, b, c}})
			return err
		}, codes.ResourceExhausted},
		{"get a missing group", func() error {
			_, err := e.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: "vg-00000000000000000000000000000000"})
			return err
		}, codes.NotFound},
		{"delete a missing group", func() error {
			_, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: "vg-00000000000000000000000000000000"})
			return err
		}, codes.OK},
		{"delete a group with a published member", func() error {
			_, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: other})
			return err
		}, codes.FailedPrecondition},
		{"delete a member alone", func() error {
			_, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: taken})
			return err
		}, codes.FailedPrecondition},
		{"create a volume in a missing group", func() error {
			_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "joiner", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
				Parameters: map[string]string{ParamVolumeGroup: "nope"}})
			return err
		}, codes.InvalidArgument},
		{"create a volume in a full group", func() error {
			_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "joiner", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
				Parameters: map[string]string{ParamVolumeGroup: "other"}})
			return err
		}, codes.ResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.name, tc.call(), tc.want)
			// A refused call changes nothing.
			if got := e.members(t, g); !slices.Equal(got, []string{a}) {
				t.Errorf("group g has %v, want [%s]", got, a)
			}
			if got, want := e.members(t, other), sorted([]string{taken, published}); !slices.Equal(got, want) {
				t.Errorf("group other has %v, want %v", got, want)
			}
			if got := len(backings(t, e.plugin.Controller.l.volumesDir())); got != 5 {
				t.Errorf("%d volume backings, want 5", got)
			}
		})
	}
}

func TestCreateVolumeJoinsVolumeGroup(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	var ids []string
	for _, ref := range []string{"g", g} { // by name and by ID
		resp, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "by-" + ref, VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
			Parameters: map[string]string{ParamVolumeGroup: ref}})
		if err != nil {
			t.Fatalf("CreateVolume in group %s: %v", ref, err)
		}
		ids = append(ids, resp.GetVolume().GetVolumeId())
	}
	if got := e.members(t, g); !slices.Equal(got, sorted(ids)) {
		t.Fatalf("group has %v, want %v", got, sorted(ids))
	}
	// The joined volumes are members like any other: deleted with the group only.
	_, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[0]})
	wantCode(t, "DeleteVolume of a joined member", err, codes.FailedPrecondition)
	e.setMembers(t, g)
	if _, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[0]}); err != nil {
		t.Fatalf("DeleteVolume after leaving the group: %v", err)
	}
}

func TestVolumeGroupsSurviveRestart(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, blockCap()).GetVolumeId()
	e.setMembers(t, g, a, b)

	e.restart()

	if got, want := e.members(t, g), sorted([]string{a, b}); !slices.Equal(got, want) {
		t.Fatalf("after a restart the group has %v, want %v", got, want)
	}
	if again := e.createGroup(t, "g"); again != g {
		t.Fatalf("after a restart the name gives group %s, want %s", again, g)
	}
	_, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: a})
	wantCode(t, "DeleteVolume of a member after restart", err, codes.FailedPrecondition)
	e.setMembers(t, g, b)
	if _, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: g}); err != nil {
		t.Fatal(err)
	}
	if got := backings(t, e.plugin.Controller.l.volumesDir()); !slices.Equal(got, []string{a}) {
		t.Fatalf("backings after the group delete: %v, want only %s", got, a)
	}
}

// A group delete cut short after removing the backings is finished by the reconciliation and the
// CO's retry: no volume record or membership outlives its backing.
func TestVolumeGroupDeleteCutShort(t *testing.T) {
	e := newGroupEnv(t, 0)
	ctx := context.Background()
	g := e.createGroup(t, "g")
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	e.setMembers(t, g, a)
	withFailpoint(t, "delete-volume-group:after-backings")
	if _, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: g}); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	failpoint = nil
	// Until the retry, no member may be published: the delete has begun.
	_, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: a, NodeId: "node-1", VolumeCapability: mountCap("")})
	wantCode(t, "ControllerPublishVolume of a member being deleted", err, codes.FailedPrecondition)

	e.restart()

	if got := e.members(t, g); len(got) != 0 {
		t.Fatalf("after a restart the group still has %v, whose backings are gone", got)
	}
	if _, err := e.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: g}); err != nil {
		t.Fatalf("retried delete: %v", err)
	}
	_, err = e.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: g})
	wantCode(t, "ControllerGetVolumeGroup after delete", err, codes.NotFound)
	e.create(t, "a", 1<<20, mountCap("")) // the name is free
}
