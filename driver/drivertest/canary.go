package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/kubernetes-csi/csi-test/v5/utils"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/secrets"
)

// The secret canary sends a fresh random value in every secrets field of every request, through
// a client interceptor, so no call can be forgotten: whatever the spec calls carries a canary.
// Each response and error is searched for every value sent so far, and at the end of the spec so
// is everything the plugin logged.

// canaryKey is the secrets key the canary adds. Keys are not secret; values are.
const canaryKey = "csikit-canary"

// secretFields lists, per request type, the map fields annotated csi_secret. Computed once per
// type.
var secretFields sync.Map // protoreflect.FullName -> []protoreflect.FieldDescriptor

func secretFieldsOf(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if v, ok := secretFields.Load(md.FullName()); ok {
		return v.([]protoreflect.FieldDescriptor)
	}
	var out []protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		// secrets.IsSecretField is csikit's one definition of "secret": csi_secret and
		// vg_csi_secret alike, so the volume-group requests carry canaries too.
		if fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind && secrets.IsSecretField(fd) {
			out = append(out, fd)
		}
	}
	secretFields.Store(md.FullName(), out)
	return out
}

// requestsWithSecrets lists every CSI request type that has a secrets field.
func requestsWithSecrets() []string {
	var out []string
	msgs := csi.File_csi_proto.Messages()
	for i := range msgs.Len() {
		md := msgs.Get(i)
		if strings.HasSuffix(string(md.Name()), "Request") && len(secretFieldsOf(md)) > 0 {
			out = append(out, string(md.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// canary injects secrets and searches for them.
type canary struct {
	mu     sync.Mutex
	values map[string]string // value -> method that carried it
	sent   map[string]bool   // request types that carried a canary
	leaks  []string
}

func newCanary() *canary {
	return &canary{values: map[string]string{}, sent: map[string]bool{}}
}

// value returns a fresh random value (24 bytes, hex) attributed to method.
func (c *canary) value(method string) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("drivertest: no randomness: %v", err)) // crypto/rand never fails on supported platforms
	}
	v := hex.EncodeToString(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values[v] = method
	return v
}

// inject adds a canary to every secrets field of req, keeping what is there (the configured
// secrets, or a canary the spec placed under another key).
func (c *canary) inject(method string, req any) {
	m, ok := req.(proto.Message)
	if !ok {
		return
	}
	msg := m.ProtoReflect()
	fields := secretFieldsOf(msg.Descriptor())
	if len(fields) == 0 {
		return
	}
	c.mu.Lock()
	c.sent[string(msg.Descriptor().Name())] = true
	c.mu.Unlock()
	for _, fd := range fields {
		// A new map: the request's map may be shared with csi-sanity's configured secrets.
		secrets := msg.NewField(fd).Map()
		msg.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			secrets.Set(k, v)
			return true
		})
		secrets.Set(protoreflect.ValueOfString(canaryKey).MapKey(), protoreflect.ValueOfString(c.value(method)))
		msg.Set(fd, protoreflect.ValueOfMap(secrets))
	}
}

// search records every canary value found in text.
func (c *canary) search(method, where, text string) {
	if text == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for v, origin := range c.values {
		if strings.Contains(text, v) {
			c.leaks = append(c.leaks, fmt.Sprintf("the secret value sent with %s appears in the %s of %s", origin, where, method))
		}
	}
}

func (c *canary) inspect(method string, resp any, err error) {
	if err != nil {
		c.search(method, "error", err.Error())
		c.search(method, "status message", status.Convert(err).Message())
	}
	if m, ok := resp.(proto.Message); ok && m != nil && m.ProtoReflect().IsValid() {
		j, _ := protojson.Marshal(m)
		c.search(method, "response (JSON)", string(j))
		t, _ := prototext.Marshal(m)
		c.search(method, "response (text)", string(t))
	}
}

func (c *canary) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.inject(method, req)
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		c.inspect(method, nil, err)
	} else {
		c.inspect(method, reply, nil)
	}
	return err
}

func (c *canary) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		c.inspect(method, nil, err)
		return nil, err
	}
	return &canaryStream{ClientStream: s, c: c, method: method}, nil
}

type canaryStream struct {
	grpc.ClientStream
	c      *canary
	method string
}

func (s *canaryStream) SendMsg(m any) error {
	s.c.inject(s.method, m)
	return s.ClientStream.SendMsg(m)
}

func (s *canaryStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	switch {
	case errors.Is(err, io.EOF):
	case err != nil:
		s.c.inspect(s.method, nil, err)
	default:
		s.c.inspect(s.method, m, nil)
	}
	return err
}

// logLeaks returns the log lines that contain a canary value, with the value masked.
func (c *canary) logLeaks(logs string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		for v, origin := range c.values {
			if strings.Contains(line, v) {
				out = append(out, fmt.Sprintf("the secret value sent with %s is logged: %s", origin, strings.ReplaceAll(line, v, "<canary>")))
			}
		}
	}
	return out
}

