package drivertest

import (
	"context"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// The leaf texts of csikit's own specs. The mount-spec table names some by their full text.
const (
	itPageVolumes   = "ListVolumes returns every volume exactly once across pages of 1, 3 and 7 entries"
	itPageSnapshots = "ListSnapshots returns every snapshot exactly once across pages of 1, 3 and 7 entries, filtered or not"
	itPageErrors    = "list calls answer ABORTED to an invalid starting_token and INVALID_ARGUMENT to a negative max_entries"

	itGroupLifecycle = "a group snapshot is created idempotently, read back, restored from and deleted idempotently"

	itConcurrentCreate  = "identical concurrent CreateVolume calls create one volume; each succeeds with it or is ABORTED"
	itConcurrentPublish = "identical concurrent ControllerPublishVolume and ControllerUnpublishVolume calls succeed identically or are ABORTED"
	itConcurrentDelete  = "identical concurrent DeleteVolume calls succeed or are ABORTED, and the volume is gone"
	itConcurrentNode    = "identical concurrent NodeStageVolume, NodePublishVolume, NodeUnpublishVolume and NodeUnstageVolume calls succeed identically or are ABORTED"

	itRepeatController = "a repeated CreateVolume, ControllerPublishVolume, ControllerExpandVolume or CreateSnapshot gets the same answer, a repeated delete or unpublish succeeds"
	itRepeatNode       = "a repeated NodeStageVolume or NodePublishVolume gets the same answer, a repeated unpublish or unstage succeeds"

	itCanaryController = "no secret sent with any controller, group or snapshot metadata call appears in a response, an error or a log line"
	itCanaryNode       = "no secret sent through a node stage and publish lifecycle appears in a response, an error or a log line"
)

// Full texts of the csikit specs that stage and publish (see mountSpecs).
const (
	specConcurrentNode = "csikit " + string(CheckConcurrency) + " " + itConcurrentNode
	specRepeatNode     = "csikit " + string(CheckIdempotency) + " " + itRepeatNode
	specCanaryNode     = "csikit " + string(CheckSecretCanary) + " " + itCanaryNode
)

const (
	// pageItems is how many volumes (and snapshots) the pagination specs create.
	pageItems = 25
	// concurrentCalls is how many identical calls the concurrency specs make at once.
	concurrentCalls = 8
	// maxToken is the CSI size limit of a string field, which binds next_token too.
	maxToken = 128
)

var pageSizes = []int32{1, 3, 7}

// walkPages follows next_token from the first page to the last and counts every ID it sees. It
// fails when a page exceeds max entries, a token exceeds 128 bytes, or the listing does not end
// within maxPages.
func walkPages(what string, max int32, maxPages int, list func(token string) (ids []string, next string, err error)) map[string]int {
	GinkgoHelper()
	counts := map[string]int{}
	token := ""
	for page := 0; ; page++ {
		Expect(page).To(BeNumerically("<", maxPages), "%s with max_entries %d: still returning next_token after %d pages", what, max, page)
		ids, next, err := list(token)
		Expect(err).NotTo(HaveOccurred(), "%s page %d with max_entries %d", what, page, max)
		if max > 0 {
			Expect(len(ids)).To(BeNumerically("<=", max), "%s page %d: %d entries, more than max_entries %d", what, page, len(ids), max)
		}
		Expect(len(next)).To(BeNumerically("<=", maxToken), "%s page %d: next_token is %d bytes, more than the %d a CSI string may have", what, page, len(next), maxToken)
		for _, id := range ids {
			counts[id]++
		}
		if next == "" {
			return counts
		}
		token = next
	}
}

// expectEachOnce checks a walk: every wanted ID exactly once, no ID twice.
func expectEachOnce(what string, max int32, counts map[string]int, want []string) {
	GinkgoHelper()
	for id, n := range counts {
		Expect(n).To(Equal(1), "%s with max_entries %d returned %q %d times", what, max, id, n)
	}
	for _, id := range want {
		Expect(counts).To(HaveKey(id), "%s with max_entries %d never returned %q, which existed through the whole listing", what, max, id)
	}
}

// describePagination adds the pagination specs to the suite.
func describePagination() {
	describe(CheckPagination, func(sc *sanity.TestContext, f *fixture) {
		ctx := context.Background()

		It(itPageVolumes, func() {
			f.caps.require(csi.ControllerServiceCapability_RPC_LIST_VOLUMES)
			var want []string
			for i := range pageItems {
				want = append(want, f.mustCreateVolume(fmt.Sprintf("csikit-page-%02d", i)).GetVolumeId())
			}
			// The unlimited listing bounds the walks: with one entry per page, a listing that
			// existed before plus ours cannot take more pages than entries, twice over.
			all := walkPages("ListVolumes", 0, 1000, pageListVolumes(ctx, f, 0))
			expectEachOnce("ListVolumes", 0, all, want)
			maxPages := 2*len(all) + 8
			for _, max := range pageSizes {
				By(fmt.Sprintf("listing volumes %d at a time", max))
				expectEachOnce("ListVolumes", max, walkPages("ListVolumes", max, maxPages, pageListVolumes(ctx, f, max)), want)
			}
		})

		It(itPageSnapshots, func() {
			f.caps.require(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS)
			f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT)
			// Five volumes with five snapshots each: enough pages, and a filter that matters.
			var want, ofFirst []string
			var first string
			for v := range 5 {
				vol := f.mustCreateVolume(fmt.Sprintf("csikit-page-src-%d", v))
				if v == 0 {
					first = vol.GetVolumeId()
				}
				for s := range pageItems / 5 {
					name := sanity.UniqueString(fmt.Sprintf("csikit-page-snap-%d-%d", v, s))
					snap := f.createSnapshotStep(ctx, "CreateSnapshot "+name, sanity.MakeCreateSnapshotReq(sc, name, vol.GetVolumeId())).GetSnapshot()
					want = append(want, snap.GetSnapshotId())
					if v == 0 {
						ofFirst = append(ofFirst, snap.GetSnapshotId())
					}
				}
			}
			all := walkPages("ListSnapshots", 0, 1000, pageListSnapshots(ctx, sc, f, 0, ""))
			expectEachOnce("ListSnapshots", 0, all, want)
			maxPages := 2*len(all) + 8
			for _, max := range pageSizes {
				By(fmt.Sprintf("listing snapshots %d at a time", max))
				expectEachOnce("ListSnapshots", max, walkPages("ListSnapshots", max, maxPages, pageListSnapshots(ctx, sc, f, max, "")), want)
			}
			By("listing the snapshots of one volume 2 at a time")
			counts := walkPages("ListSnapshots by source_volume_id", 2, maxPages, pageListSnapshots(ctx, sc, f, 2, first))
			expectEachOnce("ListSnapshots by source_volume_id", 2, counts, ofFirst)
			Expect(counts).To(HaveLen(len(ofFirst)), "ListSnapshots by source_volume_id returned snapshots of other volumes")
		})

		It(itPageErrors, func() {
			vols := f.caps.has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES)
			snaps := f.caps.has(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS)
			if !vols && !snaps {
				Skip("neither LIST_VOLUMES nor LIST_SNAPSHOTS advertised")
			}
			bad := sc.Config.TestInvalidListVolumesStartingToken
			if vols {
				_, err := f.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: bad})
				expectCode(err, codes.Aborted, "ListVolumes with an invalid starting_token")
				_, err = f.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: -1})
				expectCode(err, codes.InvalidArgument, "ListVolumes with max_entries -1")
			}
			if snaps {
				_, err := f.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: bad, Secrets: sc.Secrets.ListSnapshotsSecret})
				expectCode(err, codes.Aborted, "ListSnapshots with an invalid starting_token")
				_, err = f.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: -1, Secrets: sc.Secrets.ListSnapshotsSecret})
				expectCode(err, codes.InvalidArgument, "ListSnapshots with max_entries -1")
			}
		})
	})
}

