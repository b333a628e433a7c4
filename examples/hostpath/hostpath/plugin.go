package hostpath

import (
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver/plugin"
)

// Name and Version identify the plugin.
const (
	Name    = "hostpath.csikit.dev"
	Version = "0.1.0"
)

// Which services one process serves.
const (
	ModeBoth       = "both"
	ModeController = "controller"
	ModeNode       = "node"
)

// Plugin is the opened driver: its controller, its node, or both.
type Plugin struct {
	Controller *Controller
	Node       *Node
}

// Open opens the state for the given mode and reconciles it.
func Open(cfg Config, mode string) (*Plugin, error) {
	p := &Plugin{}
	switch mode {
	case ModeBoth, ModeController, ModeNode:
	default:
		return nil, fmt.Errorf("mode %q: want %s, %s or %s", mode, ModeBoth, ModeController, ModeNode)
	}
	if mode != ModeNode {
		c, err := NewController(cfg)
		if err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		p.Controller = c
	}
	if mode != ModeController {
		n, err := NewNode(cfg)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("node: %w", err)
		}
		p.Node = n
	}
	if p.Controller != nil && p.Node != nil {
		p.Controller.nodeInUse = p.Node.inUse
	}
	return p, nil
}

// PluginCapabilities are the services hostpath declares in every mode: the spec wants a
// controller-only and a node-only process of one plugin to report the same set. The
// accessibility constraints, which are promises, come from [Features].
var PluginCapabilities = []csi.PluginCapability_Service_Type{
	csi.PluginCapability_Service_CONTROLLER_SERVICE,
	csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE,
	csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE,
}

// Config returns the csikit configuration serving this plugin; add a Logger and Endpoint.
func (p *Plugin) Config() plugin.Config {
	f := Features()
	cfg := plugin.Config{
		Name:          Name,
		VendorVersion: Version,
		Overrides:     plugin.CapabilityOverrides{Plugin: PluginCapabilities},
	}
	if p.Controller != nil {
		cfg.Controller = p.Controller
		cfg.GroupController = p.Controller
		cfg.SnapshotMetadata = p.Controller
		cfg.VolumeGroups = &plugin.VolumeGroupConfig{Controller: p.Controller}
	} else {
		// Controller promises mean nothing in a node-only process, and New refuses them there.
		f.CloneVolume, f.PublishReadonly, f.ListVolumesPublishedNodes = false, false, false
	}
	if p.Node != nil {
		cfg.Node = p.Node
	}
	cfg.Features = f
	return cfg
}

// Close releases the state databases.
func (p *Plugin) Close() error {
	var errs []error
	if p.Controller != nil {
		errs = append(errs, p.Controller.Close())
	}
	if p.Node != nil {
		errs = append(errs, p.Node.Close())
	}
	return errors.Join(errs...)
}
