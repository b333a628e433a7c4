// Package kubesuite describes a CSI driver to Kubernetes' storage e2e suite (e2e.test built from
// k8s.io/kubernetes, -storage.testdriver=FILE, focus External.Storage), the suite every serious
// CSI driver runs in its CI: Describe asks the running driver what it advertises and writes the
// definition file the suite reads, so that the suite tests exactly that. It links no test
// framework: csictl uses it, and so can a driver's own tooling.
package kubesuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Options says what Kubernetes' storage e2e suite must know of a driver that the
// driver's CSI answers do not tell: how its volumes are made and where they can be used. The
// zero value describes a driver of filesystem volumes in the default fs type, reachable from
// every node, with one StorageClass of no parameters.
type Options struct {
	// StorageClassParameters are the parameters of the StorageClass the suite provisions with;
	// none: the suite makes a class of no parameters itself.
	StorageClassParameters map[string]string
	// ImmediateBinding keeps the suite's StorageClass at Immediate volume binding. By default a
	// driver with topology or capacity gets WaitForFirstConsumer, as such a driver is deployed:
	// csi-provisioner publishes capacity only for such classes (unless it runs with
	// --capacity-for-immediate-binding), and an Immediate class cannot place a volume where
	// the pod will run.
	ImmediateBinding bool
	// SnapshotClassParameters likewise for the VolumeSnapshotClass.
	SnapshotClassParameters map[string]string
	// ModifyParameters are the parameters of the VolumeAttributesClass the volume-modify tests
	// create volumes with (CreateVolume's mutable_parameters) and move volumes to
	// (ControllerModifyVolume): keys and values the driver accepts in both. Those tests run only
	// with some; Describe refuses them when the driver does not advertise MODIFY_VOLUME. The
	// suite also checks that a class of the key "xxInvalidParameterKey" fails with a modify
	// error and that the volume then recovers to this class.
	ModifyParameters map[string]string
	// FSTypes are the fs types a StorageClass may name; "" is the driver's default. None: "" only.
	FSTypes []string
	// MinSize and MaxSize bound the sizes the suite asks for, as Kubernetes quantities ("1Mi").
	// MinSize must be a size the driver provisions exactly (drivers that round up name the
	// rounded size). Defaults: 1Mi and the suite's own maximum.
	MinSize, MaxSize string
	// MaxFileSize is the largest file the volumeIO suite writes into a volume, a Kubernetes
	// quantity of whole bytes: it writes 1Mi, 100Mi and 1Gi files up to it. None: the suite's
	// default, 0, with which "should write files of various sizes" writes no file at all.
	MaxFileSize string
	// Stress enables the [Slow] stress suites at this scale; the zero value leaves them
	// skipped, as the suite does for a definition without them.
	Stress Stress
	// Block: volumes can be raw block devices (volumeMode: Block). CSI has no capability for it.
	Block bool
	// FSGroup: the volume's files can be given the pod's fsGroup (kubelet changes ownership, or
	// the driver applies VolumeCapability's mount group).
	FSGroup bool
	// NoExec: files in the volume cannot be executed (a noexec mount).
	NoExec bool
	// MultiNode: ReadWriteMany volumes, usable from several nodes at once; ReadOnlyMany likewise
	// for ReadOnlyMany.
	MultiNode, ReadOnlyMany bool
	// SingleNodeVolumes: a volume lives on one node and is usable only there (hostpath).
	SingleNodeVolumes bool
	// FSResizeFromSourceNotSupported: a volume restored or cloned into a larger size keeps its
	// source's file-system size (directory volumes that report the host's file system, say).
	FSResizeFromSourceNotSupported bool
	// InlineVolumes enable the CSI ephemeral inline volume tests: each is the volume_context of
	// one inline volume the driver accepts (the CSIDriver object must list Ephemeral).
	InlineVolumes []InlineVolume
	// Capabilities set or clear any capability by the suite's own name after the driver's
	// answers were read, for what the deployment decides rather than the driver (for example
	// "capacity": false when the provisioner runs without --enable-capacity). A name the suite
	// does not have is refused (see Validate).
	Capabilities map[string]bool
	// Timeouts override the suite's timeouts by name, each a Go duration ("PodStart": "10m").
	Timeouts map[string]string
}