// pageListVolumes lists volumes a page of max at a time, for the pagination checks.
func pageListVolumes(ctx context.Context, f *fixture, max int32) func(string) ([]string, string, error) {
	return func(token string) ([]string, string, error) {
		resp, err := f.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: max, StartingToken: token})
		var ids []string
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetVolume().GetVolumeId())
		}
		return ids, resp.GetNextToken(), err
	}
}

// pageListSnapshots lists snapshots (of the volume source, if not empty) a page of max at a
// time, and fails on a snapshot of another source.
func pageListSnapshots(ctx context.Context, sc *sanity.TestContext, f *fixture, max int32, source string) func(string) ([]string, string, error) {
	return func(token string) ([]string, string, error) {
		resp, err := f.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: max, StartingToken: token,
			SourceVolumeId: source, Secrets: sc.Secrets.ListSnapshotsSecret})
		var ids []string
		for _, e := range resp.GetEntries() {
			snap := e.GetSnapshot()
			if source != "" {
				Expect(snap.GetSourceVolumeId()).To(Equal(source), "ListSnapshots filtered by source_volume_id %q returned snapshot %q of %q", source, snap.GetSnapshotId(), snap.GetSourceVolumeId())
			}
			ids = append(ids, snap.GetSnapshotId())
		}
		return ids, resp.GetNextToken(), err
	}
}

