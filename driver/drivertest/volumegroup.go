package drivertest

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
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/driver/plugin"
)

// CheckVolumeGroups names csikit's specs for the volume-group service
// (volumegroup.Controller). They run when GetPluginInfo's manifest lists the served group RPCs
// under plugin.ManifestVolumeGroupRPCs, which every csikit plugin with Config.VolumeGroups does,
// and are skipped otherwise.
const CheckVolumeGroups Check = "volume-groups"

// VolumeGroupOptions say what the volume-group specs may expect of a driver beyond the
// volume-group spec. That spec leaves some error rows to the driver: which volumes are
// incompatible, whether there is a member limit, what puts a group in use. Each option turns on
// the spec for one such row. While the option is unset, the spec is skipped, naming the option.
type VolumeGroupOptions struct {
	// Parameters are the CreateVolumeGroup parameters (a VolumeGroupClass); nil means none.
	Parameters map[string]string
	// IncompatibleParameters are parameters a group of the same name must not be created with:
	// CreateVolumeGroup with them after Parameters answers ALREADY_EXISTS. nil means Parameters
	// plus a key of csikit's own.
	IncompatibleParameters map[string]string
	// Secrets are sent with every volume-group call (the VolumeGroupClass's secret). Values of
	// at least 8 bytes are also searched for in the plugin's logs at the end of the run.
	Secrets map[string]string
	// MaxMembers is the most volumes the driver lets one group hold. When set,
	// ModifyVolumeGroupMembership with one more must answer RESOURCE_EXHAUSTED and change
	// nothing. 0 skips that spec.
	MaxMembers int
	// ExclusiveMembership declares that a volume belongs to one group at most, so asking to add
	// a member of another group is the "volume incompatible" case: INVALID_ARGUMENT, nothing
	// changed.
	ExclusiveMembership bool
	// IncompatibleVolumeParameters, when set, are CreateVolume parameters giving a volume that
	// cannot join a group made with Parameters: adding it answers INVALID_ARGUMENT.
	IncompatibleVolumeParameters map[string]string
	// PublishedMemberInUse declares that a group with a member published by
	// ControllerPublishVolume is in use: DeleteVolumeGroup answers FAILED_PRECONDITION and
	// deletes nothing until the member is unpublished.
	PublishedMemberInUse bool
	// JoinParameter is the CreateVolume parameter, if the driver has one, whose value (a group
	// ID) makes the new volume a member of that group.
	JoinParameter string
	// SnapshotParameter is the CreateVolumeGroupSnapshot parameter, if the driver has one, whose
	// value (a group ID) asks for a snapshot of exactly that group's members: with the members
	// as source_volume_ids it succeeds, with fewer it answers INVALID_ARGUMENT.
	SnapshotParameter string
}

// The leaf texts of the volume-group specs.
const (
	itVGLifecycle    = "a volume group is created empty, read back, given exactly the listed members, emptied, listed, and deleted with its volumes"
	itVGIdempotent   = "a repeated CreateVolumeGroup or ModifyVolumeGroupMembership gets the same answer, other parameters under the same name are ALREADY_EXISTS, a repeated delete succeeds"
	itVGMissing      = "DeleteVolumeGroup of a missing group succeeds; ControllerGetVolumeGroup and ModifyVolumeGroupMembership of a missing group, or naming a missing volume, are NOT_FOUND and change nothing"
	itVGIncompatible = "ModifyVolumeGroupMembership adding an incompatible volume is INVALID_ARGUMENT and changes nothing"
	itVGLimit        = "ModifyVolumeGroupMembership past the member limit is RESOURCE_EXHAUSTED and changes nothing"
	itVGInUse        = "DeleteVolumeGroup of a group with a published member is FAILED_PRECONDITION and deletes nothing"
	itVGMemberDelete = "a member volume cannot be deleted alone (FAILED_PRECONDITION) until it leaves the group"
	itVGPages        = "ListVolumeGroups returns every group exactly once across pages of 1, 3 and 7 entries; an invalid starting_token is ABORTED"
	itVGConcurrent   = "concurrent ModifyVolumeGroupMembership calls on one group each succeed or are ABORTED, identical ones answer identically, and the group ends as one of them asked"
	itVGJoin         = "CreateVolume with the join parameter makes the volume a member of the group"
	itVGSnapshot     = "a group snapshot of a volume group's members is created through the snapshot parameter; a partial set of members is INVALID_ARGUMENT"

	itCanaryVolumeGroups = "no secret sent with any volume-group call appears in a response, an error or a log line"
)

