package vgsuite

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
	"github.com/csikit/csikit/driver/plugin"
)

// vgFixture is what a volume-group spec works with, beside the CSI fixture.
type vgFixture struct {
	*csisuite.Fixture
	vg   vgpb.ControllerClient
	rpcs map[string]bool
	opts Options
}

// setup points the group client at conn, takes the run's options, and reads which group RPCs
// the plugin serves. It skips the spec when the plugin serves none.
func (v *vgFixture) setup(conn grpc.ClientConnInterface, opts Options) {
	GinkgoHelper()
	v.vg = vgpb.NewControllerClient(conn)
	v.opts = opts
	info, err := v.Identity.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
	Expect(err).NotTo(HaveOccurred(), "GetPluginInfo")
	v.rpcs = map[string]bool{}
	for _, name := range strings.Split(info.GetManifest()[plugin.ManifestVolumeGroupRPCs], ",") {
		if name = strings.TrimSpace(name); name != "" {
			v.rpcs[name] = true
		}
	}
	for _, name := range []string{"CreateVolumeGroup", "DeleteVolumeGroup", "ModifyVolumeGroupMembership"} {
		if !v.rpcs[name] {
			Skip(fmt.Sprintf("volumegroup.Controller not served: GetPluginInfo's manifest key %s does not list %s", plugin.ManifestVolumeGroupRPCs, name))
		}
	}
}

func (v *vgFixture) require(rpc string) {
	if !v.rpcs[rpc] {
		Skip(fmt.Sprintf("%s not served (not listed under the manifest key %s)", rpc, plugin.ManifestVolumeGroupRPCs))
	}
}

func (v *vgFixture) secrets() map[string]string { return maps.Clone(v.opts.Secrets) }

func (v *vgFixture) createReq(name string) *vgpb.CreateVolumeGroupRequest {
	return &vgpb.CreateVolumeGroupRequest{Name: sanity.UniqueString(name), Parameters: v.opts.Parameters, Secrets: v.secrets()}
}

// mustCreateGroup creates a group, and when the spec ends empties it (so the registered volumes
// are deleted as usual) and deletes it.
func (v *vgFixture) mustCreateGroup(name string) *vgpb.VolumeGroup {
	GinkgoHelper()
	resp, err := v.vg.CreateVolumeGroup(context.Background(), v.createReq(name))
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroup")
	g := resp.GetVolumeGroup()
	Expect(g.GetVolumeGroupId()).NotTo(BeEmpty(), "CreateVolumeGroup: volume_group_id")
	v.cleanupGroup(g.GetVolumeGroupId())
	return g
}

func (v *vgFixture) cleanupGroup(id string) {
	vg := v.vg
	v.OnEnd(func() {
		ctx := context.Background()
		_, _ = vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, Secrets: v.secrets()})
		_, _ = vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
	})
}

func (v *vgFixture) modifyReq(id string, members ...string) *vgpb.ModifyVolumeGroupMembershipRequest {
	return &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: id, VolumeIds: members, Secrets: v.secrets()}
}

// setMembers sets the membership and checks the answer lists exactly the members asked for.
func (v *vgFixture) setMembers(id string, members ...string) *vgpb.VolumeGroup {
	GinkgoHelper()
	resp, err := v.vg.ModifyVolumeGroupMembership(context.Background(), v.modifyReq(id, members...))
	Expect(err).NotTo(HaveOccurred(), "ModifyVolumeGroupMembership of %s to %v", id, members)
	g := resp.GetVolumeGroup()
	Expect(g.GetVolumeGroupId()).To(Equal(id), "ModifyVolumeGroupMembership answered another group")
	Expect(memberIDs(g)).To(Equal(sortedIDs(members)), "ModifyVolumeGroupMembership answered other members")
	return g
}

// expectMembers checks the membership through ControllerGetVolumeGroup, when it is served.
func (v *vgFixture) expectMembers(id string, want []string, what string) {
	GinkgoHelper()
	if !v.rpcs["ControllerGetVolumeGroup"] {
		return
	}
	resp, err := v.vg.ControllerGetVolumeGroup(context.Background(), &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
	Expect(err).NotTo(HaveOccurred(), "ControllerGetVolumeGroup %s", what)
	Expect(resp.GetVolumeGroup().GetVolumeGroupId()).To(Equal(id), "ControllerGetVolumeGroup answered another group")
	Expect(memberIDs(resp.GetVolumeGroup())).To(Equal(sortedIDs(want)), "members of %s %s", id, what)
}

func (v *vgFixture) volumes(prefix string, n int) []*csi.Volume {
	GinkgoHelper()
	out := make([]*csi.Volume, n)
	for i := range out {
		out[i] = v.MustCreateVolume(fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

func ids(vols ...*csi.Volume) []string {
	out := make([]string, len(vols))
	for i, vol := range vols {
		out[i] = vol.GetVolumeId()
	}
	return out
}

func memberIDs(g *vgpb.VolumeGroup) []string {
	out := []string{}
	for _, m := range g.GetVolumes() {
		out = append(out, m.GetVolumeId())
	}
	slices.Sort(out)
	return out
}

func sortedIDs(in []string) []string {
	out := append([]string{}, in...)
	slices.Sort(out)
	return out
}

// missingGroupID is a group ID no plugin has made.
func missingGroupID() string { return sanity.UniqueString("csikit-no-such-volume-group") }

func (v *vgFixture) listGroupIDs(max int32) func(string) ([]string, string, error) {
	return func(token string) ([]string, string, error) {
		resp, err := v.vg.ListVolumeGroups(context.Background(), &vgpb.ListVolumeGroupsRequest{MaxEntries: max, StartingToken: token, Secrets: v.secrets()})
		var out []string
		for _, e := range resp.GetEntries() {
			out = append(out, e.GetVolumeGroup().GetVolumeGroupId())
		}
		return out, resp.GetNextToken(), err
	}
}

// listAll follows ListVolumeGroups to the end.
func (v *vgFixture) listAll() []*vgpb.VolumeGroup {
	GinkgoHelper()
	var out []*vgpb.VolumeGroup
	token := ""
	for page := 0; page < 1000; page++ {
		resp, err := v.vg.ListVolumeGroups(context.Background(), &vgpb.ListVolumeGroupsRequest{StartingToken: token, Secrets: v.secrets()})
		Expect(err).NotTo(HaveOccurred(), "ListVolumeGroups")
		for _, e := range resp.GetEntries() {
			out = append(out, e.GetVolumeGroup())
		}
		if token = resp.GetNextToken(); token == "" {
			return out
		}
	}
	Fail("ListVolumeGroups still returns next_token after 1000 pages")
	return nil
}