// Stress is the scale of the suite's stress tests (volume-stress, snapshottable-stress,
// volume-modify-stress, volumegroupsnapshottable-stress), all [Slow] and some [Serial].
// volume-modify-stress is left out with a WaitForFirstConsumer StorageClass, whose claims it
// cannot modify (it never starts their pods, so they never bind). Pods
// enables them; each that runs needs the count it uses to be positive (Snapshots only for a
// driver that snapshots), as the suite fails a test whose count is not.
type Stress struct {
	// Pods is how many pods (and volumes) each stress test creates.
	Pods int
	// Restarts is how many times volume-stress restarts each pod.
	Restarts int
	// Snapshots is how many snapshots snapshottable-stress takes of each volume, and how
	// many group snapshots volumegroupsnapshottable-stress takes.
	Snapshots int
}

// InlineVolume is one CSI ephemeral inline volume of Options.
type InlineVolume struct {
	// Attributes become NodePublishVolumeRequest.volume_context.
	Attributes map[string]string `json:"Attributes,omitempty"`
	// Shared: two pods given this volume see each other's changes.
	Shared bool `json:"Shared,omitempty"`
	// ReadOnly: the driver publishes it read-only only.
	ReadOnly bool `json:"ReadOnly,omitempty"`
}

// Definition is the file e2e.test reads with -storage.testdriver (the
// driverDefinition of k8s.io/kubernetes/test/e2e/storage/external, v1.36), field for field as
// that decoder spells them: it decodes case-sensitively. Classes with parameters are written
// beside it by WriteFiles and named here by path.
type Definition struct {
	// StorageClass is the class the suite provisions with: FromName without parameters.
	StorageClass ClassRef `json:"StorageClass"`
	// SnapshotClass enables the snapshot tests; empty when the driver does not snapshot.
	SnapshotClass ClassRef `json:"SnapshotClass,omitzero"`
	// GroupSnapshotClass enables the group snapshot tests; empty without group snapshots.
	GroupSnapshotClass ClassRef `json:"GroupSnapshotClass,omitzero"`
	// VolumeAttributesClass enables the volume-modify tests; empty unless the driver advertises
	// MODIFY_VOLUME and Options.ModifyParameters name what to change.
	VolumeAttributesClass ClassRef `json:"VolumeAttributesClass,omitzero"`
	// InlineVolumes enable the CSI ephemeral inline volume tests (Options.InlineVolumes).
	InlineVolumes []InlineVolume `json:"InlineVolumes,omitempty"`
	// DriverInfo is the driver's name, sizes, fs types, capabilities and topology keys.
	DriverInfo DriverInfo `json:"DriverInfo"`
	// Timeouts override the suite's timeouts by name (Options.Timeouts).
	Timeouts map[string]string `json:"Timeouts,omitempty"`

	// classes are the class objects to write, by the field naming them.
	classes map[string]map[string]any
}

// ClassRef is how the definition names a class: FromName (the suite makes one of no parameters
// for the driver) or FromFile (a class written by WriteFiles).
type ClassRef struct {
	// FromName: the suite makes a class of no parameters with the driver's name.
	FromName bool `json:"FromName,omitempty"`
	// FromFile is the class's file; before WriteFiles, the name of the Definition field.
	FromFile string `json:"FromFile,omitempty"`
}