// vgGroups is how many groups the pagination spec creates.
const vgGroups = 25

// volumeGroupRequestsWithSecrets lists every volume-group request type with a secrets field.
func volumeGroupRequestsWithSecrets() []string {
	var out []string
	msgs := vgpb.File_volumegroup_volumegroup_proto.Messages()
	for i := range msgs.Len() {
		md := msgs.Get(i)
		if strings.HasSuffix(string(md.Name()), "Request") && len(secretFieldsOf(md)) > 0 {
			out = append(out, string(md.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// vgFixture is what a volume-group spec works with, beside the CSI fixture.
type vgFixture struct {
	*fixture
	vg   vgpb.ControllerClient
	rpcs map[string]bool
	opts VolumeGroupOptions
}

// setup points the group client at conn and reads which group RPCs the plugin serves. It skips
// the spec when the plugin serves none.
func (v *vgFixture) setup(conn grpc.ClientConnInterface) {
	GinkgoHelper()
	v.vg = vgpb.NewControllerClient(conn)
	v.opts = v.run.opts.VolumeGroups
	info, err := v.identity.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
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
	v.onEnd(func() {
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
		out[i] = v.mustCreateVolume(fmt.Sprintf("%s-%d", prefix, i))
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

// describeVolumeGroups registers a spec group whose specs need the volume-group service.
func describeVolumeGroups(check Check, body func(sc *sanity.TestContext, v *vgFixture)) bool {
	return describe(check, func(sc *sanity.TestContext, f *fixture) {
		v := &vgFixture{fixture: f}
		BeforeEach(func() { v.setup(sc.ControllerConn) })
		body(sc, v)
	})
}

// describeVolumeGroupSpecs adds the volume-group specs to the suite.
func describeVolumeGroupSpecs() {
	describeVolumeGroups(CheckVolumeGroups, func(sc *sanity.TestContext, v *vgFixture) {
		ctx := context.Background()

		It(itVGLifecycle, func() { vgLifecycleSpec(ctx, sc, v) })
		It(itVGIdempotent, func() { vgIdempotentSpec(ctx, sc, v) })
		It(itVGMissing, func() { vgMissingSpec(ctx, sc, v) })
		It(itVGIncompatible, func() { vgIncompatibleSpec(ctx, sc, v) })
		It(itVGLimit, func() { vgLimitSpec(ctx, sc, v) })
		It(itVGInUse, func() { vgInUseSpec(ctx, sc, v) })
		It(itVGMemberDelete, func() { vgMemberDeleteSpec(ctx, sc, v) })
		It(itVGPages, func() { vgPagesSpec(ctx, sc, v) })
		It(itVGConcurrent, func() { vgConcurrentSpec(ctx, sc, v) })
		It(itVGJoin, func() { vgJoinSpec(ctx, sc, v) })
		It(itVGSnapshot, func() { vgSnapshotSpec(ctx, sc, v) })
	})
}

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

// vgLifecycleSpec is the spec named by itVGLifecycle.
func vgLifecycleSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	g := v.mustCreateGroup("csikit-vg-lifecycle")
	id := g.GetVolumeGroupId()
	Expect(g.GetVolumes()).To(BeEmpty(), "a new group has members")
	v.expectMembers(id, nil, "after create")

	vols := v.volumes("csikit-vg-lifecycle-vol", 3)
	a, b, c := vols[0].GetVolumeId(), vols[1].GetVolumeId(), vols[2].GetVolumeId()
	for _, step := range [][]string{{a, b}, {b, c}, {}, {a, b, c}} {
		By(fmt.Sprintf("setting the members to %v", step))
		got := v.setMembers(id, step...)
		v.expectMembers(id, step, fmt.Sprintf("after setting %v", step))
		// A volume reports the same volume_context wherever it is described.
		for _, m := range got.GetVolumes() {
			i := slices.Index(ids(vols...), m.GetVolumeId())
			Expect(m.GetVolumeContext()).To(Equal(vols[i].GetVolumeContext()), "member %s: volume_context differs from CreateVolume's", m.GetVolumeId())
			Expect(m.GetCapacityBytes()).To(BeNumerically(">=", 0), "member %s: capacity_bytes", m.GetVolumeId())
		}
	}

	if v.rpcs["ListVolumeGroups"] {
		By("listing it")
		found := false
		for _, e := range v.listAll() {
			if e.GetVolumeGroupId() == id {
				found = true
				Expect(memberIDs(e)).To(Equal(sortedIDs([]string{a, b, c})), "ListVolumeGroups: members")
			}
		}
		Expect(found).To(BeTrue(), "ListVolumeGroups does not list group %s", id)
	}

	By("deleting it with its volumes")
	dreq := &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()}
	_, err := v.vg.DeleteVolumeGroup(ctx, dreq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup")
	if v.rpcs["ControllerGetVolumeGroup"] {
		_, err := v.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
		expectCode(err, codes.NotFound, "ControllerGetVolumeGroup of a deleted group")
	}
	for _, vol := range vols {
		v.expectGone(vol.GetVolumeId())
	}
	_, err = v.vg.DeleteVolumeGroup(ctx, dreq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup of a deleted group")
}

// vgIdempotentSpec is the spec named by itVGIdempotent.
func vgIdempotentSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	req := v.createReq("csikit-vg-repeat")
	first, err := v.vg.CreateVolumeGroup(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroup")
	id := first.GetVolumeGroup().GetVolumeGroupId()
	v.cleanupGroup(id)
	again, err := v.vg.CreateVolumeGroup(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated CreateVolumeGroup")
	sameAnswer("CreateVolumeGroup", first, again)

	other := proto.Clone(req).(*vgpb.CreateVolumeGroupRequest)
	other.Parameters = v.opts.IncompatibleParameters
	if other.Parameters == nil {
		other.Parameters = maps.Clone(v.opts.Parameters)
		if other.Parameters == nil {
			other.Parameters = map[string]string{}
		}
		other.Parameters["csikit.dev/incompatible"] = "true"
	}
	_, err = v.vg.CreateVolumeGroup(ctx, other)
	expectCode(err, codes.AlreadyExists, "CreateVolumeGroup of an existing name with other parameters")

	if v.caps.has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME) {
		a := v.mustCreateVolume("csikit-vg-repeat-vol").GetVolumeId()
		mreq := v.modifyReq(id, a)
		m1, err := v.vg.ModifyVolumeGroupMembership(ctx, mreq)
		Expect(err).NotTo(HaveOccurred(), "ModifyVolumeGroupMembership")
		m2, err := v.vg.ModifyVolumeGroupMembership(ctx, mreq)
		Expect(err).NotTo(HaveOccurred(), "repeated ModifyVolumeGroupMembership")
		sameAnswer("ModifyVolumeGroupMembership", m1, m2)
	}
	for i := range 2 {
		_, err := v.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
		Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup, call %d", i+1)
	}
}

// vgMissingSpec is the spec named by itVGMissing.
func vgMissingSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	missing := missingGroupID()
	_, err := v.vg.DeleteVolumeGroup(ctx, &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: missing, Secrets: v.secrets()})
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup of a missing group must succeed")
	if v.rpcs["ControllerGetVolumeGroup"] {
		_, err := v.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: missing, Secrets: v.secrets()})
		expectCode(err, codes.NotFound, "ControllerGetVolumeGroup of a missing group")
	}
	_, err = v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(missing))
	expectCode(err, codes.NotFound, "ModifyVolumeGroupMembership of a missing group")

	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	id := v.mustCreateGroup("csikit-vg-missing").GetVolumeGroupId()
	vols := v.volumes("csikit-vg-missing-vol", 2)
	a, b := vols[0].GetVolumeId(), vols[1].GetVolumeId()
	_, err = v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(missing, a))
	expectCode(err, codes.NotFound, "ModifyVolumeGroupMembership of a missing group naming an existing volume")
	v.setMembers(id, a)
	_, err = v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, a, b, sc.Config.IDGen.GenerateUniqueValidVolumeID()))
	expectCode(err, codes.NotFound, "ModifyVolumeGroupMembership naming a missing volume")
	v.expectMembers(id, []string{a}, "after a refused modify")
}