// describeGroupSnapshot adds the group-snapshot lifecycle specs to the suite.
func describeGroupSnapshot() {
	describe(CheckGroupSnapshot, func(sc *sanity.TestContext, f *fixture) {
		ctx := context.Background()

		It(itGroupLifecycle, func() { groupLifecycleSpec(ctx, sc, f) })
	})
}

// describeConcurrency adds the concurrent-duplicate specs to the suite.
func describeConcurrency() {
	describe(CheckConcurrency, func(sc *sanity.TestContext, f *fixture) {
		ctx := context.Background()

		It(itConcurrentCreate, func() { concurrentCreateSpec(ctx, sc, f) })
		It(itConcurrentPublish, func() { concurrentPublishSpec(ctx, sc, f) })
		It(itConcurrentDelete, func() { concurrentDeleteSpec(ctx, sc, f) })
		It(itConcurrentNode, func() { concurrentNodeSpec(ctx, sc, f) })
	})
}

// describeIdempotency adds the repeated-call specs to the suite.
func describeIdempotency() {
	describe(CheckIdempotency, func(sc *sanity.TestContext, f *fixture) {
		ctx := context.Background()

		It(itRepeatController, func() { repeatControllerSpec(ctx, sc, f) })
		It(itRepeatNode, func() { repeatNodeSpec(ctx, sc, f) })
	})
}

// requireNode skips a spec that needs the node service.
func (f *fixture) requireNode() {
	if f.caps.nodeID == "" {
		Skip("no node service (NodeGetInfo gave no node ID)")
	}
}

func (f *fixture) listVolumeIDs(token string) ([]string, string, error) {
	resp, err := f.ctrl.ListVolumes(context.Background(), &csi.ListVolumesRequest{StartingToken: token})
	var ids []string
	for _, e := range resp.GetEntries() {
		ids = append(ids, e.GetVolume().GetVolumeId())
	}
	return ids, resp.GetNextToken(), err
}

// expectGone checks, as far as the plugin lets us look, that a volume no longer exists.
func (f *fixture) expectGone(id string) {
	GinkgoHelper()
	switch {
	case f.caps.has(csi.ControllerServiceCapability_RPC_GET_VOLUME):
		_, err := f.ctrl.ControllerGetVolume(context.Background(), &csi.ControllerGetVolumeRequest{VolumeId: id})
		expectCode(err, codes.NotFound, "ControllerGetVolume of a deleted volume")
	case f.caps.has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES):
		Expect(walkPages("ListVolumes", 0, 1000, f.listVolumeIDs)).NotTo(HaveKey(id), "a deleted volume is still listed")
	}
}