// DriverInfo is the suite's DriverInfo: the driver's name, what it supports, and the
// capabilities by the suite's names (persistence, block, fsGroup, snapshotDataSource, ...).
type DriverInfo struct {
	// Name is the driver's name from GetPluginInfo: the provisioner of the suite's classes.
	Name string `json:"Name"`
	// SupportedSizeRange bounds the sizes the suite asks for (Options.MinSize, MaxSize).
	SupportedSizeRange SizeRange `json:"SupportedSizeRange"`
	// SupportedFsType is a set, written as the suite's sets.String decodes: {"ext4": {}}.
	SupportedFsType map[string]struct{} `json:"SupportedFsType"`
	// Capabilities are every capability the suite knows, on or off, by its own names.
	Capabilities map[string]bool `json:"Capabilities"`
	// TopologyKeys are the keys of the node's accessible topology, when the driver advertises
	// VOLUME_ACCESSIBILITY_CONSTRAINTS.
	TopologyKeys []string `json:"TopologyKeys,omitempty"`
	// MaxFileSize is Options.MaxFileSize in bytes.
	MaxFileSize int64 `json:"MaxFileSize,omitempty"`
	// StressTestOptions scale volume-stress (Options.Stress).
	StressTestOptions *StressTestOptions `json:"StressTestOptions,omitempty"`
	// VolumeSnapshotStressTestOptions scale snapshottable-stress, for a driver that snapshots.
	VolumeSnapshotStressTestOptions *SnapshotStressTestOptions `json:"VolumeSnapshotStressTestOptions,omitempty"`
	// VolumeModifyStressTestOptions scale volume-modify-stress, with a VolumeAttributesClass.
	VolumeModifyStressTestOptions *ModifyStressTestOptions `json:"VolumeModifyStressTestOptions,omitempty"`
	// VolumeGroupSnapshotStressTestOptions scale volumegroupsnapshottable-stress, for a driver
	// with group snapshots.
	VolumeGroupSnapshotStressTestOptions *SnapshotStressTestOptions `json:"VolumeGroupSnapshotStressTestOptions,omitempty"`
}

// StressTestOptions is the suite's StressTestOptions: pods created, restarts of each.
type StressTestOptions struct {
	// NumPods is how many pods, each with a volume of its own, volume-stress runs at once.
	NumPods int `json:"NumPods"`
	// NumRestarts is how many times volume-stress restarts each pod on its volume.
	NumRestarts int `json:"NumRestarts"`
}

// SnapshotStressTestOptions is the suite's VolumeSnapshotStressTestOptions and
// VolumeGroupSnapshotStressTestOptions: pods (volumes) created, snapshots taken.
type SnapshotStressTestOptions struct {
	// NumPods is how many pods, each with a volume of its own, the test creates.
	NumPods int `json:"NumPods"`
	// NumSnapshots is how many snapshots of each volume (or group snapshots) it takes.
	NumSnapshots int `json:"NumSnapshots"`
}

// ModifyStressTestOptions is the suite's VolumeModifyStressTestOptions: pods created.
type ModifyStressTestOptions struct {
	// NumPods is how many pods, each with a volume of the VolumeAttributesClass, it creates.
	NumPods int `json:"NumPods"`
}

// SizeRange is a size range as Kubernetes quantities ("1Mi").
type SizeRange struct {
	// Min is the smallest size the suite asks for.
	Min string `json:"Min,omitempty"`
	// Max is the largest; empty: the suite's own.
	Max string `json:"Max,omitempty"`
}

// Describe asks the CSI driver behind conn, which serves the controller and the node service
// together, what it offers (GetPluginInfo, the plugin, controller, node and group controller
// capabilities, NodeGetInfo) and combines it with o into the definition Kubernetes' storage e2e
// suite runs against, so that the suite tests exactly what the driver advertises: snapshots
// when it creates snapshots, clones when it clones, expansion as its VolumeExpansion says,
// topology with the keys its node reports, volume limits when the node has one,
// ReadWriteOncePod with SINGLE_NODE_MULTI_WRITER. Persistence, multiple pods on one node and
// several PVs of one volume ID are always on: a csikit driver sees only CSI calls. Write it with
// WriteFiles. A driver deployed as two processes is described by DescribeSplit.
func Describe(ctx context.Context, conn grpc.ClientConnInterface, o Options) (*Definition, error) {
	return describe(ctx, conn, conn, false, o)
}

