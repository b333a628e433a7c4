package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// groupPlugin serves memdriver with volume groups and returns its CSI and volume-group clients.
func groupPlugin(t *testing.T, opts memdriver.Options, logger *zap.Logger) (*testPlugin, vgpb.ControllerClient) {
	t.Helper()
	mem := memdriver.New(opts)
	cfg := fullConfig(mem)
	cfg.VolumeGroups = &plugin.VolumeGroupConfig{Controller: mem}
	cfg.Logger = logger
	p := start(t, cfg)
	conn, err := grpc.NewClient("unix://"+p.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return p, vgpb.NewControllerClient(conn)
}

func members(vg *vgpb.VolumeGroup) string {
	var ids []string
	for _, v := range vg.GetVolumes() {
		ids = append(ids, v.GetVolumeId())
	}
	return strings.Join(ids, ",")
}

// TestVolumeGroupLifecycle walks the volume-group spec's semantics over the socket: idempotent create by name,
// membership set to exactly the list, a member cannot be deleted alone, deleting the group
// deletes its volumes, and every row of the error table.
func TestVolumeGroupLifecycle(t *testing.T) {
	p, vg := groupPlugin(t, memdriver.Options{MaxGroupMembers: 2}, nil)
	ctx := context.Background()
	v1, v2, v3 := createVolume(t, p, "pvc-1").GetVolumeId(), createVolume(t, p, "pvc-2").GetVolumeId(), createVolume(t, p, "pvc-3").GetVolumeId()

	created, err := vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{Name: "g", Parameters: map[string]string{"a": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetVolumeGroup().GetVolumeGroupId()
	again, err := vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{Name: "g", Parameters: map[string]string{"a": "1"}})
	if err != nil || again.GetVolumeGroup().GetVolumeGroupId() != id {
		t.Fatalf("repeated create: %v, %v; want the same group", again, err)
	}
	steps := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"create with other parameters is ALREADY_EXISTS", func() error {
			_, err := vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{Name: "g", Parameters: map[string]string{"a": "2"}})
			return err
		}, codes.AlreadyExists},
		{"create without a name is INVALID_ARGUMENT", func() error {
			_, err := vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{})
			return err
		}, codes.InvalidArgument},
		{"modify of a missing group is NOT_FOUND", func() error {
			_, err := vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: "vg-none", VolumeIds: []string{v1}})
			return err
		}, codes.NotFound},
		{"modify with a missing volume is NOT_FOUND", func() error {
			_, err := vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, VolumeIds: []string{"vol-none"}})
			return err
		}, codes.NotFound},
		{"modify past the member limit is RESOURCE_EXHAUSTED", func() error {
			_, err := vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, VolumeIds: []string{v1, v2, v3}})
			return err
		}, codes.ResourceExhausted},
		{"modify listing a volume twice is INVALID_ARGUMENT", func() error {
			_, err := vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, VolumeIds: []string{v1, v1}})
			return err
		}, codes.InvalidArgument},
		{"get of a missing group is NOT_FOUND", func() error {
			_, err := vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: "vg-none"})
			return err
		}, codes.NotFound},
		{"get without an ID is INVALID_ARGUMENT", func() error {
			_, err := vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{})
			return err
		}, codes.InvalidArgument},
		{"delete of a missing group is OK", func() error {
			_, err := vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: "vg-none"})
			return err
		}, codes.OK},
		{"a negative max_entries is INVALID_ARGUMENT", func() error {
			_, err := vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{MaxEntries: -1})
			return err
		}, codes.InvalidArgument},
		{"a bad starting token is ABORTED", func() error {
			_, err := vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{StartingToken: "not-ours"})
			return err
		}, codes.Aborted},
	}
	for _, st := range steps {
		if got := status.Code(st.call()); got != st.want {
			t.Errorf("%s: got %v", st.name, got)
		}
	}

	mod, err := vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, VolumeIds: []string{v1, v2}})
	if err != nil || members(mod.GetVolumeGroup()) != v1+","+v2 {
		t.Fatalf("modify to [v1 v2]: %v, %v", members(mod.GetVolumeGroup()), err)
	}
	mod, err = vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, VolumeIds: []string{v2}})
	if err != nil || members(mod.GetVolumeGroup()) != v2 {
		t.Fatalf("modify to [v2]: %v, %v; v1 must leave", members(mod.GetVolumeGroup()), err)
	}
	if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v2}); status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), id) {
		t.Fatalf("DeleteVolume of a member: %v, want FAILED_PRECONDITION naming the group", err)
	}
	if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v1}); err != nil {
		t.Fatalf("DeleteVolume of a volume that left the group: %v", err)
	}
	if _, err := vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.controller.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: v2}); status.Code(err) != codes.NotFound {
		t.Fatalf("a member after its group was deleted: %v, want NOT_FOUND (deleted with the group)", err)
	}
	info, err := p.identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.GetManifest()[plugin.ManifestVolumeGroupRPCs]; got != "ControllerGetVolumeGroup,CreateVolumeGroup,DeleteVolumeGroup,ListVolumeGroups,ModifyVolumeGroupMembership" {
		t.Errorf("manifest lists %q", got)
	}
}

// TestListVolumeGroupsPagesEveryGroupOnce: 1,000 groups listed 10 at a time come back each
// exactly once.
func TestListVolumeGroupsPagesEveryGroupOnce(t *testing.T) {
	_, vg := groupPlugin(t, memdriver.Options{}, nil)
	ctx := context.Background()
	const n = 1000
	for i := range n {
		if _, err := vg.CreateVolumeGroup(ctx, &vgpb.CreateVolumeGroupRequest{Name: fmt.Sprintf("g-%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	token, pages := "", 0
	for {
		resp, err := vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{MaxEntries: 10, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(resp.GetEntries()) > 10 {
			t.Fatalf("page of %d entries, max 10", len(resp.GetEntries()))
		}
		for _, e := range resp.GetEntries() {
			id := e.GetVolumeGroup().GetVolumeGroupId()
			if seen[id] {
				t.Fatalf("group %s listed twice", id)
			}
			seen[id] = true
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	if len(seen) != n || pages != n/10 {
		t.Fatalf("%d groups in %d pages, want %d in %d", len(seen), pages, n, n/10)
	}
}

// TestVolumeGroupSecretsNeverLogged: vg_csi_secret fields are redacted by the same code as CSI's.
func TestVolumeGroupSecretsNeverLogged(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	_, vg := groupPlugin(t, memdriver.Options{}, zap.New(core))
	const secret = "vg-s3cr3t-canary"
	if _, err := vg.CreateVolumeGroup(context.Background(), &vgpb.CreateVolumeGroupRequest{Name: "g", Secrets: map[string]string{"password": secret}}); err != nil {
		t.Fatal(err)
	}
	all := logs.All()
	if len(all) == 0 {
		t.Fatal("nothing logged at debug")
	}
	for _, e := range all {
		if strings.Contains(fmt.Sprint(e.Message, e.ContextMap()), secret) {
			t.Fatalf("log line leaks the secret: %s %v", e.Message, e.ContextMap())
		}
	}
}