// vgIncompatibleSpec is the spec named by itVGIncompatible.
func vgIncompatibleSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if !v.opts.ExclusiveMembership && v.opts.IncompatibleVolumeParameters == nil {
		Skip("no way to make an incompatible volume known: set VolumeGroupOptions.ExclusiveMembership or IncompatibleVolumeParameters")
	}
	id := v.mustCreateGroup("csikit-vg-incompatible").GetVolumeGroupId()
	a := v.mustCreateVolume("csikit-vg-incompatible-a").GetVolumeId()
	v.setMembers(id, a)
	if v.opts.ExclusiveMembership {
		By("adding a member of another group")
		other := v.mustCreateGroup("csikit-vg-incompatible-other").GetVolumeGroupId()
		b := v.mustCreateVolume("csikit-vg-incompatible-b").GetVolumeId()
		v.setMembers(other, b)
		_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, a, b))
		expectCode(err, codes.InvalidArgument, "ModifyVolumeGroupMembership adding a member of another group")
		v.expectMembers(id, []string{a}, "after a refused modify")
		v.expectMembers(other, []string{b}, "whose member another group asked for")
	}
	if params := v.opts.IncompatibleVolumeParameters; params != nil {
		By("adding a volume of incompatible parameters")
		req := v.createVolumeReq("csikit-vg-incompatible-params")
		req.Parameters = params
		c := v.createVolumeStep(ctx, "CreateVolume with incompatible parameters", req).GetVolumeId()
		_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, a, c))
		expectCode(err, codes.InvalidArgument, "ModifyVolumeGroupMembership adding an incompatible volume")
		v.expectMembers(id, []string{a}, "after a refused modify")
	}
}