// DescribeSplit is Describe for a driver deployed as Kubernetes deploys most: the controller
// service in one process (the socket csi-provisioner, csi-attacher, csi-resizer and
// csi-snapshotter share) and the node service in another on every node (the socket kubelet
// reaches). The plugin capabilities (controller service, topology, expansion type, group
// controller, snapshot metadata) and the controller and group controller capabilities are the
// controller's answers, as the sidecars read them; the node capabilities, topology keys and
// volume limit are the node's, as kubelet reads them. Both must name the same driver in
// GetPluginInfo: anything else is two drivers, an error.
func DescribeSplit(ctx context.Context, controller, node grpc.ClientConnInterface, o Options) (*Definition, error) {
	return describe(ctx, controller, node, true, o)
}

// describe is Describe (split false: one connection serves both) and DescribeSplit; split only
// changes which endpoint an error names.
func describe(ctx context.Context, ctrlConn, nodeConn grpc.ClientConnInterface, split bool, o Options) (*Definition, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &probe{ctrlConn: ctrlConn, nodeConn: nodeConn, split: split, modifyParams: len(o.ModifyParameters) > 0}
	if split {
		p.ctrlName, p.nodeName = "the controller endpoint: ", "the node endpoint: "
	}
	for _, step := range []func(context.Context) error{p.readIdentity, p.readController, p.readNode, p.readGroupController} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return p.definition(o)
}

// probe is what describe learns from the driver: its name and what each endpoint advertises.
// ctrlName and nodeName prefix the errors of a split deployment with the endpoint that answered.
type probe struct {
	ctrlConn, nodeConn grpc.ClientConnInterface
	split              bool
	ctrlName, nodeName string
	// modifyParams says the options give ModifyParameters, which need MODIFY_VOLUME.
	modifyParams bool

	name                              string
	hasController, hasGroup, topology bool
	expansion                         csi.PluginCapability_VolumeExpansion_Type
	ctrl                              map[csi.ControllerServiceCapability_RPC_Type]bool
	node                              map[csi.NodeServiceCapability_RPC_Type]bool
	nodeInfo                          *csi.NodeGetInfoResponse
	group                             bool
}

// readIdentity reads the driver's name (the same from both endpoints of a split deployment) and its
// plugin capabilities.
func (p *probe) readIdentity(ctx context.Context) error {
	info, err := csi.NewIdentityClient(p.ctrlConn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return fmt.Errorf("%sGetPluginInfo: %w", p.ctrlName, err)
	}
	p.name = info.GetName()
	if p.split {
		nodeInfo, err := csi.NewIdentityClient(p.nodeConn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		if err != nil {
			return fmt.Errorf("%sGetPluginInfo: %w", p.nodeName, err)
		}
		if nodeInfo.GetName() != p.name {
			return fmt.Errorf("the controller endpoint serves driver %q but the node endpoint serves %q: they are not one driver's processes",
				p.name, nodeInfo.GetName())
		}
	}
	pcaps, err := csi.NewIdentityClient(p.ctrlConn).GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return fmt.Errorf("%sGetPluginCapabilities: %w", p.ctrlName, err)
	}
	for _, c := range pcaps.GetCapabilities() {
		switch c.GetService().GetType() {
		case csi.PluginCapability_Service_CONTROLLER_SERVICE:
			p.hasController = true
		case csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE:
			p.hasGroup = true
		case csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS:
			p.topology = true
		}
		if t := c.GetVolumeExpansion().GetType(); t != csi.PluginCapability_VolumeExpansion_UNKNOWN {
			p.expansion = t
		}
	}
	return nil
}

