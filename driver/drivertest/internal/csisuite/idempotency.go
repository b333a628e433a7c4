package csisuite

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// DescribeIdempotency adds the repeated-call specs to the suite.
func DescribeIdempotency(active Active, group string) {
	Register(active, group, func(sc *sanity.TestContext, f *Fixture) {
		ctx := context.Background()

		It(ItRepeatController, func() { repeatControllerSpec(ctx, sc, f) })
		It(ItRepeatNode, func() { repeatNodeSpec(ctx, sc, f) })
	})
}

// repeatControllerSpec is the spec named by ItRepeatController.
func repeatControllerSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	req := f.CreateVolumeReq("csikit-repeat")
	vol := f.CreateVolumeStep(ctx, "CreateVolume", req)
	SameAnswer("CreateVolume", vol, f.CreateVolumeStep(ctx, "CreateVolume repeated", req))

	if f.Caps.Has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) && f.Caps.NodeID != "" {
		preq := f.ControllerPublishReq(vol)
		SameAnswer("ControllerPublishVolume", f.PublishStep(ctx, "ControllerPublishVolume", preq), f.PublishStep(ctx, "ControllerPublishVolume repeated", preq))
		ureq := sanity.MakeControllerUnpublishVolumeReq(sc, vol.GetVolumeId(), f.Caps.NodeID)
		for i := range 2 {
			_, err := f.Ctrl.ControllerUnpublishVolume(ctx, ureq)
			Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume, call %d", i+1)
		}
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME) {
		ereq := sanity.MakeExpandVolumeReq(sc, vol.GetVolumeId())
		e1, err := f.Ctrl.ControllerExpandVolume(ctx, ereq)
		Expect(err).NotTo(HaveOccurred(), "ControllerExpandVolume")
		e2, err := f.Ctrl.ControllerExpandVolume(ctx, ereq)
		Expect(err).NotTo(HaveOccurred(), "repeated ControllerExpandVolume")
		SameAnswer("ControllerExpandVolume", e1, e2)
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		sreq := sanity.MakeCreateSnapshotReq(sc, sanity.UniqueString("csikit-repeat-snap"), vol.GetVolumeId())
		s1 := f.CreateSnapshotStep(ctx, "CreateSnapshot", sreq)
		SameAnswer("CreateSnapshot", s1, f.CreateSnapshotStep(ctx, "CreateSnapshot repeated", sreq))
		dreq := sanity.MakeDeleteSnapshotReq(sc, s1.GetSnapshot().GetSnapshotId())
		for i := range 2 {
			_, err := f.R.DeleteSnapshot(ctx, dreq)
			Expect(err).NotTo(HaveOccurred(), "DeleteSnapshot, call %d", i+1)
		}
	}
	dreq := sanity.MakeDeleteVolumeReq(sc, vol.GetVolumeId())
	for i := range 2 {
		_, err := f.R.DeleteVolume(ctx, dreq)
		Expect(err).NotTo(HaveOccurred(), "DeleteVolume, call %d", i+1)
	}
}

// repeatNodeSpec is the spec named by ItRepeatNode.
func repeatNodeSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	f.RequireNode()
	vol := f.MustCreateVolume("csikit-repeat-node")
	pc := f.ControllerPublish(vol)
	staging := ""
	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		staging = sc.StagingPath
		req := f.NodeStageReq(vol, pc)
		s1, err := f.Node.NodeStageVolume(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "NodeStageVolume")
		s2, err := f.Node.NodeStageVolume(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "repeated NodeStageVolume")
		SameAnswer("NodeStageVolume", s1, s2)
	}
	req := f.NodePublishReq(vol, pc, staging)
	p1, err := f.Node.NodePublishVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "NodePublishVolume")
	p2, err := f.Node.NodePublishVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "repeated NodePublishVolume")
	SameAnswer("NodePublishVolume", p1, p2)

	for i := range 2 {
		_, err := f.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: f.TargetPath()})
		Expect(err).NotTo(HaveOccurred(), "NodeUnpublishVolume, call %d", i+1)
	}
	kind, err := sanity.CheckPath(f.TargetPath(), sc.Config)
	Expect(err).NotTo(HaveOccurred())
	Expect(kind).To(Equal(sanity.PathIsNotFound), "the target path is still there after NodeUnpublishVolume")
	if staging != "" {
		for i := range 2 {
			_, err := f.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging})
			Expect(err).NotTo(HaveOccurred(), "NodeUnstageVolume, call %d", i+1)
		}
	}
}
