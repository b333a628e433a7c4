package vgsuite

import (
	"context"
	"fmt"
	"maps"
	"slices"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
)

// vgLifecycleSpec is the spec named by itVGLifecycle.
func vgLifecycleSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
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
		csisuite.ExpectCode(err, codes.NotFound, "ControllerGetVolumeGroup of a deleted group")
	}
	for _, vol := range vols {
		v.ExpectGone(vol.GetVolumeId())
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
	csisuite.SameAnswer("CreateVolumeGroup", first, again)

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
	csisuite.ExpectCode(err, codes.AlreadyExists, "CreateVolumeGroup of an existing name with other parameters")

	if v.Caps.Has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME) {
		a := v.MustCreateVolume("csikit-vg-repeat-vol").GetVolumeId()
		mreq := v.modifyReq(id, a)
		m1, err := v.vg.ModifyVolumeGroupMembership(ctx, mreq)
		Expect(err).NotTo(HaveOccurred(), "ModifyVolumeGroupMembership")
		m2, err := v.vg.ModifyVolumeGroupMembership(ctx, mreq)
		Expect(err).NotTo(HaveOccurred(), "repeated ModifyVolumeGroupMembership")
		csisuite.SameAnswer("ModifyVolumeGroupMembership", m1, m2)
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
		csisuite.ExpectCode(err, codes.NotFound, "ControllerGetVolumeGroup of a missing group")
	}
	_, err = v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(missing))
	csisuite.ExpectCode(err, codes.NotFound, "ModifyVolumeGroupMembership of a missing group")

	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	id := v.mustCreateGroup("csikit-vg-missing").GetVolumeGroupId()
	vols := v.volumes("csikit-vg-missing-vol", 2)
	a, b := vols[0].GetVolumeId(), vols[1].GetVolumeId()
	_, err = v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(missing, a))
	csisuite.ExpectCode(err, codes.NotFound, "ModifyVolumeGroupMembership of a missing group naming an existing volume")
	v.setMembers(id, a)
	_, err = v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, a, b, sc.Config.IDGen.GenerateUniqueValidVolumeID()))
	csisuite.ExpectCode(err, codes.NotFound, "ModifyVolumeGroupMembership naming a missing volume")
	v.expectMembers(id, []string{a}, "after a refused modify")
}

// vgIncompatibleSpec is the spec named by itVGIncompatible.
func vgIncompatibleSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if !v.opts.ExclusiveMembership && v.opts.IncompatibleVolumeParameters == nil {
		Skip("no way to make an incompatible volume known: set VolumeGroupOptions.ExclusiveMembership or IncompatibleVolumeParameters")
	}
	id := v.mustCreateGroup("csikit-vg-incompatible").GetVolumeGroupId()
	a := v.MustCreateVolume("csikit-vg-incompatible-a").GetVolumeId()
	v.setMembers(id, a)
	if v.opts.ExclusiveMembership {
		By("adding a member of another group")
		other := v.mustCreateGroup("csikit-vg-incompatible-other").GetVolumeGroupId()
		b := v.MustCreateVolume("csikit-vg-incompatible-b").GetVolumeId()
		v.setMembers(other, b)
		_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, a, b))
		csisuite.ExpectCode(err, codes.InvalidArgument, "ModifyVolumeGroupMembership adding a member of another group")
		v.expectMembers(id, []string{a}, "after a refused modify")
		v.expectMembers(other, []string{b}, "whose member another group asked for")
	}
	if params := v.opts.IncompatibleVolumeParameters; params != nil {
		By("adding a volume of incompatible parameters")
		req := v.CreateVolumeReq("csikit-vg-incompatible-params")
		req.Parameters = params
		c := v.CreateVolumeStep(ctx, "CreateVolume with incompatible parameters", req).GetVolumeId()
		_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, a, c))
		csisuite.ExpectCode(err, codes.InvalidArgument, "ModifyVolumeGroupMembership adding an incompatible volume")
		v.expectMembers(id, []string{a}, "after a refused modify")
	}
}

// vgLimitSpec is the spec named by itVGLimit.
func vgLimitSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	limit := v.opts.MaxMembers
	if limit <= 0 {
		Skip("no member limit known: set VolumeGroupOptions.MaxMembers to the driver's limit")
	}
	id := v.mustCreateGroup("csikit-vg-limit").GetVolumeGroupId()
	all := ids(v.volumes("csikit-vg-limit-vol", limit+1)...)
	v.setMembers(id, all[:limit]...)
	_, err := v.vg.ModifyVolumeGroupMembership(ctx, v.modifyReq(id, all...))
	csisuite.ExpectCode(err, codes.ResourceExhausted, fmt.Sprintf("ModifyVolumeGroupMembership with %d members, limit %d", limit+1, limit))
	v.expectMembers(id, all[:limit], "after a refused modify")
}

// vgInUseSpec is the spec named by itVGInUse.
func vgInUseSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if !v.opts.PublishedMemberInUse {
		Skip("the driver does not declare what puts a group in use: set VolumeGroupOptions.PublishedMemberInUse when a published member does")
	}
	v.Caps.Require(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	v.RequireNode()
	id := v.mustCreateGroup("csikit-vg-inuse").GetVolumeGroupId()
	vol := v.MustCreateVolume("csikit-vg-inuse-vol")
	v.setMembers(id, vol.GetVolumeId())
	v.PublishStep(ctx, "ControllerPublishVolume of the member", v.ControllerPublishReq(vol))
	dreq := &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: id, Secrets: v.secrets()}
	_, err := v.vg.DeleteVolumeGroup(ctx, dreq)
	csisuite.ExpectCode(err, codes.FailedPrecondition, "DeleteVolumeGroup with a published member")
	v.expectMembers(id, []string{vol.GetVolumeId()}, "after a refused delete")

	_, err = v.Ctrl.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(sc, vol.GetVolumeId(), v.Caps.NodeID))
	Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
	_, err = v.vg.DeleteVolumeGroup(ctx, dreq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroup once the member is unpublished")
}

