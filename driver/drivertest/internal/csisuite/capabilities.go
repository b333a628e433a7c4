package csisuite

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Capabilities is what the plugin advertises.
type Capabilities struct {
	// Plugin holds the plugin's services.
	Plugin map[csi.PluginCapability_Service_Type]bool
	// Group says the group controller creates, deletes and gets volume group snapshots.
	Group bool
	// NodeID is NodeGetInfo's node_id, empty when there is no node service.
	NodeID string
	// Topology is the node's accessible topology, nil when it reports none.
	Topology *csi.Topology

	controller map[csi.ControllerServiceCapability_RPC_Type]bool
	node       map[csi.NodeServiceCapability_RPC_Type]bool
}

func probe(id csi.IdentityClient, ctrl csi.ControllerClient, node csi.NodeClient, group csi.GroupControllerClient) Capabilities {
	ctx := context.Background()
	c := Capabilities{
		Plugin:     map[csi.PluginCapability_Service_Type]bool{},
		controller: map[csi.ControllerServiceCapability_RPC_Type]bool{},
		node:       map[csi.NodeServiceCapability_RPC_Type]bool{},
	}
	pc, err := id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	Expect(err).NotTo(HaveOccurred(), "GetPluginCapabilities")
	for _, cp := range pc.GetCapabilities() {
		if s := cp.GetService(); s != nil {
			c.Plugin[s.GetType()] = true
		}
	}
	if c.Plugin[csi.PluginCapability_Service_CONTROLLER_SERVICE] {
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
			c.NodeID, c.Topology = info.GetNodeId(), info.GetAccessibleTopology()
		}
	}
	if c.Plugin[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE] {
		gc, err := group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
		Expect(err).NotTo(HaveOccurred(), "GroupControllerGetCapabilities")
		for _, cp := range gc.GetCapabilities() {
			if cp.GetRpc().GetType() == csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT {
				c.Group = true
			}
		}
	}
	return c
}

// Has reports whether the controller advertises cp.
func (c Capabilities) Has(cp csi.ControllerServiceCapability_RPC_Type) bool { return c.controller[cp] }

// HasNode reports whether the node service advertises cp.
func (c Capabilities) HasNode(cp csi.NodeServiceCapability_RPC_Type) bool { return c.node[cp] }

// Require skips the spec when the controller does not advertise cp.
func (c Capabilities) Require(cp csi.ControllerServiceCapability_RPC_Type) {
	if !c.controller[cp] {
		Skip(cp.String() + " not advertised")
	}
}