func (c *canary) allValues() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.values))
	for v := range c.values {
		out = append(out, v)
	}
	return out
}

// dialCanary opens connections to the plugin that pass through the canary, and points the
// fixture's clients at them.
func (f *fixture) dialCanary(c *canary) {
	GinkgoHelper()
	cfg := f.sc.Config
	opts := append(slices.Clip(cfg.DialOptions), grpc.WithChainUnaryInterceptor(c.unary), grpc.WithChainStreamInterceptor(c.stream))
	conn, err := utils.Connect(cfg.Address, opts...)
	Expect(err).NotTo(HaveOccurred(), "connecting to the plugin")
	f.after(func() { conn.Close() })
	ctrl := conn
	if cfg.ControllerAddress != "" {
		copts := append(slices.Clip(cfg.ControllerDialOptions), grpc.WithChainUnaryInterceptor(c.unary), grpc.WithChainStreamInterceptor(c.stream))
		ctrl, err = utils.Connect(cfg.ControllerAddress, copts...)
		Expect(err).NotTo(HaveOccurred(), "connecting to the plugin's controller")
		f.after(func() { ctrl.Close() })
	}
	f.setup(ctrl, conn)
}

// verify fails the spec for every leak: in answers, and in the plugin's logs.
func (f *fixture) verify(c *canary) {
	GinkgoHelper()
	c.mu.Lock()
	leaks := slices.Clone(c.leaks)
	sent := make([]string, 0, len(c.sent))
	for name := range c.sent {
		sent = append(sent, name)
	}
	c.mu.Unlock()
	slices.Sort(sent)
	GinkgoWriter.Printf("secret canary: secrets sent with %s\n", strings.Join(sent, ", "))
	if logs := f.run.opts.Logs; logs != nil {
		text := logs()
		Expect(text).NotTo(BeEmpty(), "the plugin logged nothing during the lifecycle, so the canary cannot check its logs; give CSIEndpoint the plugin's debug-level logs through Options.Logs")
		leaks = append(leaks, c.logLeaks(text)...)
	} else {
		GinkgoWriter.Println("secret canary: no Options.Logs, log lines not searched")
	}
	f.run.addCanary(c.allValues(), sent)
	Expect(leaks).To(BeEmpty(), "secret values leaked")
}

// describeSecretCanary adds the secret canary of the CSI services to the suite.
func describeSecretCanary() {
	describe(CheckSecretCanary, func(sc *sanity.TestContext, f *fixture) {
		ctx := context.Background()
		var c *canary
		BeforeEach(func() {
			c = newCanary()
			f.dialCanary(c)
		})
		It(itCanaryController, func() { canaryControllerSpec(ctx, sc, f, c) })
		It(itCanaryNode, func() { canaryNodeSpec(ctx, sc, f, c) })
	})
}

// canaryControllerSpec is the spec named by itCanaryController.
func canaryControllerSpec(ctx context.Context, sc *sanity.TestContext, f *fixture, c *canary) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)

	req := f.createVolumeReq("csikit-canary")
	vol := f.createVolumeStep(ctx, "CreateVolume", req)
	f.createVolumeStep(ctx, "CreateVolume repeated", req)
	id := vol.GetVolumeId()
	expanded := false // the volume snapshotted below was expanded first

	canaryErrorPaths(ctx, sc, f, c, req)

	By("validating capabilities")
	_, err := f.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: id, VolumeContext: vol.GetVolumeContext(), VolumeCapabilities: []*csi.VolumeCapability{f.volumeCapability()}})
	Expect(err).NotTo(HaveOccurred(), "ValidateVolumeCapabilities")

	if f.caps.has(csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH) {
		ignore(f.ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id}))
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH) {
		ignore(f.ctrl.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{}))
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_MODIFY_VOLUME) {
		if params := sc.Config.TestVolumeMutableParameters; len(params) > 0 {
			_, err := f.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: id, MutableParameters: params})
			Expect(err).NotTo(HaveOccurred(), "ControllerModifyVolume")
		}
		ignore(f.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: id,
			MutableParameters: map[string]string{"csikit-unknown-key": "x"}}))
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME) {
		By("ControllerExpandVolume")
		_, err := f.ctrl.ControllerExpandVolume(ctx, sanity.MakeExpandVolumeReq(sc, id))
		Expect(err).NotTo(HaveOccurred(), "ControllerExpandVolume")
		expanded = true
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		By("publishing and unpublishing")
		if f.caps.nodeID != "" {
			f.publishStep(ctx, "ControllerPublishVolume", f.controllerPublishReq(vol))
			_, err := f.ctrl.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(sc, id, f.caps.nodeID))
			Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
		}
		wrongNode := f.controllerPublishReq(vol)
		wrongNode.NodeId = sc.Config.IDGen.GenerateUniqueValidNodeID()
		ignore(f.r.ControllerPublishVolume(ctx, wrongNode)) // NOT_FOUND
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		canarySnapshots(ctx, sc, f, id, expanded)
	}
	if f.caps.hasNode(csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH) {
		ignore(f.node.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{}))
	}

	By("deleting")
	for range 2 {
		_, err := f.r.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, id))
		Expect(err).NotTo(HaveOccurred(), "DeleteVolume")
	}
	f.verify(c)
}