// vgMemberDeleteSpec is the spec named by itVGMemberDelete.
func vgMemberDeleteSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	id := v.mustCreateGroup("csikit-vg-member").GetVolumeGroupId()
	a := v.MustCreateVolume("csikit-vg-member-vol").GetVolumeId()
	v.setMembers(id, a)
	dreq := sanity.MakeDeleteVolumeReq(sc, a)
	_, err := v.Ctrl.DeleteVolume(ctx, dreq)
	csisuite.ExpectCode(err, codes.FailedPrecondition, "DeleteVolume of a group member")
	v.expectMembers(id, []string{a}, "after a refused DeleteVolume of its member")
	v.setMembers(id)
	_, err = v.Ctrl.DeleteVolume(ctx, dreq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume of a volume that left its group")
	v.ExpectGone(a)
}

// vgPagesSpec is the spec named by itVGPages.
func vgPagesSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.require("ListVolumeGroups")
	var want []string
	for i := range vgGroups {
		want = append(want, v.mustCreateGroup(fmt.Sprintf("csikit-vg-page-%02d", i)).GetVolumeGroupId())
	}
	all := csisuite.WalkPages("ListVolumeGroups", 0, 1000, v.listGroupIDs(0))
	csisuite.ExpectEachOnce("ListVolumeGroups", 0, all, want)
	maxPages := 2*len(all) + 8
	for _, max := range csisuite.PageSizes {
		By(fmt.Sprintf("listing groups %d at a time", max))
		csisuite.ExpectEachOnce("ListVolumeGroups", max, csisuite.WalkPages("ListVolumeGroups", max, maxPages, v.listGroupIDs(max)), want)
	}
	_, err := v.vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{StartingToken: sc.Config.TestInvalidListVolumesStartingToken, Secrets: v.secrets()})
	csisuite.ExpectCode(err, codes.Aborted, "ListVolumeGroups with an invalid starting_token")
	_, err = v.vg.ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{MaxEntries: -1, Secrets: v.secrets()})
	csisuite.ExpectCode(err, codes.InvalidArgument, "ListVolumeGroups with max_entries -1")
}

// vgConcurrentSpec is the spec named by itVGConcurrent.
func vgConcurrentSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	id := v.mustCreateGroup("csikit-vg-concurrent").GetVolumeGroupId()
	vols := ids(v.volumes("csikit-vg-concurrent-vol", 3)...)
	By("modifying it identically from several callers at once")
	req := v.modifyReq(id, vols[0], vols[1])
	res, errs := csisuite.Concurrently(csisuite.ConcurrentCalls, func() (*vgpb.ModifyVolumeGroupMembershipResponse, error) {
		return v.vg.ModifyVolumeGroupMembership(ctx, req)
	})
	csisuite.OneProceeds("ModifyVolumeGroupMembership", res, errs)
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
			csisuite.ExpectCode(err, codes.Aborted, "a concurrent ModifyVolumeGroupMembership that did not succeed")
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
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if v.opts.JoinParameter == "" {
		Skip("the driver names no CreateVolume parameter that joins a group: set VolumeGroupOptions.JoinParameter")
	}
	id := v.mustCreateGroup("csikit-vg-join").GetVolumeGroupId()
	req := v.CreateVolumeReq("csikit-vg-join-vol")
	req.Parameters = maps.Clone(req.Parameters)
	if req.Parameters == nil {
		req.Parameters = map[string]string{}
	}
	req.Parameters[v.opts.JoinParameter] = id
	vol := v.CreateVolumeStep(ctx, "CreateVolume with the join parameter", req)
	v.expectMembers(id, []string{vol.GetVolumeId()}, "after CreateVolume with the join parameter")
	_, err := v.Ctrl.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, vol.GetVolumeId()))
	csisuite.ExpectCode(err, codes.FailedPrecondition, "DeleteVolume of a volume that joined at creation")
}

// vgSnapshotSpec is the spec named by itVGSnapshot.
func vgSnapshotSpec(ctx context.Context, sc *sanity.TestContext, v *vgFixture) {
	v.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	if v.opts.SnapshotParameter == "" {
		Skip("the driver names no group snapshot parameter for volume groups: set VolumeGroupOptions.SnapshotParameter")
	}
	if !v.Caps.Group {
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
	_, err := v.Group.CreateVolumeGroupSnapshot(ctx, partial)
	csisuite.ExpectCode(err, codes.InvalidArgument, "CreateVolumeGroupSnapshot of a part of a volume group")

	By("snapshotting the whole group")
	resp, err := v.Group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot of a volume group's members")
	gs := resp.GetGroupSnapshot()
	var snaps, sources []string
	for _, s := range gs.GetSnapshots() {
		snaps = append(snaps, s.GetSnapshotId())
		sources = append(sources, s.GetSourceVolumeId())
	}
	v.OnEnd(func() {
		_, _ = v.Group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(),
			SnapshotIds: snaps, Secrets: sc.Secrets.DeleteSnapshotSecret})
	})
	Expect(sources).To(ConsistOf(members), "member snapshots' source_volume_ids")
	again, err := v.Group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated CreateVolumeGroupSnapshot")
	Expect(again.GetGroupSnapshot().GetGroupSnapshotId()).To(Equal(gs.GetGroupSnapshotId()), "repeated CreateVolumeGroupSnapshot returned another group snapshot")
}