func (f *fixture) controllerPublishReq(vol *csi.Volume) *csi.ControllerPublishVolumeRequest {
	return &csi.ControllerPublishVolumeRequest{
		VolumeId:         vol.GetVolumeId(),
		NodeId:           f.caps.nodeID,
		VolumeCapability: f.volumeCapability(),
		VolumeContext:    vol.GetVolumeContext(),
		Secrets:          f.sc.Secrets.ControllerPublishVolumeSecret,
	}
}

// controllerPublish publishes the volume to this node when the plugin has the capability, and
// returns the publish context for the node calls.
func (f *fixture) controllerPublish(vol *csi.Volume) map[string]string {
	GinkgoHelper()
	if !f.caps.has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		return nil
	}
	return f.publishStep(context.Background(), "ControllerPublishVolume", f.controllerPublishReq(vol)).GetPublishContext()
}

func (f *fixture) nodeStageReq(vol *csi.Volume, pc map[string]string) *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{
		VolumeId:          vol.GetVolumeId(),
		PublishContext:    pc,
		StagingTargetPath: f.sc.StagingPath,
		VolumeCapability:  f.volumeCapability(),
		VolumeContext:     vol.GetVolumeContext(),
		Secrets:           f.sc.Secrets.NodeStageVolumeSecret,
	}
}

func (f *fixture) nodePublishReq(vol *csi.Volume, pc map[string]string, staging string) *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{
		VolumeId:          vol.GetVolumeId(),
		PublishContext:    pc,
		StagingTargetPath: staging,
		TargetPath:        f.targetPath(),
		VolumeCapability:  f.volumeCapability(),
		VolumeContext:     vol.GetVolumeContext(),
		Secrets:           f.sc.Secrets.NodePublishVolumeSecret,
	}
}