// readController reads the controller capabilities: the suite provisions every volume it tests,
// and a VolumeAttributesClass needs MODIFY_VOLUME.
func (p *probe) readController(ctx context.Context) error {
	p.ctrl = map[csi.ControllerServiceCapability_RPC_Type]bool{}
	if p.hasController {
		resp, err := csi.NewControllerClient(p.ctrlConn).ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
		if err != nil {
			return fmt.Errorf("%sControllerGetCapabilities: %w", p.ctrlName, err)
		}
		for _, c := range resp.GetCapabilities() {
			p.ctrl[c.GetRpc().GetType()] = true
		}
	}
	if !p.ctrl[csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME] {
		return fmt.Errorf("%sthe driver does not advertise CREATE_DELETE_VOLUME: the storage suite provisions every volume it tests", p.ctrlName)
	}
	if p.modifyParams && !p.ctrl[csi.ControllerServiceCapability_RPC_MODIFY_VOLUME] {
		return fmt.Errorf("%sModifyParameters given, but the driver does not advertise MODIFY_VOLUME: the VolumeAttributesClass would only fail", p.ctrlName)
	}
	return nil
}

// readNode reads the node capabilities and NodeGetInfo (topology keys, volume limit).
func (p *probe) readNode(ctx context.Context) error {
	nodeClient := csi.NewNodeClient(p.nodeConn)
	p.node = map[csi.NodeServiceCapability_RPC_Type]bool{}
	resp, err := nodeClient.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		if p.split {
			return fmt.Errorf("%sNodeGetCapabilities: %w", p.nodeName, err)
		}
		return fmt.Errorf("NodeGetCapabilities (one endpoint must serve the controller and the node together; "+
			"a split deployment is described from both endpoints, DescribeSplit): %w", err)
	}
	for _, c := range resp.GetCapabilities() {
		p.node[c.GetRpc().GetType()] = true
	}
	if p.nodeInfo, err = nodeClient.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}); err != nil {
		return fmt.Errorf("%sNodeGetInfo: %w", p.nodeName, err)
	}
	return nil
}

// readGroupController reads whether the driver snapshots groups of volumes.
func (p *probe) readGroupController(ctx context.Context) error {
	if !p.hasGroup {
		return nil
	}
	resp, err := csi.NewGroupControllerClient(p.ctrlConn).GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	if err != nil && status.Code(err) != codes.Unimplemented {
		return fmt.Errorf("%sGroupControllerGetCapabilities: %w", p.ctrlName, err)
	}
	for _, c := range resp.GetCapabilities() {
		p.group = p.group || c.GetRpc().GetType() == csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT
	}
	return nil
}

