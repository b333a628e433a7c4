package csisuite

import (
	"context"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/kubernetes-csi/csi-test/v5/utils"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/driver/drivertest/internal/canary"
)

// DialCanary opens connections to the plugin that pass through the canary, and points the
// fixture's clients at them.
func (f *Fixture) DialCanary(c *canary.Canary) {
	GinkgoHelper()
	cfg := f.SC.Config
	opts := append(slices.Clip(cfg.DialOptions), grpc.WithChainUnaryInterceptor(c.Unary), grpc.WithChainStreamInterceptor(c.Stream))
	conn, err := utils.Connect(cfg.Address, opts...)
	Expect(err).NotTo(HaveOccurred(), "connecting to the plugin")
	f.After(func() { conn.Close() })
	ctrl := conn
	if cfg.ControllerAddress != "" {
		copts := append(slices.Clip(cfg.ControllerDialOptions), grpc.WithChainUnaryInterceptor(c.Unary), grpc.WithChainStreamInterceptor(c.Stream))
		ctrl, err = utils.Connect(cfg.ControllerAddress, copts...)
		Expect(err).NotTo(HaveOccurred(), "connecting to the plugin's controller")
		f.After(func() { ctrl.Close() })
	}
	f.setup(ctrl, conn)
}

// Verify fails the spec for every leak: in answers, and in the plugin's logs.
func (f *Fixture) Verify(c *canary.Canary) {
	GinkgoHelper()
	leaks, sent := c.Found()
	GinkgoWriter.Printf("secret canary: secrets sent with %s\n", strings.Join(sent, ", "))
	if text, ok := f.run.Logs(); ok {
		Expect(text).NotTo(BeEmpty(), "the plugin logged nothing during the lifecycle, so the canary cannot check its logs; give CSIEndpoint the plugin's debug-level logs through Options.Logs")
		leaks = append(leaks, c.LogLeaks(text)...)
	} else {
		GinkgoWriter.Println("secret canary: no Options.Logs, log lines not searched")
	}
	f.run.AddCanary(c.AllValues(), sent)
	Expect(leaks).To(BeEmpty(), "secret values leaked")
}

// DescribeSecretCanary adds the secret canary of the CSI services to the suite.
func DescribeSecretCanary(active Active, group string) {
	Register(active, group, func(sc *sanity.TestContext, f *Fixture) {
		ctx := context.Background()
		var c *canary.Canary
		BeforeEach(func() {
			c = canary.New()
			f.DialCanary(c)
		})
		It(ItCanaryController, func() { canaryControllerSpec(ctx, sc, f, c) })
		It(ItCanaryNode, func() { canaryNodeSpec(ctx, sc, f, c) })
	})
}

// canaryControllerSpec is the spec named by ItCanaryController.
func canaryControllerSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture, c *canary.Canary) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)

	req := f.CreateVolumeReq("csikit-canary")
	vol := f.CreateVolumeStep(ctx, "CreateVolume", req)
	f.CreateVolumeStep(ctx, "CreateVolume repeated", req)
	id := vol.GetVolumeId()
	expanded := false // the volume snapshotted below was expanded first

	canaryErrorPaths(ctx, sc, f, c, req)

	By("validating capabilities")
	_, err := f.Ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: id, VolumeContext: vol.GetVolumeContext(), VolumeCapabilities: []*csi.VolumeCapability{f.VolumeCapability()}})
	Expect(err).NotTo(HaveOccurred(), "ValidateVolumeCapabilities")

	if f.Caps.Has(csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH) {
		ignore(f.Ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id}))
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH) {
		ignore(f.Ctrl.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{}))
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_MODIFY_VOLUME) {
		if params := sc.Config.TestVolumeMutableParameters; len(params) > 0 {
			_, err := f.Ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: id, MutableParameters: params})
			Expect(err).NotTo(HaveOccurred(), "ControllerModifyVolume")
		}
		ignore(f.Ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: id,
			MutableParameters: map[string]string{"csikit-unknown-key": "x"}}))
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME) {
		By("ControllerExpandVolume")
		_, err := f.Ctrl.ControllerExpandVolume(ctx, sanity.MakeExpandVolumeReq(sc, id))
		Expect(err).NotTo(HaveOccurred(), "ControllerExpandVolume")
		expanded = true
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		By("publishing and unpublishing")
		if f.Caps.NodeID != "" {
			f.PublishStep(ctx, "ControllerPublishVolume", f.ControllerPublishReq(vol))
			_, err := f.Ctrl.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(sc, id, f.Caps.NodeID))
			Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
		}
		wrongNode := f.ControllerPublishReq(vol)
		wrongNode.NodeId = sc.Config.IDGen.GenerateUniqueValidNodeID()
		ignore(f.R.ControllerPublishVolume(ctx, wrongNode)) // NOT_FOUND
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		canarySnapshots(ctx, sc, f, id, expanded)
	}
	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH) {
		ignore(f.Node.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{}))
	}

	By("deleting")
	for range 2 {
		_, err := f.R.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, id))
		Expect(err).NotTo(HaveOccurred(), "DeleteVolume")
	}
	f.Verify(c)
}