// ignore drops a call's answer: on the canary's error paths only the leak check matters.
func ignore(any, error) {}

// canaryErrorPaths sends requests the driver must refuse, each carrying secrets: a refusal's
// error, log line or event must not leak them either.
func canaryErrorPaths(ctx context.Context, sc *sanity.TestContext, f *fixture, c *canary, req *csi.CreateVolumeRequest) {
	By("taking error paths with secrets")
	bigger := proto.Clone(req).(*csi.CreateVolumeRequest)
	bigger.CapacityRange = &csi.CapacityRange{RequiredBytes: 2*sc.Config.TestVolumeSize + 1}
	ignore(f.r.CreateVolume(ctx, bigger)) // same name, other size: ALREADY_EXISTS
	nocaps := f.createVolumeReq("csikit-canary-nocaps")
	nocaps.VolumeCapabilities = nil
	ignore(f.r.CreateVolume(ctx, nocaps)) // INVALID_ARGUMENT
	badKey := f.createVolumeReq("csikit-canary-badkey")
	badKey.Secrets = map[string]string{"not a valid key!": c.value("CreateVolume (under an invalid key)")}
	ignore(f.r.CreateVolume(ctx, badKey))
	ignore(f.ctrl.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: sc.Config.IDGen.GenerateUniqueValidVolumeID(), VolumeCapabilities: []*csi.VolumeCapability{f.volumeCapability()}}))
}

// canarySnapshots snapshots the volume id, restores and deletes the snapshot, taking the error
// paths of each call; expanded says the volume was expanded first.
func canarySnapshots(ctx context.Context, sc *sanity.TestContext, f *fixture, id string, expanded bool) {
	of := "the volume"
	if expanded {
		of = "the expanded volume"
	}
	sreq := sanity.MakeCreateSnapshotReq(sc, sanity.UniqueString("csikit-canary-snap"), id)
	snap := f.createSnapshotStep(ctx, "CreateSnapshot of "+of, sreq).GetSnapshot()
	f.createSnapshotStep(ctx, "CreateSnapshot of "+of+" repeated", sreq)
	ignore(f.r.CreateSnapshot(ctx, sanity.MakeCreateSnapshotReq(sc, sanity.UniqueString("csikit-canary-snap-none"),
		sc.Config.IDGen.GenerateUniqueValidVolumeID())))
	if f.caps.has(csi.ControllerServiceCapability_RPC_GET_SNAPSHOT) {
		_, err := f.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.GetSnapshotId()})
		Expect(err).NotTo(HaveOccurred(), "GetSnapshot")
		ignore(f.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: "csikit-no-such-snapshot"}))
	}
	if f.caps.has(csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS) {
		for _, lreq := range []*csi.ListSnapshotsRequest{{}, {SnapshotId: snap.GetSnapshotId()}, {SourceVolumeId: id}, {MaxEntries: 1},
			{StartingToken: sc.Config.TestInvalidListVolumesStartingToken}} {
			ignore(f.ctrl.ListSnapshots(ctx, lreq))
		}
	}
	restore := f.createVolumeReq("csikit-canary-restore")
	restore.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshotId()}}}
	restored := f.createVolumeStep(ctx, "CreateVolume from a snapshot of "+of, restore)
	By("DeleteVolume of the restored volume")
	_, err := f.r.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, restored.GetVolumeId()))
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume of the volume restored from a snapshot of %s", of)
	missing := f.createVolumeReq("csikit-canary-nosource")
	missing.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "csikit-no-such-snapshot"}}}
	ignore(f.r.CreateVolume(ctx, missing)) // NOT_FOUND

	if f.caps.plugin[csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE] {
		canarySnapshotMetadata(ctx, f, snap.GetSnapshotId())
	}
	if f.caps.group {
		canaryGroupSnapshot(ctx, f, id)
	}

	for range 2 {
		_, err := f.r.DeleteSnapshot(ctx, sanity.MakeDeleteSnapshotReq(sc, snap.GetSnapshotId()))
		Expect(err).NotTo(HaveOccurred(), "DeleteSnapshot")
	}
}

