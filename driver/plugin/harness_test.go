package plugin_test

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// testPlugin is a running driver with clients for every service, served over a real unix socket.
type testPlugin struct {
	identity   csi.IdentityClient
	controller csi.ControllerClient
	node       csi.NodeClient
	group      csi.GroupControllerClient
	metadata   csi.SnapshotMetadataClient
	socket     string
}

// fullConfig is a configuration with every backend and feature of the in-memory driver.
func fullConfig(mem *memdriver.Driver) plugin.Config {
	return plugin.Config{
		Name:             "mem.csikit.dev",
		VendorVersion:    "1.0.0",
		Controller:       mem,
		Node:             mem,
		GroupController:  mem,
		SnapshotMetadata: mem,
		Features: driver.Features{
			CloneVolume:                    true,
			PublishReadonly:                true,
			ListVolumesPublishedNodes:      true,
			SingleNodeMultiWriter:          true,
			VolumeAccessibilityConstraints: true,
		},
		CheckResponses: true,
	}
}

// start serves cfg on a fresh socket until the test ends.
func start(t testing.TB, cfg plugin.Config) *testPlugin {
	t.Helper()
	srv := drivertest.NewServer(t, cfg)
	return &testPlugin{
		identity:   csi.NewIdentityClient(srv.Conn),
		controller: csi.NewControllerClient(srv.Conn),
		node:       csi.NewNodeClient(srv.Conn),
		group:      csi.NewGroupControllerClient(srv.Conn),
		metadata:   csi.NewSnapshotMetadataClient(srv.Conn),
		socket:     srv.Socket,
	}
}

func mountCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func blockCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

var snw = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER

func createVolume(t testing.TB, p *testPlugin, name string) *csi.Volume {
	t.Helper()
	resp, err := p.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
	})
	if err != nil {
		t.Fatalf("CreateVolume(%q): %v", name, err)
	}
	return resp.GetVolume()
}