// vgLimitSpec is the spec named by itVGLimit.
func vgLimitSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	limit := v.opts.MaxMembers
	if limit <= 0 {
		Skip("no member limit known: set VolumeGroupOptions.MaxMembers to the driver's limit")
	}
	id := v.mustCreateGroup("csikit-vg-limit").GetVolumeGroupId()
	all := ids(v.volumes("csikit-vg-limit-vol", limit+1)...)
	v.setMembers(id, all[:limit]...)
	_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, all...))
	expectCode(err, codes.ResourceExhausted, fmt.Sprintf("ModifyVolumeGroupMembership with %d members, limit %d", limit+1, limit))
	v.expectMembers(id, all[:limit], "after a refused modify")
}

// vgInUseSpec is the spec named by itVGInUse.
func vgInUseSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if !v.opts.PublishedMemberInUse {
		Skip("the driver does not declare what puts a group in use: set VolumeGroupOptions.PublishedMemberInUse when a published member does")
	}
	v.caps.require(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	v.requireNode()
	id := v.mustCreateGroup("csikit-vg-inuse").GetVolumeGroupId()
	vol := v.mustCreateVolume("csikit-vg-inuse-vol")
	v.setMembers(id, vol.GetVolumeId())
	v.publishStep(ctx, "ControllerPublishVolume of the member", v.controllerPublishReq(vol))
	dreq := &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()}
	_, err := v.vg.DeleteVolumeGroup(ctx, dreq)
	expectCode(err, codes.FailedPrecondition, "DeleteVolumeGroup with a published member")
	v.expectMembers(id, []string{vol.GetVolumeId()}, "after a refused delete")

	_, err = v.ctrl.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(sc, vol.GetVolumeId(), v.caps.nodeID))
	Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
	_, err = v.vg.DeleteVolumeGroup(ctx, dreq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup once the member is unpublished")
}

