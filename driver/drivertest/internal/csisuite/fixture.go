package csisuite

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
)

// Fixture is what one csikit spec works with: clients that register volumes and snapshots for
// cleanup, and the plugin's capabilities. Describe makes one per spec group and sets it up
// before each spec.
type Fixture struct {
	// SC is csi-sanity's context of the spec: its configuration, paths and secrets.
	SC *sanity.TestContext
	// R creates through csi-sanity's resource tracking, so what it makes is cleaned up.
	R *sanity.Resources
	// Ctrl is the raw controller client, for calls that must not be registered for cleanup.
	Ctrl csi.ControllerClient
	// Node, Group, Identity and Meta are the clients of the other CSI services.
	Node     csi.NodeClient
	Group    csi.GroupControllerClient
	Identity csi.IdentityClient
	Meta     csi.SnapshotMetadataClient
	// Caps is what the plugin advertised when the spec started.
	Caps Capabilities

	run      Run
	cleanups []func() // before the registered resources are released
	closers  []func() // after
}

func (f *Fixture) setup(ctrlConn, nodeConn grpc.ClientConnInterface) {
	f.Ctrl = csi.NewControllerClient(ctrlConn)
	f.Node = csi.NewNodeClient(nodeConn)
	f.Group = csi.NewGroupControllerClient(ctrlConn)
	f.Identity = csi.NewIdentityClient(ctrlConn)
	f.Meta = csi.NewSnapshotMetadataClient(ctrlConn)
	f.R = &sanity.Resources{Context: f.SC, ControllerClient: f.Ctrl, NodeClient: f.Node, GroupControllerClient: f.Group}
	f.Caps = probe(f.Identity, f.Ctrl, f.Node, f.Group)
	f.cleanups = nil
}

// OnEnd runs fn when the spec ends, before the registered volumes and snapshots are deleted.
func (f *Fixture) OnEnd(fn func()) { f.cleanups = append(f.cleanups, fn) }

// After runs fn when the spec ends, after the registered volumes and snapshots are deleted.
func (f *Fixture) After(fn func()) { f.closers = append(f.closers, fn) }

// wait and poll bound the wait for a snapshot to become ready.
const (
	wait = 2 * time.Minute
	poll = time.Second
)

// CreateVolumeReq is csi-sanity's request (its size, parameters, capability and secrets), placed
// in the node's topology when the plugin reports one, as csi-sanity's lifecycle specs do.
func (f *Fixture) CreateVolumeReq(name string) *csi.CreateVolumeRequest {
	req := sanity.MakeCreateVolumeReq(f.SC, sanity.UniqueString(name))
	if f.Caps.Topology != nil && f.Caps.Plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] {
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{f.Caps.Topology}}
	}
	return req
}

// MustCreateVolume creates a volume named after name, as the step "CreateVolume <name>".
func (f *Fixture) MustCreateVolume(name string) *csi.Volume {
	GinkgoHelper()
	return f.CreateVolumeStep(context.Background(), "CreateVolume "+name, f.CreateVolumeReq(name))
}

// The step helpers are csi-sanity's Must* calls with the operation named: a spec runs many
// operations, and its failure says which one failed ("CreateVolume from a snapshot of an expanded
// volume: ...") and not only which spec, nor only csi-sanity's "volume create failed". Each also
// marks the step (By), so the spec's report shows how far it got. What they create is cleaned up
// as csi-sanity's own calls are.

// CreateVolumeStep is CreateVolume as the step named step.
func (f *Fixture) CreateVolumeStep(ctx context.Context, step string, req *csi.CreateVolumeRequest) *csi.Volume {
	GinkgoHelper()
	By(step)
	resp, err := f.R.CreateVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "%s", step)
	Expect(resp.GetVolume().GetVolumeId()).NotTo(BeEmpty(), "%s: the response has no volume ID", step)
	return resp.GetVolume()
}

// CreateSnapshotStep is CreateSnapshot as the step named step.
func (f *Fixture) CreateSnapshotStep(ctx context.Context, step string, req *csi.CreateSnapshotRequest) *csi.CreateSnapshotResponse {
	GinkgoHelper()
	By(step)
	resp, err := f.R.CreateSnapshot(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "%s", step)
	Expect(resp.GetSnapshot().GetSnapshotId()).NotTo(BeEmpty(), "%s: the response has no snapshot ID", step)
	return resp
}

// PublishStep is ControllerPublishVolume as the step named step.
func (f *Fixture) PublishStep(ctx context.Context, step string, req *csi.ControllerPublishVolumeRequest) *csi.ControllerPublishVolumeResponse {
	GinkgoHelper()
	By(step)
	resp, err := f.R.ControllerPublishVolume(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "%s", step)
	Expect(resp).NotTo(BeNil(), "%s: no response", step)
	return resp
}

// VolumeCapability is csi-sanity's capability of the run's access type, single node writer.
func (f *Fixture) VolumeCapability() *csi.VolumeCapability {
	return sanity.TestVolumeCapabilityWithAccessType(f.SC, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
}

// TargetPath is where csi-sanity's resource cleanup unpublishes, so a spec that publishes there
// is cleaned up even when it fails half-way.
func (f *Fixture) TargetPath() string { return f.SC.TargetPath + "/target" }