// canarySnapshotMetadata reads the allocated blocks of a snapshot and its delta to itself.
func canarySnapshotMetadata(ctx context.Context, f *fixture, snapID string) {
	By("reading snapshot metadata")
	if st, err := f.meta.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: snapID}); err == nil {
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
	}
	if st, err := f.meta.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: snapID, TargetSnapshotId: snapID}); err == nil {
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
	}
}

// canaryGroupSnapshot snapshots a group of the volume id, repeats the call and deletes it twice.
func canaryGroupSnapshot(ctx context.Context, f *fixture, id string) {
	By("snapshotting a group")
	greq := &csi.CreateVolumeGroupSnapshotRequest{Name: sanity.UniqueString("csikit-canary-group"), SourceVolumeIds: []string{id}}
	g, err := f.group.CreateVolumeGroupSnapshot(ctx, greq)
	Expect(err).NotTo(HaveOccurred(), "CreateVolumeGroupSnapshot")
	var members []string
	for _, s := range g.GetGroupSnapshot().GetSnapshots() {
		members = append(members, s.GetSnapshotId())
	}
	gid := g.GetGroupSnapshot().GetGroupSnapshotId()
	ignore(f.group.CreateVolumeGroupSnapshot(ctx, greq))
	ignore(f.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: members}))
	for range 2 {
		_, err := f.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: members})
		Expect(err).NotTo(HaveOccurred(), "DeleteVolumeGroupSnapshot")
	}
	ignore(f.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: members}))
}

// canaryNodeSpec is the spec named by itCanaryNode.
func canaryNodeSpec(ctx context.Context, sc *sanity.TestContext, f *fixture, c *canary) {
	f.caps.require(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME)
	f.requireNode()
	ignore := func(any, error) {}
	vol := f.mustCreateVolume("csikit-canary-node")
	id := vol.GetVolumeId()
	pc := f.controllerPublish(vol)
	staging := ""
	if f.caps.hasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		staging = sc.StagingPath
		for range 2 {
			_, err := f.node.NodeStageVolume(ctx, f.nodeStageReq(vol, pc))
			Expect(err).NotTo(HaveOccurred(), "NodeStageVolume")
		}
		missing := f.nodeStageReq(vol, pc)
		missing.VolumeId = sc.Config.IDGen.GenerateUniqueValidVolumeID()
		ignore(f.node.NodeStageVolume(ctx, missing)) // NOT_FOUND
	}
	for range 2 {
		_, err := f.node.NodePublishVolume(ctx, f.nodePublishReq(vol, pc, staging))
		Expect(err).NotTo(HaveOccurred(), "NodePublishVolume")
	}
	missing := f.nodePublishReq(vol, pc, staging)
	missing.VolumeId = sc.Config.IDGen.GenerateUniqueValidVolumeID()
	missing.TargetPath = sc.TargetPath + "/other_target"
	ignore(f.node.NodePublishVolume(ctx, missing)) // NOT_FOUND

	if f.caps.hasNode(csi.NodeServiceCapability_RPC_GET_VOLUME_STATS) {
		_, err := f.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: f.targetPath(), StagingTargetPath: staging})
		Expect(err).NotTo(HaveOccurred(), "NodeGetVolumeStats")
	}
	if f.caps.hasNode(csi.NodeServiceCapability_RPC_EXPAND_VOLUME) {
		size := sc.Config.TestVolumeSize
		if f.caps.has(csi.ControllerServiceCapability_RPC_EXPAND_VOLUME) {
			resp, err := f.ctrl.ControllerExpandVolume(ctx, sanity.MakeExpandVolumeReq(sc, id))
			Expect(err).NotTo(HaveOccurred(), "ControllerExpandVolume")
			size = resp.GetCapacityBytes()
		}
		_, err := f.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: f.targetPath(), StagingTargetPath: staging,
			CapacityRange: &csi.CapacityRange{RequiredBytes: size}, VolumeCapability: f.volumeCapability()})
		Expect(err).NotTo(HaveOccurred(), "NodeExpandVolume")
	}
	if f.caps.hasNode(csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH) {
		ignore(f.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id, VolumePublishPath: f.targetPath(), StagingTargetPath: staging}))
	}

	By("tearing down")
	_, err := f.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: f.targetPath()})
	Expect(err).NotTo(HaveOccurred(), "NodeUnpublishVolume")
	if staging != "" {
		_, err := f.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
		Expect(err).NotTo(HaveOccurred(), "NodeUnstageVolume")
	}
	if pc != nil || f.caps.has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		_, err := f.ctrl.ControllerUnpublishVolume(ctx, sanity.MakeControllerUnpublishVolumeReq(sc, id, f.caps.nodeID))
		Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume")
	}
	_, err = f.r.DeleteVolume(ctx, sanity.MakeDeleteVolumeReq(sc, id))
	Expect(err).NotTo(HaveOccurred(), "DeleteVolume")
	f.verify(c)
}
