package plugin

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/volumegroup"
)

// CapabilityOverrides narrow the derived RPC capabilities and declare the services of a split
// plugin. New checks them at start-up. A listed capability whose RPC the backend does not
// implement is an error. An RPC the backend implements but the list leaves out answers
// UNIMPLEMENTED. The promise capabilities (CLONE_VOLUME, PUBLISH_READONLY, VOLUME_MOUNT_GROUP,
// the accessibility constraints, ...) are stated by [driver.Features] alone; a list that names
// one is refused.
type CapabilityOverrides struct {
	// Controller, when non-nil, lists the controller RPC capabilities served. The answer to
	// ControllerGetCapabilities is this list and the controller promises of Features.
	Controller []csi.ControllerServiceCapability_RPC_Type
	// Node, when non-nil, lists the node RPC capabilities served. The answer to
	// NodeGetCapabilities is this list and the node promises of Features.
	Node []csi.NodeServiceCapability_RPC_Type
	// Plugin, when non-nil, lists the services GetPluginCapabilities reports: CONTROLLER_SERVICE,
	// GROUP_CONTROLLER_SERVICE, SNAPSHOT_METADATA_SERVICE. The spec wants every process of a plugin
	// to report the same set. So a plugin whose controller and node run as separate processes
	// sets the same list, and an explicit Features.Expansion, in each. Without it, the list is
	// derived from the backends this process runs: right when one process serves everything. The
	// list must include the services this process serves. The answer to GetPluginCapabilities is
	// this list and the accessibility constraints of Features.
	Plugin []csi.PluginCapability_Service_Type
}

// capSet is the resolved capability state, indexed by the spec's enum values.
type capSet struct {
	plugin     [8]bool
	expansion  csi.PluginCapability_VolumeExpansion_Type
	controller [32]bool
	node       [16]bool
	group      bool
	features   driver.Features
}

// backendSet holds the configured backends. Which optional interfaces they implement is read
// from rpcTable; handlers assert the interface they call (see impl).
type backendSet struct {
	controller driver.Controller
	node       driver.Node
	group      driver.GroupController
	metadata   driver.SnapshotMetadata
	// volumeGroups serves the volumegroup.Controller service.
	volumeGroups volumegroup.Controller
	// buckets serves COSI's Provisioner service (every wire version configured).
	buckets bucket.Provisioner
	probers []driver.Prober
}

func discover(cfg *Config) backendSet {
	b := backendSet{controller: cfg.Controller, node: cfg.Node, group: cfg.GroupController, metadata: cfg.SnapshotMetadata}
	if cfg.VolumeGroups != nil {
		b.volumeGroups = cfg.VolumeGroups.Controller
	}
	if cfg.COSI != nil {
		b.buckets = cfg.COSI.Provisioner
	}
	var seen []any
	for _, v := range []any{b.controller, b.node, b.group, b.metadata, b.volumeGroups, b.buckets, cfg.Prober} {
		if v == nil || slices.ContainsFunc(seen, func(o any) bool { return sameBackend(o, v) }) {
			continue
		}
		seen = append(seen, v)
		if p, ok := v.(driver.Prober); ok {
			b.probers = append(b.probers, p)
		}
	}
	return b
}

// of returns the backend serving a service, or nil when none is configured. Identity is always
// served, by the library.
func (b *backendSet) of(svc service) any {
	switch svc {
	case svcController:
		if b.controller != nil {
			return b.controller
		}
	case svcNode:
		if b.node != nil {
			return b.node
		}
	case svcGroupController:
		if b.group != nil {
			return b.group
		}
	case svcSnapshotMetadata:
		if b.metadata != nil {
			return b.metadata
		}
	case svcVolumeGroup:
		if b.volumeGroups != nil {
			return b.volumeGroups
		}
	case svcCOSIProvisioner:
		if b.buckets != nil {
			return b.buckets
		}
	case svcIdentity:
		return b
	case svcCOSIIdentity:
		if b.buckets != nil {
			return b
		}
	}
	return nil
}

// servesCSI reports whether any CSI service has a backend, so that csi.v1.Identity is served: a
// COSI-only plugin does not pretend to be a CSI plugin.
func (b *backendSet) servesCSI() bool {
	return b.controller != nil || b.node != nil || b.group != nil || b.metadata != nil || b.volumeGroups != nil
}