// ignore drops a call's answer: on the canary's error paths only the leak check matters.
func ignore(any, error) {}

// canaryErrorPaths sends requests the driver must refuse, each carrying secrets: a refusal's
// error, log line or event must not leak them either.
func canaryErrorPaths(ctx context.Context, sc *sanity.TestContext, f *Fixture, c *canary.Canary, req *csi.CreateVolumeRequest) {
	By("taking error paths with secrets")
	bigger := proto.Clone(req).(*csi.CreateVolumeRequest)
	bigger.CapacityRange = &csi.CapacityRange{RequiredBytes: 2*sc.Config.TestVolumeSize + 1}
	ignore(f.R.CreateVolume(ctx, bigger)) // same name, other size: ALREADY_EXISTS
	nocaps := f.CreateVolumeReq("csikit-canary-nocaps")
	nocaps.VolumeCapabilities = nil
	ignore(f.R.CreateVolume(ctx, nocaps)) // INVALID_ARGUMENT
	badKey := f.CreateVolumeReq("csikit-canary-badkey")
	badKey.Secrets = map[string]string{"not a valid key!": c.Value("CreateVolume (under an invalid key)")}
	ignore(f.R.CreateVolume(ctx, badKey))
	ignore(f.Ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: sc.Config.IDGen.GenerateUniqueValidVolumeID(), VolumeCapabilities: []*csi.VolumeCapability{f.VolumeCapability()}}))
}

// canarySnapshots snapshots the volume id, restores and deletes the snapshot, taking the error
// paths of each call; expanded says the volume was expanded first.
func canarySnapshots(ctx context.Context, sc *sanity.TestContext, f *Fixture, id string, expanded bool) {
	of := "the volume"
	if expanded {
		of = "the expanded volume"
	}
	sreq := sanity.MakeCreateSnapshotReq(sc, sanity.UniqueString("csikit-canary-snap"), id)
	snap := f.CreateSnapshotStep(ctx, "CreateSnapshot of "+of, sreq).GetSnapshot()
	f.CreateSnapshotStep(ctx, "CreateSnapshot of "+of+" repeated", sreq)
	ignore(f.R.CreateSnapshot(ctx, sanity.MakeCreateSnapshotReq(sc, sanity.UniqueString("csikit-canary-snap-none"),
		sc.Config.IDGen.GenerateUniqueValidVolumeID())))
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		_, err := f.Ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.GetSnapshotId()})
		Expect(err).NotTo(HaveOccurred(), "GetSnapshot")
		ignore(f.Ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: "csikit-no-such-snapshot"}))
	}
	if f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS) {
		for _, lreq := range []*csi.ListSnapshotsRequest{{}, {SnapshotId: snap.GetSnapshotId()}, {SourceVolumeId: id}, {MaxEntries: 1},
			{StartingToken: sc.Config.TestInvalidListVolumesStartingToken}} {
			ignore(f.Ctrl.ListSnapshots(ctx, lreq))
		}
	}
	restore := f.CreateVolumeReq("csikit-canary-restore")
	restore.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshotId()}}}
	restored := f.CreateVolumeStep(ctx, "CreateVolume from a snapshot of "+of, restore)
	By("DeleteVolume of the restored volume")
	_, err := f.R.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, restored.GetVolumeId()))
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume of the volume restored from a snapshot of %s", of)
	missing := f.CreateVolumeReq("csikit-canary-nosource")
	missing.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "csikit-no-such-snapshot"}}}
	ignore(f.R.CreateVolume(ctx, missing)) // NOT_FOUND

	if f.Caps.Plugin[csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE] {
		canarySnapshotMetadata(ctx, f, snap.GetSnapshotId())
	}
	if f.Caps.Group {
		canaryGroupSnapshot(ctx, f, id)
	}

	for range 2 {
		_, err := f.R.DeleteSnapshot(ctx, sanity.MakeDeleteSnapshotReq(sc, snap.GetSnapshotId()))
		Expect(err).NotTo(HaveOccurred(), "DeleteSnapshot")
	}
}