// vgMemberDeleteSpec is the spec named by itVGMemberDelete.
func vgMemberDeleteSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	id := v.mustCreateGroup("csikit-vg-member").GetVolumeGroupId()
	a := v.mustCreateVolume("csikit-vg-member-vol").GetVolumeId()
	v.setMembers(id, a)
	dreq := sanity.MakeDeleteVolumeReq(sc, a)
	_, err := v.ctrl.DeleteVolume(ctx, dreq)
	expectCode(err, codes.FailedPrecondition, "DeleteVolume of a group member")
	v.expectMembers(id, []string{a}, "after a refused DeleteVolume of its member")
	v.setMembers(id)
	_, err = v.ctrl.DeleteVolume(ctx, dreq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume of a volume that left its group")
	v.expectGone(a)
}

// vgPagesSpec is the spec named by itVGPages.
func vgPagesSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.require("ListVolumeGroups")
	var want []string
	for i := range vgGroups {
		want = append(want, v.mustCreateGroup(fmt.Sprintf("csikit-vg-page-%02d", i)).GetVolumeGroupId())
	}
	all := walkPages("ListVolumeGroups", 0, 1000, v.listGroupIDs(0))
	expectEachOnce("ListVolumeGroups", 0, all, want)
	maxPages := 2*len(all) + 8
	for _, max := range pageSizes {
		By(fmt.Sprintf("listing groups %d at a time", max))
		expectEachOnce("ListVolumeGroups", max, walkPages("ListVolumeGroups", max, maxPages, v.listGroupIDs(max)), want)
	}
	_, err := v.vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{StartingToken: sc.Config.TestInvalidListVolumesStartingToken, Secrets: v.secrets()})
	expectCode(err, codes.Aborted, "ListVolumeGroups with an invalid starting_token")
	_, err = v.vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{MaxEntries: -1, Secrets: v.secrets()})
	expectCode(err, codes.InvalidArgument, "ListVolumeGroups with max_entries -1")
}

// vgConcurrentSpec is the spec named by itVGConcurrent.
func vgConcurrentSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	id := v.mustCreateGroup("csikit-vg-concurrent").GetVolumeGroupId()
	vols := ids(v.volumes("csikit-vg-concurrent-vol", 3)...)
	By("modifying it identically from several callers at once")
	req := v.modifyReq(id, vols[0], vols[1])
	res, errs := concurrently(concurrentCalls, func() (*vgpb.ModifyVolumeGroupMembershipResponse, error) {
		return v.vg.ModifyVolumeGroupMembership(ctx, req)
	})
	oneProceeds("ModifyVolumeGroupMembership", res, errs)
	v.expectMembers(id, req.GetVolumeIds(), "after identical concurrent modifies")

	By("modifying it differently from two callers at once")
	lists := [][]string{{vols[0]}, {vols[1], vols[2]}}
	start := make(chan struct{})
	done := make(chan error, len(lists))
	for _, l := range lists {
		go func() {
			<-start
			_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, l...))
			done <- err
		}()
	}
	close(start)
	var won [][]string
	for range lists {
		// The answers arrive in any order; the error alone says nothing of which list it
		// was, so both are collected and the membership judged against the lists that won.
		if err := <-done; err != nil {
			expectCode(err, codes.Aborted, "a concurrent ModifyVolumeGroupMembership that did not succeed")
		}
	}
	if !v.rpcs["ControllerGetVolumeGroup"] {
		return
	}
	resp, err := v.vg.ControllerGetVolumeGroup(ctx, &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()})
	Expect(err).NotTo(HaveOccurred(), "ControllerGetVolumeGroup")
	got := memberIDs(resp.GetVolumeGroup())
	for _, l := range append(lists, req.GetVolumeIds()) {
		if slices.Equal(got, sortedIDs(l)) {
			won = append(won, l)
		}
	}
	Expect(won).NotTo(BeEmpty(), "after concurrent modifies the group has %v, which no caller asked for", got)
}