// groupLifecycleSpec is the spec named by itGroupLifecycle.
func groupLifecycleSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	if !f.caps.group {
		Skip("GROUP_CONTROLLER_SERVICE with CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT not advertised")
	}
	a, b := f.mustCreateVolume("csikit-group-a").GetVolumeId(), f.mustCreateVolume("csikit-group-b").GetVolumeId()
	req := &csi.CreateVolumeGroupSnapshotRequest{
		Name:            sanity.UniqueString("csikit-group"),
		SourceVolumeIds: []string{a, b},
		Parameters:      sc.Config.TestSnapshotParameters,
		Secrets:         sc.Secrets.CreateSnapshotSecret,
	}
	By("creating a group snapshot of two volumes")
	created, err := f.group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot")
	g := created.GetGroupSnapshot()
	Expect(g.GetGroupSnapshotId()).NotTo(BeEmpty(), "group_snapshot_id")
	memberIDs := func(g *csi.VolumeGroupSnapshot) []string {
		var ids []string
		for _, s := range g.GetSnapshots() {
			ids = append(ids, s.GetSnapshotId())
		}
		slices.Sort(ids)
		return ids
	}
	ids := memberIDs(g)
	deleteReq := &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: sc.Secrets.DeleteSnapshotSecret}
	deleted := false
	f.onEnd(func() {
		if !deleted {
			_, _ = f.group.DeleteVolumeGroupSnapshot(ctx, deleteReq)
		}
	})
	Expect(g.GetCreationTime()).NotTo(BeNil(), "creation_time")
	Expect(g.GetSnapshots()).To(HaveLen(2), "one member snapshot per source volume")
	var sources []string
	for _, s := range g.GetSnapshots() {
		Expect(s.GetSnapshotId()).NotTo(BeEmpty(), "member snapshot_id")
		Expect(s.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "member %s group_snapshot_id", s.GetSnapshotId())
		Expect(s.GetCreationTime()).NotTo(BeNil(), "member %s creation_time", s.GetSnapshotId())
		sources = append(sources, s.GetSourceVolumeId())
	}
	Expect(sources).To(ConsistOf(a, b), "member source_volume_ids")

	By("creating it again with the same name")
	again, err := f.group.CreateVolumeGroupSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated CreateVolumeGroupSnapshot")
	Expect(again.GetGroupSnapshot().GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "repeated CreateVolumeGroupSnapshot returned another group")
	Expect(memberIDs(again.GetGroupSnapshot())).To(Equal(ids), "repeated CreateVolumeGroupSnapshot returned other members")

	By("reading it back")
	get := func() *csi.VolumeGroupSnapshot {
		resp, err := f.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{
			GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: sc.Secrets.ListSnapshotsSecret})
		Expect(err).NotTo(HaveOccurred(), "GetVolumeGroupSnapshot")
		return resp.GetGroupSnapshot()
	}
	got := get()
	Expect(got.GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()))
	Expect(memberIDs(got)).To(Equal(ids), "GetVolumeGroupSnapshot members")
	Expect(proto.Equal(got.GetCreationTime(), g.GetCreationTime())).To(BeTrue(), "GetVolumeGroupSnapshot creation_time differs from CreateVolumeGroupSnapshot's")
	if !got.GetReadyToUse() {
		By("waiting for it to become ready")
		Eventually(func() bool { return get().GetReadyToUse() }).WithTimeout(wait).WithPolling(poll).Should(BeTrue(), "group snapshot never became ready_to_use")
	}

	member := g.GetSnapshots()[0]
	if f.caps.has(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		snap, err := f.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member.GetSnapshotId(), Secrets: sc.Secrets.GetSnapshotSecret})
		Expect(err).NotTo(HaveOccurred(), "GetSnapshot of a member")
		Expect(snap.GetSnapshot().GetGroupSnapshotId()).To(Equal(g.GetGroupSnapshotId()), "GetSnapshot of a member: group_snapshot_id")
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		By("restoring a member into a new volume")
		vreq := f.createVolumeReq("csikit-group-restore")
		vreq.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: member.GetSnapshotId()}}}
		restored := f.createVolumeStep(ctx, "CreateVolume from a member of the group snapshot", vreq)
		Expect(restored.GetContentSource().GetSnapshot().GetSnapshotId()).To(Equal(member.GetSnapshotId()), "restored volume's content_source")
		_, err := f.r.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, restored.GetVolumeId()))
		Expect(err).NotTo(HaveOccurred(), "DeleteVolume of the restored volume")
	}

	By("deleting it twice")
	_, err = f.group.DeleteVolumeGroupSnapshot(ctx, deleteReq)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroupSnapshot")
	deleted = true
	_, err = f.group.DeleteVolumeGroupSnapshot(ctx, deleteReq)
	Expect(err).NotTo(HaveOccurred(), "repeated DeleteVolumeGroupSnapshot")
	_, err = f.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{
		GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids, Secrets: sc.Secrets.ListSnapshotsSecret})
	expectCode(err, codes.NotFound, "GetVolumeGroupSnapshot after deletion")
	if f.caps.has(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		_, err := f.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member.GetSnapshotId(), Secrets: sc.Secrets.GetSnapshotSecret})
		expectCode(err, codes.NotFound, "GetSnapshot of a member after its group was deleted")
	}
}

// concurrentCreateSpec is the spec named by itConcurrentCreate.
func concurrentCreateSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	listing := f.caps.has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES)
	before := 0
	if listing {
		before = len(walkPages("ListVolumes", 0, 1000, f.listVolumeIDs))
	}
	req := f.createVolumeReq("csikit-concurrent-create")
	res, errs := concurrently(concurrentCalls, func() (*csi.CreateVolumeResponse, error) { return f.ctrl.CreateVolume(ctx, req) })
	// A buggy plugin may have made several volumes; delete every one when the spec ends.
	for _, resp := range res {
		if id := resp.GetVolume().GetVolumeId(); id != "" {
			f.onEnd(func() { _, _ = f.ctrl.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, id)) })
		}
	}
	got := oneProceeds("CreateVolume", res, errs)
	again := f.createVolumeStep(ctx, "CreateVolume repeated after the concurrent calls", req)
	sameAnswer("CreateVolume", got, &csi.CreateVolumeResponse{Volume: again})
	if listing {
		after := len(walkPages("ListVolumes", 0, 1000, f.listVolumeIDs))
		Expect(after).To(Equal(before+1), "%d identical concurrent CreateVolume calls made %d volumes", concurrentCalls, after-before)
	}
}

