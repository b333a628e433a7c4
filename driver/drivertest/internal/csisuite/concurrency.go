package csisuite

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// DescribeConcurrency adds the concurrent-duplicate specs to the suite.
func DescribeConcurrency(active Active, group string) {
	Register(active, group, func(sc *sanity.TestContext, f *Fixture) {
		ctx := context.Background()

		It(ItConcurrentCreate, func() { concurrentCreateSpec(ctx, sc, f) })
		It(ItConcurrentPublish, func() { concurrentPublishSpec(ctx, sc, f) })
		It(ItConcurrentDelete, func() { concurrentDeleteSpec(ctx, sc, f) })
		It(ItConcurrentNode, func() { concurrentNodeSpec(ctx, sc, f) })
	})
}

// concurrentCreateSpec is the spec named by ItConcurrentCreate.
func concurrentCreateSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	listing := f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES)
	before := 0
	if listing {
		before = len(WalkPages("ListVolumes", 0, 1000, f.listVolumeIDs))
	}
	req := f.CreateVolumeReq("csikit-concurrent-create")
	res, errs := Concurrently(ConcurrentCalls, func() (*csi.CreateVolumeResponse, error) { return f.Ctrl.CreateVolume(ctx, req) })
	// A buggy plugin may have made several volumes; delete every one when the spec ends.
	for _, resp := range res {
		if id := resp.GetVolume().GetVolumeId(); id != "" {
			f.OnEnd(func() { _, _ = f.Ctrl.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, id)) })
		}
	}
	got := OneProceeds("CreateVolume", res, errs)
	again := f.CreateVolumeStep(ctx, "CreateVolume repeated after the concurrent calls", req)
	SameAnswer("CreateVolume", got, &csi.CreateVolumeResponse{Volume: again})
	if listing {
		after := len(WalkPages("ListVolumes", 0, 1000, f.listVolumeIDs))
		Expect(after).To(Equal(before+1), "%d identical concurrent CreateVolume calls made %d volumes", ConcurrentCalls, after-before)
	}
}

// concurrentPublishSpec is the spec named by ItConcurrentPublish.
func concurrentPublishSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME)
	f.RequireNode()
	vol := f.MustCreateVolume("csikit-concurrent-publish")
	req := f.ControllerPublishReq(vol)
	res, errs := Concurrently(ConcurrentCalls, func() (*csi.ControllerPublishVolumeResponse, error) {
		return f.Ctrl.ControllerPublishVolume(ctx, req)
	})
	again, err := f.R.ControllerPublishVolume(ctx, req) // registers the publication for cleanup
	got := OneProceeds("ControllerPublishVolume", res, errs)
	Expect(err).NotTo(HaveOccurred(), "ControllerPublishVolume after the concurrent calls")
	SameAnswer("ControllerPublishVolume", got, again)

	ureq := sanity.MakeControllerUnpublishVolumeReq(sc, vol.GetVolumeId(), f.Caps.NodeID)
	ures, uerrs := Concurrently(ConcurrentCalls, func() (*csi.ControllerUnpublishVolumeResponse, error) {
		return f.Ctrl.ControllerUnpublishVolume(ctx, ureq)
	})
	OneProceeds("ControllerUnpublishVolume", ures, uerrs)
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_GET_VOLUME) && f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES) {
		resp, err := f.Ctrl.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: vol.GetVolumeId()})
		Expect(err).NotTo(HaveOccurred(), "ControllerGetVolume")
		Expect(resp.GetStatus().GetPublishedNodeIds()).NotTo(ContainElement(f.Caps.NodeID), "the volume is still published after ControllerUnpublishVolume")
	}
}

// concurrentDeleteSpec is the spec named by ItConcurrentDelete.
func concurrentDeleteSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	vol := f.MustCreateVolume("csikit-concurrent-delete")
	req := sanity.MakeDeleteVolumeReq(sc, vol.GetVolumeId())
	res, errs := Concurrently(ConcurrentCalls, func() (*csi.DeleteVolumeResponse, error) { return f.Ctrl.DeleteVolume(ctx, req) })
	OneProceeds("DeleteVolume", res, errs)
	_, err := f.R.DeleteVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume of a deleted volume")
	f.ExpectGone(vol.GetVolumeId())
}

// concurrentNodeSpec is the spec named by ItConcurrentNode.
func concurrentNodeSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	f.RequireNode()
	vol := f.MustCreateVolume("csikit-concurrent-node")
	pc := f.ControllerPublish(vol)
	staging := ""
	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		staging = sc.StagingPath
		req := f.NodeStageReq(vol, pc)
		res, errs := Concurrently(ConcurrentCalls, func() (*csi.NodeStageVolumeResponse, error) { return f.Node.NodeStageVolume(ctx, req) })
		OneProceeds("NodeStageVolume", res, errs)
	}
	preq := f.NodePublishReq(vol, pc, staging)
	res, errs := Concurrently(ConcurrentCalls, func() (*csi.NodePublishVolumeResponse, error) { return f.Node.NodePublishVolume(ctx, preq) })
	OneProceeds("NodePublishVolume", res, errs)

	ureq := &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: f.TargetPath()}
	ures, uerrs := Concurrently(ConcurrentCalls, func() (*csi.NodeUnpublishVolumeResponse, error) { return f.Node.NodeUnpublishVolume(ctx, ureq) })
	OneProceeds("NodeUnpublishVolume", ures, uerrs)
	if staging != "" {
		req := &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging}
		res, errs := Concurrently(ConcurrentCalls, func() (*csi.NodeUnstageVolumeResponse, error) { return f.Node.NodeUnstageVolume(ctx, req) })
		OneProceeds("NodeUnstageVolume", res, errs)
	}
}