// vgJoinSpec is the spec named by itVGJoin.
func vgJoinSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if v.opts.JoinParameter == "" {
		Skip("the driver names no CreateVolume parameter that joins a group: set VolumeGroupOptions.JoinParameter")
	}
	id := v.mustCreateGroup("csikit-vg-join").GetVolumeGroupId()
	req := v.createVolumeReq("csikit-vg-join-vol")
	req.Parameters = maps.Clone(req.Parameters)
	if req.Parameters == nil {
		req.Parameters = map[string]string{}
	}
	req.Parameters[v.opts.JoinParameter] = id
	vol := v.createVolumeStep(ctx, "CreateVolume with the join parameter", req)
	v.expectMembers(id, []string{vol.GetVolumeId()}, "after CreateVolume with the join parameter")
	_, err := v.ctrl.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, vol.GetVolumeId()))
	expectCode(err, codes.FailedPrecondition, "DeleteVolume of a volume that joined at creation")
}

// vgSnapshotSpec is the spec named by itVGSnapshot.
func vgSnapshotSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if v.opts.SnapshotParameter == "" {
		Skip("the driver names no group snapshot parameter for volume groups: set VolumeGroupOptions.SnapshotParameter")
	}
	if !v.caps.group {
		Skip("GROUP_CONTROLLER_SERVICE with CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT not advertised")
	}
	id := v.mustCreateGroup("csikit-vg-snapshot").GetVolumeGroupId()
	members := ids(v.volumes("csikit-vg-snapshot-vol", 2)...)
	v.setMembers(id, members...)
	params := maps.Clone(sc.Config.TestSnapshotParameters)
	if params == nil {
		params = map[string]string{}
	}
	params[v.opts.SnapshotParameter] = id
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: sanity.UniqueString("csikit-vg-snapshot"), SourceVolumeIds: members,
		Parameters: params, Secrets: sc.Secrets.CreateSnapshotSecret}

	By("snapshotting a part of the group")
	partial := proto.Clone(req).(*csi.CreateVolumeGroupSnapshotRequest)
	partial.Name, partial.SourceVolumeIds = sanity.UniqueString("csikit-vg-snapshot-partial"), members[:1]
	_, err := v.group.CreateVolumeGroupSnapshot(ctx, partial)
	expectCode(err, codes.InvalidArgument, "CreateVolumeGroupSnapshot of a part of a volume group")

	By("snapshotting the whole group")
	resp, err := v.group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot of a volume group's members")
	gs := resp.GetGroupSnapshot()
	var snaps, sources []string
	for _, s := range gs.GetSnapshots() {
		snaps = append(snaps, s.GetSnapshotId())
		sources = append(sources, s.GetSourceVolumeId())
	}
	v.onEnd(func() {
		_, _ = v.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(),
			SnapshotIds: snaps, Secrets: sc.Secrets.DeleteSnapshotSecret})
	})
	Expect(sources).To(ConsistOf(members), "member snapshots' source_volume_ids")
	again, err := v.group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated CreateVolumeGroupSnapshot")
	Expect(again.GetGroupSnapshot().GetGroupSnapshotId()).To(Equal(gs.GetGroupSnapshotId()), "repeated CreateVolumeGroupSnapshot returned another group snapshot")
}