// concurrentPublishSpec is the spec named by itConcurrentPublish.
func concurrentPublishSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	f.caps.require(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	f.requireNode()
	vol := f.mustCreateVolume("csikit-concurrent-publish")
	req := f.controllerPublishReq(vol)
	res, errs := concurrently(concurrentCalls, func() (*csi.ControllerPublishVolumeResponse, error) {
		return f.ctrl.ControllerPublishVolume(ctx, req)
	})
	again, err := f.r.ControllerPublishVolume(ctx, req) // registers the publication for cleanup
	got := oneProceeds("ControllerPublishVolume", res, errs)
	Expect(err).NotTo(HaveOccurred(), "ControllerPublishVolume after the concurrent calls")
	sameAnswer("ControllerPublishVolume", got, again)

	ureq := sanity.MakeControllerUnpublishVolumeReq(sc, vol.GetVolumeId(), f.caps.nodeID)
	ures, uerrs := concurrently(concurrentCalls, func() (*csi.ControllerUnpublishVolumeResponse, error) {
		return f.ctrl.ControllerUnpublishVolume(ctx, ureq)
	})
	oneProceeds("ControllerUnpublishVolume", ures, uerrs)
	if f.caps.has(csi.ControllerServiceCapability_RPC_GET_VOLUME) && f.caps.has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES) {
		resp, err := f.ctrl.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: vol.GetVolumeId()})
		Expect(err).NotTo(HaveOccurred(), "ControllerGetVolume")
		Expect(resp.GetStatus().GetPublishedNodeIds()).NotTo(ContainElement(f.caps.nodeID), "the volume is still published after ControllerUnpublishVolume")
	}
}

// concurrentDeleteSpec is the spec named by itConcurrentDelete.
func concurrentDeleteSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	vol := f.mustCreateVolume("csikit-concurrent-delete")
	req := sanity.MakeDeleteVolumeReq(sc, vol.GetVolumeId())
	res, errs := concurrently(concurrentCalls, func() (*csi.DeleteVolumeResponse, error) { return f.ctrl.DeleteVolume(ctx, req) })
	oneProceeds("DeleteVolume", res, errs)
	_, err := f.r.DeleteVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume of a deleted volume")
	f.expectGone(vol.GetVolumeId())
}

// concurrentNodeSpec is the spec named by itConcurrentNode.
func concurrentNodeSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	f.requireNode()
	vol := f.mustCreateVolume("csikit-concurrent-node")
	pc := f.controllerPublish(vol)
	staging := ""
	if f.caps.hasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		staging = sc.StagingPath
		req := f.nodeStageReq(vol, pc)
		res, errs := concurrently(concurrentCalls, func() (*csi.NodeStageVolumeResponse, error) { return f.node.NodeStageVolume(ctx, req) })
		oneProceeds("NodeStageVolume", res, errs)
	}
	preq := f.nodePublishReq(vol, pc, staging)
	res, errs := concurrently(concurrentCalls, func() (*csi.NodePublishVolumeResponse, error) { return f.node.NodePublishVolume(ctx, preq) })
	oneProceeds("NodePublishVolume", res, errs)

	ureq := &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: f.targetPath()}
	ures, uerrs := concurrently(concurrentCalls, func() (*csi.NodeUnpublishVolumeResponse, error) { return f.node.NodeUnpublishVolume(ctx, ureq) })
	oneProceeds("NodeUnpublishVolume", ures, uerrs)
	if staging != "" {
		req := &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging}
		res, errs := concurrently(concurrentCalls, func() (*csi.NodeUnstageVolumeResponse, error) { return f.node.NodeUnstageVolume(ctx, req) })
		oneProceeds("NodeUnstageVolume", res, errs)
	}
}

