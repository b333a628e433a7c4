package drivertest

import (
	"context"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// groupText is the container text of a csikit spec group; skipReason matches on it.
func groupText(c Check) string { return "csikit " + string(c) }

// activeRun returns the run the csikit specs belong to, or nil when the suite was started by
// something other than CSI or CSIEndpoint (the specs are registered with csi-sanity globally).
func activeRun() *run {
	currentMu.Lock()
	defer currentMu.Unlock()
	return current
}

// describe registers one group of csikit specs with csi-sanity, so they run in the same suite,
// with csi-sanity's per-spec setup, fresh directories and resource cleanup.
func describe(check Check, body func(sc *sanity.TestContext, f *fixture)) bool {
	return sanity.DescribeSanity(groupText(check), func(sc *sanity.TestContext) {
		f := &fixture{sc: sc}
		BeforeEach(func() {
			f.run = activeRun()
			if f.run == nil {
				Skip("csikit specs run only under drivertest.CSI or drivertest.CSIEndpoint")
			}
			f.setup(sc.ControllerConn, sc.Conn)
		})
		// Declared before csi-sanity's Teardown, so it runs first: resources are released
		// while their directories still exist.
		AfterEach(func() {
			defer func() { // also when a cleanup step fails the spec
				for _, fn := range f.closers {
					fn()
				}
				f.closers = nil
			}()
			if f.r == nil {
				return
			}
			for i := len(f.cleanups) - 1; i >= 0; i-- {
				f.cleanups[i]()
			}
			f.cleanups = nil
			f.r.Cleanup()
		})
		body(sc, f)
	})
}

// fixture is what one csikit spec works with: clients that register volumes and snapshots for
// cleanup, and the plugin's capabilities.
type fixture struct {
	sc       *sanity.TestContext
	run      *run
	r        *sanity.Resources
	ctrl     csi.ControllerClient // raw: calls that must not be registered for cleanup
	node     csi.NodeClient
	group    csi.GroupControllerClient
	identity csi.IdentityClient
	meta     csi.SnapshotMetadataClient
	caps     capabilities
	cleanups []func() // before the registered resources are released
	closers  []func() // after
}

func (f *fixture) setup(ctrlConn, nodeConn grpc.ClientConnInterface) {
	f.ctrl = csi.NewControllerClient(ctrlConn)
	f.node = csi.NewNodeClient(nodeConn)
	f.group = csi.NewGroupControllerClient(ctrlConn)
	f.identity = csi.NewIdentityClient(ctrlConn)
	f.meta = csi.NewSnapshotMetadataClient(ctrlConn)
	f.r = &sanity.Resources{Context: f.sc, ControllerClient: f.ctrl, NodeClient: f.node, GroupControllerClient: f.group}
	f.caps = probe(f.identity, f.ctrl, f.node, f.group)
	f.cleanups = nil
}

// onEnd runs fn when the spec ends, before the registered volumes and snapshots are deleted.
func (f *fixture) onEnd(fn func()) { f.cleanups = append(f.cleanups, fn) }

// after runs fn when the spec ends, after the registered volumes and snapshots are deleted.
func (f *fixture) after(fn func()) { f.closers = append(f.closers, fn) }

// wait and poll bound the wait for a snapshot to become ready.
const (
	wait = 2 * time.Minute
	poll = time.Second
)

// capabilities is what the plugin advertises.
type capabilities struct {
	plugin     map[csi.PluginCapability_Service_Type]bool
	controller map[csi.ControllerServiceCapability_RPC_Type]bool
	node       map[csi.NodeServiceCapability_RPC_Type]bool
	group      bool
	nodeID     string
	topology   *csi.Topology
}

func probe(id csi.IdentityClient, ctrl csi.ControllerClient, node csi.NodeClient, group csi.GroupControllerClient) capabilities {
	ctx := context.Background()
	c := capabilities{
		plugin:     map[csi.PluginCapability_Service_Type]bool{},
		controller: map[csi.ControllerServiceCapability_RPC_Type]bool{},
		node:       map[csi.NodeServiceCapability_RPC_Type]bool{},
	}
	pc, err := id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	Expect(err).NotTo(HaveOccurred(), "GetPluginCapabilities")
	for _, cp := range pc.GetCapabilities() {
		if s := cp.GetService(); s != nil {
			c.plugin[s.GetType()] = true
		}
	}
	if c.plugin[csi.PluginCapability_Service_CONTROLLER_SERVICE] {
		cc, err := ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
		Expect(err).NotTo(HaveOccurred(), "ControllerGetCapabilities")
		for _, cp := range cc.GetCapabilities() {
			c.controller[cp.GetRpc().GetType()] = true
		}
	}
	// The node service has no plugin capability; a controller-only plugin answers UNIMPLEMENTED.
	if nc, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{}); err == nil {
		for _, cp := range nc.GetCapabilities() {
			c.node[cp.GetRpc().GetType()] = true
		}
		if info, err := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err == nil {
			c.nodeID, c.topology = info.GetNodeId(), info.GetAccessibleTopology()
		}
	}
	if c.plugin[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE] {
		gc, err := group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
		Expect(err).NotTo(HaveOccurred(), "GroupControllerGetCapabilities")
		for _, cp := range gc.GetCapabilities() {
			if cp.GetRpc().GetType() == csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT {
				c.group = true
			}
		}
	}
	return c
}