// canarySnapshotMetadata reads the allocated blocks of a snapshot and its delta to itself.
func canarySnapshotMetadata(ctx context.Context, f *Fixture, snapID string) {
	By("reading snapshot metadata")
	if st, err := f.Meta.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: snapID}); err == nil {
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
	}
	if st, err := f.Meta.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: snapID, TargetSnapshotId: snapID}); err == nil {
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
	}
}

// canaryGroupSnapshot snapshots a group of the volume id, repeats the call and deletes it twice.
func canaryGroupSnapshot(ctx context.Context, f *Fixture, id string) {
	By("snapshotting a group")
	greq := &csi.CreateVolumeGroupSnapshotRequest{Name: sanity.UniqueString("csikit-canary-group"), SourceVolumeIds: []string{id}}
	g, err := f.Group.CreateVolumeGroupSnapshot(ctx, greq)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot")
	var members []string
	for _, s := range g.GetGroupSnapshot().GetSnapshots() {
		members = append(members, s.GetSnapshotId())
	}
	gid := g.GetGroupSnapshot().GetGroupSnapshotId()
	ignore(f.Group.CreateVolumeGroupSnapshot(ctx, greq))
	ignore(f.Group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: members}))
	for range 2 {
		_, err := f.Group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: members})
		Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroupSnapshot")
	}
	ignore(f.Group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: members}))
}

// canaryNodeSpec is the spec named by ItCanaryNode.
func canaryNodeSpec(ctx context.Context, sc *sanity.TestContext, f *Fixture, c *canary.Canary) {
	f.Caps.Require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	f.RequireNode()
	ignore := func(any, error) {}
	vol := f.MustCreateVolume("csikit-canary-node")
	id := vol.GetVolumeId()
	pc := f.ControllerPublish(vol)
	staging := ""
	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		staging = sc.StagingPath
		for range 2 {
			_, err := f.Node.NodeStageVolume(ctx, f.NodeStageReq(vol, pc))
			Expect(err).NotTo(HaveOccurred(), "NodeStageVolume")
		}
		missing := f.NodeStageReq(vol, pc)
		missing.VolumeId = sc.Config.IDGen.GenerateUniqueValidVolumeID()
		ignore(f.Node.NodeStageVolume(ctx, missing)) // NOT_FOUND
	}
	for range 2 {
		_, err := f.Node.NodePublishVolume(ctx, f.NodePublishReq(vol, pc, staging))
		Expect(err).NotTo(HaveOccurred(), "NodePublishVolume")
	}
	missing := f.NodePublishReq(vol, pc, staging)
	missing.VolumeId = sc.Config.IDGen.GenerateUniqueValidVolumeID()
	missing.TargetPath = sc.TargetPath + "/other_target"
	ignore(f.Node.NodePublishVolume(ctx, missing)) // NOT_FOUND

	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS) {
		_, err := f.Node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: f.TargetPath(), StagingTargetPath: staging})
		Expect(err).NotTo(HaveOccurred(), "NodeGetVolumeStats")
	}
	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_EXPAND_VOLUME) {
		size := sc.Config.TestVolumeSize
		if f.Caps.Has(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME) {
			resp, err := f.Ctrl.ControllerExpandVolume(ctx, sanity.MakeExpandVolumeReq(sc, id))
			Expect(err).NotTo(HaveOccurred(), "ControllerExpandVolume")
			size = resp.GetCapacityBytes()
		}
		_, err := f.Node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: f.TargetPath(), StagingTargetPath: staging,
			CapacityRange: &csi.CapacityRange{RequiredBytes: size}, VolumeCapability: f.VolumeCapability()})
		Expect(err).NotTo(HaveOccurred(), "NodeExpandVolume")
	}
	if f.Caps.HasNode(csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH) {
		ignore(f.Node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id, VolumePublishPath: f.TargetPath(), StagingTargetPath: staging}))
	}

	By("tearing down")
	_, err := f.Node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: f.TargetPath()})
	Expect(err).NotTo(HaveOccurred(), "NodeUnpublishVolume")
	if staging != "" {
		_, err := f.Node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
		Expect(err).NotTo(HaveOccurred(), "NodeUnstageVolume")
	}
	if pc != nil || f.Caps.Has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		_, err := f.Ctrl.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(sc, id, f.Caps.NodeID))
		Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
	}
	_, err = f.R.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, id))
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume")
	f.Verify(c)
}