// serves reports whether the configured backends can serve the RPC: its service has a backend,
// and that backend implements one of the interfaces the table names for it.
func (b *backendSet) serves(s *rpcSpec) bool {
	v := b.of(s.service)
	if v == nil {
		return false
	}
	if len(s.serves) == 0 {
		return true
	}
	t := reflect.TypeOf(v)
	for _, it := range s.serves {
		if t.Implements(it) {
			return true
		}
	}
	return false
}

// impl returns the backend as the optional interface T. Handlers call it only for RPCs whose
// guard has passed, so the assertion always holds there.
func impl[T any](v any) T {
	t, _ := v.(T)
	return t
}

// sameBackend reports whether two backend values are the same one, so a value serving several
// services is probed once. Values of incomparable types (a struct holding a map, say) are never
// compared with ==, which would panic.
func sameBackend(a, b any) (same bool) {
	// A comparable struct can still hold an interface whose value is not; == then panics.
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// deriveCapabilities resolves what the plugin advertises and checks it for consistency: the
// controller's capabilities, then the node's, the plugin's services, and the expansion mode,
// each of which may read what the ones before it resolved.
func deriveCapabilities(b *backendSet, f driver.Features, o CapabilityOverrides) (capSet, error) {
	d := &capDerivation{b: b, f: f, o: o, servedCtrl: map[ctrlCap]bool{}, servedNode: map[nodeCap]bool{}}
	for _, s := range rpcTable {
		if s.ctrlCap != 0 && b.serves(s) {
			d.servedCtrl[s.ctrlCap] = true
		}
		if s.nodeCap != 0 && b.serves(s) {
			d.servedNode[s.nodeCap] = true
		}
	}
	d.controllerCaps()
	d.nodeCaps()
	d.pluginCaps()
	d.expansion()
	d.c.features = d.f
	if len(d.problems) > 0 {
		return d.c, errors.New("inconsistent capabilities: " + strings.Join(d.problems, "; "))
	}
	return d.c, nil
}

type (
	ctrlCap = csi.ControllerServiceCapability_RPC_Type
	nodeCap = csi.NodeServiceCapability_RPC_Type
)

// capDerivation is one run of deriveCapabilities. An override list narrows the RPC capabilities
// derived for its service; the promises always come from f.
type capDerivation struct {
	b *backendSet
	f driver.Features
	o CapabilityOverrides
	c capSet
	// servedCtrl and servedNode are what the backends could serve, whatever the overrides say.
	servedCtrl map[ctrlCap]bool
	servedNode map[nodeCap]bool
	problems   []string
}

func (d *capDerivation) bad(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// The promise capabilities, by the Features field that states each. They are stated there and
// nowhere else: an override list that names one is refused, so one fact has one place.
var (
	controllerPromises = map[ctrlCap]string{
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME:                 "CloneVolume",
		csi.ControllerServiceCapability_RPC_PUBLISH_READONLY:             "PublishReadonly",
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES: "ListVolumesPublishedNodes",
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:     "SingleNodeMultiWriter",
	}
	nodePromises = map[nodeCap]string{
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER: "SingleNodeMultiWriter",
		csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:       "VolumeMountGroup",
	}
	pluginPromises = map[csi.PluginCapability_Service_Type]string{
		csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS:   "VolumeAccessibilityConstraints",
		csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS: "SnapshotAccessibilityConstraints",
	}
)

func (d *capDerivation) controllerCaps() {
	b, o, c := d.b, d.o, &d.c
	if b.controller == nil {
		if o.Controller != nil {
			d.bad("controller capability overrides given but no Controller backend is configured")
		}
		for _, ft := range []struct {
			name string
			on   bool
		}{{"CloneVolume", d.f.CloneVolume}, {"PublishReadonly", d.f.PublishReadonly}, {"ListVolumesPublishedNodes", d.f.ListVolumesPublishedNodes}} {
			if ft.on {
				d.bad("Features.%s is a controller capability but no Controller backend is configured (a node-only process of a split plugin leaves it false)", ft.name)
			}
		}
		return
	}
	if o.Controller == nil {
		for cp := range d.servedCtrl {
			c.controller[cp] = true
		}
	} else {
		d.controllerOverride()
	}
	c.controller[csi.ControllerServiceCapability_RPC_CLONE_VOLUME] = d.f.CloneVolume
	c.controller[csi.ControllerServiceCapability_RPC_PUBLISH_READONLY] = d.f.PublishReadonly
	c.controller[csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES] = d.f.ListVolumesPublishedNodes
	c.controller[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER] = d.f.SingleNodeMultiWriter
	for _, dep := range []struct {
		needs, on ctrlCap
		iface     string
	}{
		{csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME, "driver.ControllerPublisher"},
		{csi.ControllerServiceCapability_RPC_PUBLISH_READONLY, csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME, "driver.ControllerPublisher"},
		{csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH, csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH, "driver.VolumeHealthGetter"},
	} {
		if c.controller[dep.needs] && !c.controller[dep.on] {
			d.bad("%s needs %s (implement %s)", dep.needs, dep.on, dep.iface)
		}
	}
}

func (d *capDerivation) controllerOverride() {
	c := &d.c
	for _, cp := range d.o.Controller {
		if int(cp) <= 0 || int(cp) >= len(c.controller) || csi.ControllerServiceCapability_RPC_Type_name[int32(cp)] == "" {
			d.bad("controller capability override %d is not a known capability", cp)
			continue
		}
		if name, ok := controllerPromises[cp]; ok {
			d.bad("controller capability %s is a promise, not an RPC: state it with Features.%s, not in Overrides.Controller", cp, name)
			continue
		}
		if !d.servedCtrl[cp] {
			d.bad("controller capability %s is listed but the Controller backend does not implement %s, which serves it", cp, servingInterfaces(func(s *rpcSpec) bool { return s.ctrlCap == cp }))
			continue
		}
		c.controller[cp] = true
	}
	if !c.controller[csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME] {
		d.bad("controller capability override must include CREATE_DELETE_VOLUME: a Controller backend always serves CreateVolume and DeleteVolume")
	}
}

func (d *capDerivation) nodeCaps() {
	b, o, c := d.b, d.o, &d.c
	if b.node == nil {
		if o.Node != nil {
			d.bad("node capability overrides given but no Node backend is configured")
		}
		if d.f.VolumeMountGroup {
			d.bad("Features.VolumeMountGroup is a node capability but no Node backend is configured (a controller-only process of a split plugin leaves it false)")
		}
		return
	}
	if o.Node == nil {
		for cp, ok := range d.servedNode {
			c.node[cp] = ok
		}
	}
	for _, cp := range o.Node {
		if int(cp) <= 0 || int(cp) >= len(c.node) || csi.NodeServiceCapability_RPC_Type_name[int32(cp)] == "" {
			d.bad("node capability override %d is not a known capability", cp)
			continue
		}
		if name, ok := nodePromises[cp]; ok {
			d.bad("node capability %s is a promise, not an RPC: state it with Features.%s, not in Overrides.Node", cp, name)
			continue
		}
		if !d.servedNode[cp] {
			d.bad("node capability %s is listed but the Node backend does not implement %s, which serves it", cp, servingInterfaces(func(s *rpcSpec) bool { return s.nodeCap == cp }))
			continue
		}
		c.node[cp] = true
	}
	c.node[csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER] = d.f.SingleNodeMultiWriter
	c.node[csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP] = d.f.VolumeMountGroup
}

func (d *capDerivation) pluginCaps() {
	b, o, c := d.b, d.o, &d.c
	c.group = b.group != nil
	if o.Plugin == nil {
		c.plugin[csi.PluginCapability_Service_CONTROLLER_SERVICE] = b.controller != nil
		c.plugin[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE] = b.group != nil
		c.plugin[csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE] = b.metadata != nil
	} else {
		d.pluginOverride()
	}
	c.plugin[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] = d.f.VolumeAccessibilityConstraints
	c.plugin[csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS] = d.f.SnapshotAccessibilityConstraints
	if d.f.SnapshotAccessibilityConstraints && b.controller != nil && !d.servedCtrl[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT] {
		d.bad("SnapshotAccessibilityConstraints needs snapshots (implement driver.Snapshotter)")
	}
}

func (d *capDerivation) pluginOverride() {
	b, c := d.b, &d.c
	for _, sv := range d.o.Plugin {
		if int(sv) <= 0 || int(sv) >= len(c.plugin) || csi.PluginCapability_Service_Type_name[int32(sv)] == "" {
			d.bad("plugin capability override %d is not a known service capability", sv)
			continue
		}
		if name, ok := pluginPromises[sv]; ok {
			d.bad("plugin capability %s is a promise, not a service: state it with Features.%s, not in Overrides.Plugin", sv, name)
			continue
		}
		c.plugin[sv] = true
	}
	for sv, served := range map[csi.PluginCapability_Service_Type]bool{
		csi.PluginCapability_Service_CONTROLLER_SERVICE:        b.controller != nil,
		csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE:  b.group != nil,
		csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE: b.metadata != nil,
	} {
		if served && !c.plugin[sv] {
			d.bad("plugin capability override leaves out %s, which this process serves", sv)
		}
	}
	if d.f.Expansion == driver.ExpansionAuto {
		d.bad("a plugin capability override needs an explicit Features.Expansion: derived from this process's backends, it could differ between the plugin's processes")
	}
}

// expansion resolves the plugin's VolumeExpansion from Features.Expansion and the EXPAND_VOLUME
// capabilities resolved before it.
func (d *capDerivation) expansion() {
	b, c := d.b, &d.c
	ctrlExpand := c.controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME]
	nodeExpand := c.node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME]
	switch d.f.Expansion {
	case driver.ExpansionAuto:
		if ctrlExpand || nodeExpand {
			c.expansion = csi.PluginCapability_VolumeExpansion_ONLINE
		}
	case driver.ExpansionOnline:
		if b.controller != nil && b.node != nil && !ctrlExpand && !nodeExpand {
			d.bad("ONLINE expansion needs driver.VolumeExpander or driver.NodeExpander")
		}
		c.expansion = csi.PluginCapability_VolumeExpansion_ONLINE
	case driver.ExpansionOffline:
		if b.controller != nil && !ctrlExpand {
			d.bad("OFFLINE expansion needs driver.VolumeExpander (the spec requires the controller EXPAND_VOLUME capability)")
		}
		c.expansion = csi.PluginCapability_VolumeExpansion_OFFLINE
	case driver.ExpansionNone:
		// No expansion at all: the EXPAND_VOLUME RPCs are not served either.
		c.controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME] = false
		c.node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME] = false
	default:
		d.bad("unknown expansion mode %d", d.f.Expansion)
	}
}