// capabilities maps what the driver advertises, and what o says of it, to the suite's
// capability names; o.Capabilities has the last word.
func (p *probe) capabilities(o Options) map[string]bool {
	ctrl, node := p.ctrl, p.node
	snapshots := ctrl[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT]
	expands := p.expansion != csi.PluginCapability_VolumeExpansion_UNKNOWN && ctrl[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME]
	mountGroup := node[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP]
	group, expansion, nodeInfo, topology := p.group, p.expansion, p.nodeInfo, p.topology
	caps := map[string]bool{
		"persistence":        true,
		"exec":               !o.NoExec,
		"multipods":          true,
		"multiplePVsSameID":  true,
		"block":              o.Block,
		"fsGroup":            o.FSGroup || mountGroup,
		"volumeMountGroup":   mountGroup,
		"snapshotDataSource": snapshots,
		"pvcDataSource":      ctrl[csi.ControllerServiceCapability_RPC_CLONE_VOLUME],
		"groupSnapshot":      group,
		// Off whatever the driver advertises: v1.36.1's snapshot-metadata specs need the namespace
		// of a driver the suite deployed itself (PerTestConfig.DriverNamespace), which an
		// external definition has no field for, so each spec ends in a nil pointer
		// (snapshot-metadata.go:312). Options.Capabilities can turn it on for a later suite.
		"snapshotMetadata":    false,
		"RWX":                 o.MultiNode,
		"capReadOnlyMany":     o.ReadOnlyMany,
		"controllerExpansion": expands,
		"nodeExpansion":       node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME],
		// ONLINE lets a published volume grow; either kind grows one no pod uses.
		"onlineExpansion":                expands && expansion == csi.PluginCapability_VolumeExpansion_ONLINE,
		"offlineExpansion":               expands,
		"volumeLimits":                   nodeInfo.GetMaxVolumesPerNode() > 0,
		"singleNodeVolume":               o.SingleNodeVolumes,
		"topology":                       topology,
		"capacity":                       ctrl[csi.ControllerServiceCapability_RPC_GET_CAPACITY],
		"readWriteOncePod":               ctrl[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER] && node[csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER],
		"FSResizeFromSourceNotSupported": o.FSResizeFromSourceNotSupported,
		"seLinuxMount":                   false,
	}
	for k, v := range o.Capabilities {
		caps[k] = v
	}
	return caps
}

// definition builds the suite's definition of the probed driver: its DriverInfo, classes and
// stress options.
func (p *probe) definition(o Options) (*Definition, error) {
	caps := p.capabilities(o)
	d := &Definition{
		DriverInfo: DriverInfo{
			Name:               p.name,
			SupportedSizeRange: SizeRange{Min: o.MinSize, Max: o.MaxSize},
			SupportedFsType:    map[string]struct{}{},
			Capabilities:       caps,
		},
		InlineVolumes: o.InlineVolumes,
		Timeouts:      o.Timeouts,
		classes:       map[string]map[string]any{},
	}
	if d.DriverInfo.SupportedSizeRange.Min == "" {
		d.DriverInfo.SupportedSizeRange.Min = "1Mi"
	}
	fsTypes := o.FSTypes
	if len(fsTypes) == 0 {
		fsTypes = []string{""}
	}
	for _, fs := range fsTypes {
		d.DriverInfo.SupportedFsType[fs] = struct{}{}
	}
	if p.topology {
		for k := range p.nodeInfo.GetAccessibleTopology().GetSegments() {
			d.DriverInfo.TopologyKeys = append(d.DriverInfo.TopologyKeys, k)
		}
		sort.Strings(d.DriverInfo.TopologyKeys)
		if len(d.DriverInfo.TopologyKeys) == 0 {
			return nil, fmt.Errorf("%sthe driver advertises VOLUME_ACCESSIBILITY_CONSTRAINTS but NodeGetInfo reports no accessible topology: the suite needs the topology keys", p.nodeName)
		}
	}
	waitForConsumer := !o.ImmediateBinding && (p.topology || caps["capacity"])
	p.classes(d, o, waitForConsumer)
	if o.MaxFileSize != "" {
		q, _ := parseQuantity(o.MaxFileSize) // Validate accepted it: whole bytes within int64
		d.DriverInfo.MaxFileSize = q.Num().Int64()
	}
	if err := p.stress(d, o, waitForConsumer); err != nil {
		return nil, err
	}
	return d, nil
}