func (c capabilities) has(cp csi.ControllerServiceCapability_RPC_Type) bool { return c.controller[cp] }

func (c capabilities) hasNode(cp csi.NodeServiceCapability_RPC_Type) bool { return c.node[cp] }

func (c capabilities) require(cp csi.ControllerServiceCapability_RPC_Type) {
	if !c.controller[cp] {
		Skip(cp.String() + " not advertised")
	}
}

// createVolumeReq is csi-sanity's request (its size, parameters, capability and secrets), placed
// in the node's topology when the plugin reports one, as csi-sanity's lifecycle specs do.
func (f *fixture) createVolumeReq(name string) *csi.CreateVolumeRequest {
	req := sanity.MakeCreateVolumeReq(f.sc, sanity.UniqueString(name))
	if f.caps.topology != nil && f.caps.plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] {
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{f.caps.topology}}
	}
	return req
}

func (f *fixture) mustCreateVolume(name string) *csi.Volume {
	GinkgoHelper()
	return f.createVolumeStep(context.Background(), "CreateVolume "+name, f.createVolumeReq(name))
}

// The step helpers are csi-sanity's Must* calls with the operation named: a spec runs many
// operations, and its failure says which one failed ("CreateVolume from a snapshot of an expanded
// volume: ...") and not only which spec, nor only csi-sanity's "volume create failed". Each also
// marks the step (By), so the spec's report shows how far it got. What they create is cleaned up
// as csi-sanity's own calls are.

// createVolumeStep is CreateVolume as the step named step.
func (f *fixture) createVolumeStep(ctx context.Context, step string, req *csi.CreateVolumeRequest) *csi.Volume {
	GinkgoHelper()
	By(step)
	resp, err := f.r.CreateVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "%s", step)
	Expect(resp.GetVolume().GetVolumeId()).NotTo(BeEmpty(), "%s: the response has no volume ID", step)
	return resp.GetVolume()
}

// createSnapshotStep is CreateSnapshot as the step named step.
func (f *fixture) createSnapshotStep(ctx context.Context, step string, req *csi.CreateSnapshotRequest) *csi.CreateSnapshotResponse {
	GinkgoHelper()
	By(step)
	resp, err := f.r.CreateSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "%s", step)
	Expect(resp.GetSnapshot().GetSnapshotId()).NotTo(BeEmpty(), "%s: the response has no snapshot ID", step)
	return resp
}

// publishStep is ControllerPublishVolume as the step named step.
func (f *fixture) publishStep(ctx context.Context, step string, req *csi.ControllerPublishVolumeRequest) *csi.ControllerPublishVolumeResponse {
	GinkgoHelper()
	By(step)
	resp, err := f.r.ControllerPublishVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "%s", step)
	Expect(resp).NotTo(BeNil(), "%s: no response", step)
	return resp
}

func (f *fixture) volumeCapability() *csi.VolumeCapability {
	return sanity.TestVolumeCapabilityWithAccessType(f.sc, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
}

// targetPath is where csi-sanity's resource cleanup unpublishes, so a spec that publishes there
// is cleaned up even when it fails half-way.
func (f *fixture) targetPath() string { return f.sc.TargetPath + "/target" }

// expectCode asserts an error with the given code.
func expectCode(err error, code codes.Code, what string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "%s: want %s, got success", what, code)
	Expect(status.Code(err)).To(Equal(code), "%s: want %s, got %v", what, code, err)
}

// sameAnswer asserts that two responses are equal, printing both when they are not.
func sameAnswer(what string, first, again proto.Message) {
	GinkgoHelper()
	Expect(proto.Equal(first, again)).To(BeTrue(), "%s answered differently when repeated:\nfirst: %s\nagain: %s",
		what, prototext.Format(first), prototext.Format(again))
}

// concurrently makes n identical calls at once and returns every answer.
func concurrently[T proto.Message](n int, call func() (T, error)) ([]T, []error) {
	res := make([]T, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res[i], errs[i] = call()
		}()
	}
	close(start)
	wg.Wait()
	return res, errs
}

// oneProceeds asserts the outcome of identical concurrent calls: each succeeded with the same
// answer or was ABORTED (the operation was pending), and at least one succeeded. It returns a
// successful answer.
func oneProceeds[T proto.Message](what string, res []T, errs []error) T {
	GinkgoHelper()
	var first T
	ok := 0
	for i, err := range errs {
		if err != nil {
			Expect(status.Code(err)).To(Equal(codes.Aborted), "%s: concurrent call %d failed with %v; want success or ABORTED", what, i, err)
			continue
		}
		if ok == 0 {
			first = res[i]
		} else {
			sameAnswer(what+" (concurrent)", first, res[i])
		}
		ok++
	}
	Expect(ok).To(BeNumerically(">", 0), "%s: all %d concurrent calls were ABORTED; the one holding the operation must succeed", what, len(errs))
	return first
}