func (c *capSet) hasController(cp csi.ControllerServiceCapability_RPC_Type) bool {
	return c.controller[cp]
}

func (c *capSet) hasNode(cp csi.NodeServiceCapability_RPC_Type) bool { return c.node[cp] }

func (c *capSet) pluginResponse() *csi.GetPluginCapabilitiesResponse {
	resp := &csi.GetPluginCapabilitiesResponse{}
	for i, on := range c.plugin {
		if on {
			resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{
				Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
					Type: csi.PluginCapability_Service_Type(i)}}})
		}
	}
	if c.expansion != csi.PluginCapability_VolumeExpansion_UNKNOWN {
		resp.Capabilities = append(resp.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{
				Type: c.expansion}}})
	}
	return resp
}

func (c *capSet) controllerResponse() *csi.ControllerGetCapabilitiesResponse {
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for i, on := range c.controller {
		if on {
			resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
				Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{
					Type: csi.ControllerServiceCapability_RPC_Type(i)}}})
		}
	}
	return resp
}

func (c *capSet) nodeResponse() *csi.NodeGetCapabilitiesResponse {
	resp := &csi.NodeGetCapabilitiesResponse{}
	for i, on := range c.node {
		if on {
			resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
				Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{
					Type: csi.NodeServiceCapability_RPC_Type(i)}}})
		}
	}
	return resp
}

func (c *capSet) groupResponse() *csi.GroupControllerGetCapabilitiesResponse {
	resp := &csi.GroupControllerGetCapabilitiesResponse{}
	if c.group {
		resp.Capabilities = append(resp.Capabilities, &csi.GroupControllerServiceCapability{
			Type: &csi.GroupControllerServiceCapability_Rpc{Rpc: &csi.GroupControllerServiceCapability_RPC{
				Type: csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT}}})
	}
	return resp
}

// servingInterfaces names the interfaces that serve the RPCs a capability advertises, for
// messages: "driver.VolumeLister or driver.VolumePageLister".
func servingInterfaces(advertisedBy func(*rpcSpec) bool) string {
	var names []string
	for _, s := range rpcTable {
		if !advertisedBy(s) {
			continue
		}
		for _, t := range s.serves {
			if n := t.String(); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "the interface"
	}
	return strings.Join(names, " or ")
}