// classes adds the storage, snapshot, group snapshot and volume attributes classes.
func (p *probe) classes(d *Definition, o Options, waitForConsumer bool) {
	name := p.name
	sc := map[string]any{
		"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
		"metadata":    map[string]any{"name": "csikit-e2e"},
		"provisioner": name, "parameters": o.StorageClassParameters,
	}
	if waitForConsumer {
		sc["volumeBindingMode"] = "WaitForFirstConsumer"
	}
	d.StorageClass = d.class("StorageClass", len(o.StorageClassParameters) > 0 || waitForConsumer, sc)
	if p.ctrl[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT] {
		d.SnapshotClass = d.class("SnapshotClass", len(o.SnapshotClassParameters) > 0, map[string]any{
			"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
			"metadata": map[string]any{"name": "csikit-e2e-snapshot"},
			"driver":   name, "deletionPolicy": "Delete", "parameters": o.SnapshotClassParameters,
		})
	}
	if p.group {
		d.GroupSnapshotClass = ClassRef{FromName: true}
	}
	if p.ctrl[csi.ControllerServiceCapability_RPC_MODIFY_VOLUME] && len(o.ModifyParameters) > 0 {
		d.VolumeAttributesClass = d.class("VolumeAttributesClass", true, map[string]any{
			"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
			"metadata":   map[string]any{"name": "csikit-e2e-modify"},
			"driverName": name, "parameters": o.ModifyParameters,
		})
	}
}

// stress sets the stress test options o asks for, each where the driver can run it.
func (p *probe) stress(d *Definition, o Options, waitForConsumer bool) error {
	snapshots, group := p.ctrl[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT], p.group
	if st := o.Stress; st.Pods > 0 {
		if (snapshots || group) && st.Snapshots == 0 {
			// The suite fails (not skips) a snapshot stress test of no snapshots.
			return fmt.Errorf("Stress %+v: the driver snapshots, so the snapshot stress tests need Snapshots too", st)
		}
		di := &d.DriverInfo
		di.StressTestOptions = &StressTestOptions{NumPods: st.Pods, NumRestarts: st.Restarts}
		if snapshots {
			di.VolumeSnapshotStressTestOptions = &SnapshotStressTestOptions{NumPods: st.Pods, NumSnapshots: st.Snapshots}
		}
		if d.VolumeAttributesClass.FromFile != "" && !waitForConsumer {
			// volume-modify-stress (v1.36.1) makes its claims but never creates their pods,
			// then sets a VolumeAttributesClass on each: with WaitForFirstConsumer the claims
			// never bind, and Kubernetes refuses that change on an unbound claim. Left out,
			// the suite skips it and says why ("doesn't specify volume modify stress test
			// options") instead of failing the driver for its binding mode.
			di.VolumeModifyStressTestOptions = &ModifyStressTestOptions{NumPods: st.Pods}
		}
		if group {
			di.VolumeGroupSnapshotStressTestOptions = &SnapshotStressTestOptions{NumPods: st.Pods, NumSnapshots: st.Snapshots}
		}
	}
	return nil
}

// class is FromName, or, when the class has parameters, FromFile with the object kept for
// WriteFiles (the path is filled in there).
func (d *Definition) class(field string, withParameters bool, obj map[string]any) ClassRef {
	if !withParameters {
		return ClassRef{FromName: true}
	}
	d.classes[field] = obj
	return ClassRef{FromFile: field}
}

// WriteFiles writes the definition to dir/testdriver.json, and each class it loads from a file
// beside it (storageclass.json, ...), named by absolute path so that e2e.test finds them
// whatever its --repo-root. It returns the definition's path, for -storage.testdriver. JSON is
// YAML, so the suite reads these files as it reads YAML ones.
func (d *Definition) WriteFiles(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("test driver directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("test driver directory: %w", err)
	}
	out := *d
	refs := map[string]*ClassRef{
		"StorageClass": &out.StorageClass, "SnapshotClass": &out.SnapshotClass,
		"VolumeAttributesClass": &out.VolumeAttributesClass,
	}
	fields := make([]string, 0, len(d.classes))
	for f := range d.classes {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, field := range fields {
		path := filepath.Join(dir, lowerFirst(field)+".json")
		if err := writeJSON(path, d.classes[field]); err != nil {
			return "", err
		}
		refs[field].FromFile = path
	}
	path := filepath.Join(dir, "testdriver.json")
	if err := writeJSON(path, &out); err != nil {
		return "", err
	}
	return path, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}