// repeatControllerSpec is the spec named by itRepeatController.
func repeatControllerSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	req := f.createVolumeReq("csikit-repeat")
	vol := f.createVolumeStep(ctx, "CreateVolume", req)
	sameAnswer("CreateVolume", vol, f.createVolumeStep(ctx, "CreateVolume repeated", req))

	if f.caps.has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) && f.caps.nodeID != "" {
		preq := f.controllerPublishReq(vol)
		sameAnswer("ControllerPublishVolume", f.publishStep(ctx, "ControllerPublishVolume", preq), f.publishStep(ctx, "ControllerPublishVolume repeated", preq))
		ureq := sanity.MakeControllerUnpublishVolumeReq(sc, vol.GetVolumeId(), f.caps.nodeID)
		for i := range 2 {
			_, err := f.ctrl.ControllerUnpublishVolume(ctx, ureq)
			Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume, call %d", i+1)
		}
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME) {
		ereq := sanity.MakeExpandVolumeReq(sc, vol.GetVolumeId())
		e1, err := f.ctrl.ControllerExpandVolume(ctx, ereq)
		Expect(err).NotTo(HaveOccurred(), "ControllerExpandVolume")
		e2, err := f.ctrl.ControllerExpandVolume(ctx, ereq)
		Expect(err).NotTo(HaveOccurred(), "repeated ControllerExpandVolume")
		sameAnswer("ControllerExpandVolume", e1, e2)
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		sreq := sanity.MakeCreateSnapshotReq(sc, sanity.UniqueString("csikit-repeat-snap"), vol.GetVolumeId())
		s1 := f.createSnapshotStep(ctx, "CreateSnapshot", sreq)
		sameAnswer("CreateSnapshot", s1, f.createSnapshotStep(ctx, "CreateSnapshot repeated", sreq))
		dreq := sanity.MakeDeleteSnapshotReq(sc, s1.GetSnapshot().GetSnapshotId())
		for i := range 2 {
			_, err := f.r.DeleteSnapshot(ctx, dreq)
			Expect(err).NotTo(HaveOccurred(), "DeleteSnapshot, call %d", i+1)
		}
	}
	dreq := sanity.MakeDeleteVolumeReq(sc, vol.GetVolumeId())
	for i := range 2 {
		_, err := f.r.DeleteVolume(ctx, dreq)
		Expect(err).NotTo(HaveOccurred(), "DeleteVolume, call %d", i+1)
	}
}

// repeatNodeSpec is the spec named by itRepeatNode.
func repeatNodeSpec(ctx context.Context, sc *sanity.TestContext, f *fixture) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	f.requireNode()
	vol := f.mustCreateVolume("csikit-repeat-node")
	pc := f.controllerPublish(vol)
	staging := ""
	if f.caps.hasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		staging = sc.StagingPath
		req := f.nodeStageReq(vol, pc)
		s1, err := f.node.NodeStageVolume(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "NodeStageVolume")
		s2, err := f.node.NodeStageVolume(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "repeated NodeStageVolume")
		sameAnswer("NodeStageVolume", s1, s2)
	}
	req := f.nodePublishReq(vol, pc, staging)
	p1, err := f.node.NodePublishVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "NodePublishVolume")
	p2, err := f.node.NodePublishVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated NodePublishVolume")
	sameAnswer("NodePublishVolume", p1, p2)

	for i := range 2 {
		_, err := f.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: f.targetPath()})
		Expect(err).NotTo(HaveOccurred(), "NodeUnpublishVolume, call %d", i+1)
	}
	kind, err := sanity.CheckPath(f.targetPath(), sc.Config)
	Expect(err).NotTo(HaveOccurred())
	Expect(kind).To(Equal(sanity.PathIsNotFound), "the target path is still there after NodeUnpublishVolume")
	if staging != "" {
		for i := range 2 {
			_, err := f.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging})
			Expect(err).NotTo(HaveOccurred(), "NodeUnstageVolume, call %d", i+1)
		}
	}
}
