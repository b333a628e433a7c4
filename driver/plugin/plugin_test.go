package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// minimal implements only the required Controller and Node interfaces.
type minimal struct{}

func (minimal) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	return &driver.Volume{ID: "v-" + r.Name}, nil
}
func (minimal) DeleteVolume(context.Context, *driver.DeleteVolumeRequest) error { return nil }
func (minimal) ValidateVolumeCapabilities(context.Context, *driver.ValidateVolumeCapabilitiesRequest) error {
	return nil
}
func (minimal) NodePublishVolume(context.Context, *driver.NodePublishVolumeRequest) error { return nil }
func (minimal) NodeUnpublishVolume(context.Context, *driver.NodeUnpublishVolumeRequest) error {
	return nil
}
func (minimal) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	return &driver.NodeInfo{NodeID: "n1"}, nil
}

func TestCapabilitiesAreDerived(t *testing.T) {
	tests := []struct {
		name       string
		cfg        plugin.Config
		controller []csi.ControllerServiceCapability_RPC_Type
		node       []csi.NodeServiceCapability_RPC_Type
		plugin     []csi.PluginCapability_Service_Type
	}{
		{
			name:       "minimal",
			cfg:        plugin.Config{Name: "min.example.com", VendorVersion: "1", Controller: minimal{}, Node: minimal{}},
			controller: []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME},
			node:       nil,
			plugin:     []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE},
		},
		{
			name: "memdriver",
			cfg:  fullConfig(memdriver.New(memdriver.Options{})),
			controller: []csi.ControllerServiceCapability_RPC_Type{
				csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
				csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
				csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
				csi.ControllerServiceCapability_RPC_GET_CAPACITY,
				csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
				csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
				csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
				csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
				csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
				csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
				csi.ControllerServiceCapability_RPC_GET_VOLUME,
				csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
				csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
				csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
				csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
				csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
			},
			node: []csi.NodeServiceCapability_RPC_Type{
				csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
				csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
				csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
				csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
				csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
				csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH,
			},
			plugin: []csi.PluginCapability_Service_Type{
				csi.PluginCapability_Service_CONTROLLER_SERVICE,
				csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS,
				csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE,
				csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.cfg)
			ctx := context.Background()
			cc, err := p.controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var gotCtrl []csi.ControllerServiceCapability_RPC_Type
			for _, c := range cc.GetCapabilities() {
				gotCtrl = append(gotCtrl, c.GetRpc().GetType())
			}
			slices.Sort(gotCtrl)
			if !slices.Equal(gotCtrl, tt.controller) {
				t.Errorf("controller capabilities = %v, want %v", gotCtrl, tt.controller)
			}
			nc, err := p.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var gotNode []csi.NodeServiceCapability_RPC_Type
			for _, c := range nc.GetCapabilities() {
				gotNode = append(gotNode, c.GetRpc().GetType())
			}
			slices.Sort(gotNode)
			if !slices.Equal(gotNode, tt.node) {
				t.Errorf("node capabilities = %v, want %v", gotNode, tt.node)
			}
			pc, err := p.identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var gotPlugin []csi.PluginCapability_Service_Type
			for _, c := range pc.GetCapabilities() {
				if s := c.GetService(); s != nil {
					gotPlugin = append(gotPlugin, s.GetType())
				}
			}
			slices.Sort(gotPlugin)
			if !slices.Equal(gotPlugin, tt.plugin) {
				t.Errorf("plugin capabilities = %v, want %v", gotPlugin, tt.plugin)
			}
		})
	}
}

func TestUnservedRPCsAnswerUnimplementedNamingTheRPC(t *testing.T) {
	p := start(t, plugin.Config{Name: "min.example.com", VendorVersion: "1", Controller: minimal{}, Node: minimal{}})
	ctx := context.Background()
	calls := map[string]func() error{
		"ControllerPublishVolume": func() error {
			_, err := p.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n", VolumeCapability: mountCap(snw)})
			return err
		},
		"ListVolumes": func() error { _, err := p.controller.ListVolumes(ctx, &csi.ListVolumesRequest{}); return err },
		"CreateSnapshot": func() error {
			_, err := p.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v"})
			return err
		},
		"NodeStageVolume": func() error {
			_, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: "/tmp/x", VolumeCapability: mountCap(snw)})
			return err
		},
		"NodeGetVolumeStats": func() error {
			_, err := p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: "v", VolumePath: "/tmp/x"})
			return err
		},
	}
	for rpc, call := range calls {
		t.Run(rpc, func(t *testing.T) {
			err := call()
			if status.Code(err) != codes.Unimplemented || !strings.Contains(status.Convert(err).Message(), rpc) {
				t.Fatalf("got %v, want UNIMPLEMENTED naming %s", err, rpc)
			}
		})
	}
	// A service with no backend is not registered at all.
	_, err := p.group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("GroupControllerGetCapabilities without a backend: %v, want UNIMPLEMENTED", err)
	}
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	tests := []struct {
		name string
		cfg  plugin.Config
		want string
	}{
		{"no name", plugin.Config{VendorVersion: "1", Controller: mem}, "plugin name"},
		{"bad name", plugin.Config{Name: "-bad-", VendorVersion: "1", Controller: mem}, "plugin name"},
		{"long name", plugin.Config{Name: strings.Repeat("a", 64), VendorVersion: "1", Controller: mem}, "plugin name"},
		{"no version", plugin.Config{Name: "ok.example.com", Controller: mem}, "vendor version"},
		{"no backend", plugin.Config{Name: "ok.example.com", VendorVersion: "1"}, "no backend"},
		{"override not served", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Controller: minimal{},
			Overrides: plugin.CapabilityOverrides{Controller: []csi.ControllerServiceCapability_RPC_Type{
				csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME, csi.ControllerServiceCapability_RPC_LIST_VOLUMES}}},
			"driver.VolumeLister or driver.VolumePageLister"},
		{"published nodes without publish", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Controller: minimal{},
			Features: driver.Features{ListVolumesPublishedNodes: true}}, "PUBLISH_UNPUBLISH_VOLUME"},
		{"readonly publish without publish", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Controller: minimal{},
			Features: driver.Features{PublishReadonly: true}}, "PUBLISH_READONLY"},
		{"offline expansion without expander", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Controller: minimal{},
			Features: driver.Features{Expansion: driver.ExpansionOffline}}, "OFFLINE"},
		{"node override not served", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Node: minimal{},
			Overrides: plugin.CapabilityOverrides{Node: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}},
			"driver.NodeStager"},
		{"controller promise in an override", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Controller: mem,
			Overrides: plugin.CapabilityOverrides{Controller: []csi.ControllerServiceCapability_RPC_Type{
				csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME, csi.ControllerServiceCapability_RPC_CLONE_VOLUME}}},
			"state it with Features.CloneVolume"},
		{"node promise in an override", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Node: mem,
			Overrides: plugin.CapabilityOverrides{Node: []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP}}},
			"state it with Features.VolumeMountGroup"},
		{"plugin promise in an override", plugin.Config{Name: "ok.example.com", VendorVersion: "1", Node: mem,
			Features: driver.Features{Expansion: driver.ExpansionOnline},
			Overrides: plugin.CapabilityOverrides{Plugin: []csi.PluginCapability_Service_Type{
				csi.PluginCapability_Service_CONTROLLER_SERVICE, csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS}}},
			"state it with Features.VolumeAccessibilityConstraints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plugin.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestOverrideDisablesAnRPC(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	cfg := fullConfig(mem)
	cfg.Overrides.Controller = []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	cfg.Features = driver.Features{}
	p := start(t, cfg)
	_, err := p.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(status.Convert(err).Message(), "LIST_VOLUMES") {
		t.Fatalf("ListVolumes with LIST_VOLUMES overridden off: %v, want UNIMPLEMENTED naming the capability", err)
	}
}

// errBackend returns a chosen error from every call, to exercise the per-RPC error tables.
type errBackend struct {
	minimal
	err error
}

func (b errBackend) CreateVolume(context.Context, *driver.CreateVolumeRequest) (*driver.Volume, error) {
	return nil, b.err
}
func (b errBackend) DeleteVolume(context.Context, *driver.DeleteVolumeRequest) error { return b.err }
func (b errBackend) ControllerPublishVolume(context.Context, *driver.ControllerPublishVolumeRequest) (map[string]string, error) {
	return nil, b.err
}
func (b errBackend) ControllerUnpublishVolume(context.Context, *driver.ControllerUnpublishVolumeRequest) error {
	return b.err
}
func (b errBackend) NodePublishVolume(context.Context, *driver.NodePublishVolumeRequest) error {
	return b.err
}
func (b errBackend) NodeUnpublishVolume(context.Context, *driver.NodeUnpublishVolumeRequest) error {
	return b.err
}
func (b errBackend) ValidateVolumeCapabilities(context.Context, *driver.ValidateVolumeCapabilitiesRequest) error {
	return b.err
}

func TestErrorMappingPerRPC(t *testing.T) {
	ctx := context.Background()
	type call func(p *testPlugin) error
	createVolume := func(p *testPlugin) error {
		_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "n", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}})
		return err
	}
	deleteVolume := func(p *testPlugin) error {
		_, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "v"})
		return err
	}
	publish := func(p *testPlugin) error {
		_, err := p.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n", VolumeCapability: mountCap(snw)})
		return err
	}
	unpublish := func(p *testPlugin) error {
		_, err := p.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: "v"})
		return err
	}
	nodePublish := func(p *testPlugin) error {
		_, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", VolumeCapability: mountCap(snw)})
		return err
	}
	nodeUnpublish := func(p *testPlugin) error {
		_, err := p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t"})
		return err
	}
	tests := []struct {
		rpc  string
		call call
		err  error
		want codes.Code
	}{
		{"CreateVolume", createVolume, fmt.Errorf("source snapshot %q: %w", "s", driver.ErrNotFound), codes.NotFound},
		{"CreateVolume", createVolume, driver.ErrAlreadyExists, codes.AlreadyExists},
		{"CreateVolume", createVolume, driver.ErrResourceExhausted, codes.ResourceExhausted},
		{"CreateVolume", createVolume, driver.ErrOutOfRange, codes.OutOfRange},
		{"CreateVolume", createVolume, driver.ErrUnsupported, codes.InvalidArgument},
		{"CreateVolume", createVolume, driver.ErrUnauthenticated, codes.Unauthenticated},
		{"CreateVolume", createVolume, driver.ErrPermissionDenied, codes.PermissionDenied},
		{"CreateVolume", createVolume, driver.ErrPending, codes.Aborted},
		{"CreateVolume", createVolume, driver.ErrUnavailable, codes.Unavailable},
		// A deadline of the backend's own while the CO still waits: a fault, not the CO's deadline.
		{"CreateVolume", createVolume, context.DeadlineExceeded, codes.Unavailable},
		{"CreateVolume", createVolume, errors.New("disk on fire"), codes.Internal},
		{"CreateVolume", createVolume, status.Error(codes.DataLoss, "kept"), codes.DataLoss},
		{"DeleteVolume", deleteVolume, driver.ErrNotFound, codes.OK},
		{"DeleteVolume", deleteVolume, driver.ErrInUse, codes.FailedPrecondition},
		{"ControllerPublishVolume", publish, driver.ErrNotFound, codes.NotFound},
		{"ControllerPublishVolume", publish, driver.ErrAlreadyExists, codes.AlreadyExists},
		{"ControllerPublishVolume", publish, driver.ErrFailedPrecondition, codes.FailedPrecondition},
		{"ControllerPublishVolume", publish, driver.ErrResourceExhausted, codes.ResourceExhausted},
		{"ControllerUnpublishVolume", unpublish, driver.ErrNotFound, codes.OK},
		{"NodePublishVolume", nodePublish, driver.ErrUnsupported, codes.FailedPrecondition},
		{"NodePublishVolume", nodePublish, driver.ErrNotFound, codes.NotFound},
		{"NodeUnpublishVolume", nodeUnpublish, driver.ErrNotFound, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.rpc, tt.err), func(t *testing.T) {
			b := pubBackend{errBackend{err: tt.err}}
			p := start(t, plugin.Config{Name: "err.example.com", VendorVersion: "1", Controller: b, Node: b})
			err := tt.call(p)
			if got := status.Code(err); got != tt.want {
				t.Fatalf("%s with backend error %v: got %v, want %v", tt.rpc, tt.err, err, tt.want)
			}
			if err != nil {
				st := status.Convert(err)
				if st.Message() == "" || len(st.Details()) != 0 {
					t.Fatalf("status must have a message and no details: %v", st.Proto())
				}
				if tt.want == codes.Internal && !strings.Contains(st.Message(), tt.rpc) {
					t.Fatalf("INTERNAL message %q does not name the operation %s", st.Message(), tt.rpc)
				}
			}
		})
	}
}

// pubBackend adds ControllerPublisher to errBackend.
type pubBackend struct{ errBackend }

func TestValidateVolumeCapabilitiesEchoesOrDeclines(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	cfg := fullConfig(mem)
	cfg.Features.SingleNodeMultiWriter = false
	p := start(t, cfg)
	ctx := context.Background()
	vol := createVolume(t, p, "validate-me")

	resp, err := p.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: vol.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		Parameters: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetConfirmed() == nil || resp.GetConfirmed().GetParameters()["a"] != "b" || len(resp.GetConfirmed().GetVolumeCapabilities()) != 1 {
		t.Fatalf("want the request echoed in confirmed, got %v", resp)
	}

	resp, err = p.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: vol.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{blockCap(snw)}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetConfirmed() != nil || !strings.Contains(resp.GetMessage(), "filesystem") {
		t.Fatalf("block access to a filesystem volume must be declined with the backend's reason, got %v", resp)
	}

	resp, err = p.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: vol.GetVolumeId(), VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER)}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetConfirmed() != nil || !strings.Contains(resp.GetMessage(), "SINGLE_NODE_MULTI_WRITER") {
		t.Fatalf("an unadvertised access mode must be declined, got %v", resp)
	}

	_, err = p.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{
		VolumeId: "no-such-volume", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("missing volume: %v, want NOT_FOUND", err)
	}
}

func TestFeaturesAreEnforcedOnRequests(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	cfg := fullConfig(mem)
	cfg.Features = driver.Features{}
	p := start(t, cfg)
	ctx := context.Background()
	src := createVolume(t, p, "source")
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"clone without CLONE_VOLUME", func() error {
			_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "c", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
				VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}})
			return err
		}, "CLONE_VOLUME"},
		{"topology without VOLUME_ACCESSIBILITY_CONSTRAINTS", func() error {
			_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "t", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
				AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{"zone": "a"}}}}})
			return err
		}, "VOLUME_ACCESSIBILITY_CONSTRAINTS"},
		{"readonly publish without PUBLISH_READONLY", func() error {
			_, err := p.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: src.GetVolumeId(), NodeId: "mem-node-1",
				VolumeCapability: mountCap(snw), Readonly: true})
			return err
		}, "PUBLISH_READONLY"},
		{"alpha access mode without SINGLE_NODE_MULTI_WRITER", func() error {
			_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "m",
				VolumeCapabilities: []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER)}})
			return err
		}, "SINGLE_NODE_MULTI_WRITER"},
		{"mount group without VOLUME_MOUNT_GROUP", func() error {
			c := mountCap(snw)
			c.GetMount().VolumeMountGroup = "1000"
			_, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: src.GetVolumeId(), StagingTargetPath: t.TempDir(), VolumeCapability: c})
			return err
		}, "VOLUME_MOUNT_GROUP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tt.want) {
				t.Fatalf("got %v, want INVALID_ARGUMENT naming %s", err, tt.want)
			}
		})
	}
}

func TestNodePublishNeedsStagingPathWhenStaging(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	vol := createVolume(t, p, "stage-me")
	_, err := p.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: vol.GetVolumeId(), TargetPath: t.TempDir() + "/target", VolumeCapability: mountCap(snw)})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "staging_target_path") {
		t.Fatalf("got %v, want FAILED_PRECONDITION naming staging_target_path", err)
	}
}

func TestRelativeVolumePathIsNotFound(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	vol := createVolume(t, p, "stats")
	ctx := context.Background()
	_, err := p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: "some/path"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("NodeGetVolumeStats with a relative path: %v, want NOT_FOUND", err)
	}
	_, err = p.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol.GetVolumeId(), VolumePath: "some/path"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("NodeExpandVolume with a relative path: %v, want NOT_FOUND", err)
	}
	_, err = p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumePath: "some/path"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("NodeGetVolumeStats without volume_id: %v, want INVALID_ARGUMENT", err)
	}
}

func TestProbe(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	p := start(t, fullConfig(mem))
	ctx := context.Background()
	resp, err := p.identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || !resp.GetReady().GetValue() {
		t.Fatalf("Probe = %v, %v; want ready", resp, err)
	}
	mem.SetReady(false)
	resp, err = p.identity.Probe(ctx, &csi.ProbeRequest{})
	if err != nil || resp.GetReady() == nil || resp.GetReady().GetValue() {
		t.Fatalf("Probe while initialising = %v, %v; want ready=false", resp, err)
	}
	_, err = start(t, plugin.Config{Name: "sick.example.com", VendorVersion: "1", Node: minimal{}, Prober: sick{}}).identity.Probe(ctx, &csi.ProbeRequest{})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("Probe of an unhealthy plugin: %v, want FAILED_PRECONDITION", err)
	}
}

type sick struct{}

func (sick) Probe(context.Context) (bool, error) {
	return false, errors.New("backend array unreachable")
}

func TestGetPluginInfo(t *testing.T) {
	cfg := fullConfig(memdriver.New(memdriver.Options{}))
	cfg.Manifest = map[string]string{"url": "https://csikit.dev"}
	p := start(t, cfg)
	resp, err := p.identity.GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetName() != "mem.csikit.dev" || resp.GetVendorVersion() != "1.0.0" || resp.GetManifest()["url"] != "https://csikit.dev" {
		t.Fatalf("GetPluginInfo = %v", resp)
	}
}

func TestCapabilityEdgeCases(t *testing.T) {
	ctx := context.Background()
	t.Run("ExpansionNone serves no expansion", func(t *testing.T) {
		cfg := fullConfig(memdriver.New(memdriver.Options{}))
		cfg.Features.Expansion = driver.ExpansionNone
		p := start(t, cfg)
		vol := createVolume(t, p, "x")
		_, err := p.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol.GetVolumeId(), CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
		if status.Code(err) != codes.Unimplemented {
			t.Fatalf("ControllerExpandVolume with ExpansionNone: %v, want UNIMPLEMENTED", err)
		}
		pc, err := p.identity.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range pc.GetCapabilities() {
			if c.GetVolumeExpansion() != nil {
				t.Fatalf("VolumeExpansion advertised with ExpansionNone: %v", pc)
			}
		}
	})
	t.Run("an unhashable backend value", func(t *testing.T) {
		type mapBacked struct {
			minimal
			vols map[string]int
		}
		b := mapBacked{vols: map[string]int{}}
		if _, err := plugin.New(plugin.Config{Name: "map.example.com", VendorVersion: "1", Controller: b, Node: b}); err != nil {
			t.Fatal(err)
		}
	})
}

// stagerWithoutUnstage has NodeStageVolume but no NodeUnstageVolume: it means NodeStager.
type stagerWithoutUnstage struct{ minimal }

func (stagerWithoutUnstage) NodeStageVolume(context.Context, *driver.NodeStageVolumeRequest) error {
	return nil
}

// listerWithWrongSignature returns a slice of pointers where VolumeLister returns values.
type listerWithWrongSignature struct{ minimal }

func (listerWithWrongSignature) ListVolumes(context.Context, *driver.ListVolumesRequest) ([]*driver.VolumeEntry, error) {
	return nil, nil
}

// proberWithWrongSignature returns only a bool.
type proberWithWrongSignature struct{ minimal }

func (proberWithWrongSignature) Probe(context.Context) bool { return true }

// grantByValue answers its grant by value where bucket.AccessGranter answers a pointer.
type grantByValue struct{ *memdriver.Buckets }

func (grantByValue) GrantBucketAccess(context.Context, *bucket.GrantBucketAccessRequest) (bucket.Access, error) {
	return bucket.Access{}, nil
}

func TestNewRefusesABackendThatAlmostImplementsAnInterface(t *testing.T) {
	tests := []struct {
		name string
		cfg  plugin.Config
		want []string
	}{
		{"stage without unstage", plugin.Config{Node: stagerWithoutUnstage{}},
			[]string{"Config.Node", "driver.NodeStager", "missing NodeUnstageVolume(context.Context, *driver.NodeUnstageVolumeRequest) error"}},
		{"list with the wrong result type", plugin.Config{Controller: listerWithWrongSignature{}},
			[]string{"Config.Controller", "driver.VolumeLister", "ListVolumes is (context.Context, *driver.ListVolumesRequest) ([]*driver.VolumeEntry, error), want (context.Context, *driver.ListVolumesRequest) ([]driver.VolumeEntry, error)"}},
		{"probe with the wrong signature", plugin.Config{Controller: proberWithWrongSignature{}},
			[]string{"driver.Prober", "Probe is (context.Context) bool"}},
		{"a bucket grant answering a value", plugin.Config{COSI: &plugin.COSIConfig{Provisioner: grantByValue{memdriver.NewBuckets("e", "r")},
			Protocols: []bucket.Protocol{bucket.S3}}},
			[]string{"Config.COSI.Provisioner", "bucket.AccessGranter", "GrantBucketAccess is (context.Context, *bucket.GrantBucketAccessRequest) (bucket.Access, error), want (context.Context, *bucket.GrantBucketAccessRequest) (*bucket.Access, error)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Name, tt.cfg.VendorVersion = "ok.example.com", "1"
			_, err := plugin.New(tt.cfg)
			if err == nil {
				t.Fatal("New accepted a backend that silently loses a capability")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v\nwant it to mention %q", err, w)
				}
			}
		})
	}
}

func TestNewRefusesFeaturesOfAServiceItDoesNotServe(t *testing.T) {
	tests := []struct {
		name string
		cfg  plugin.Config
		want string
	}{
		{"clone without a controller", plugin.Config{Node: minimal{}, Features: driver.Features{CloneVolume: true}}, "Features.CloneVolume"},
		{"readonly publish without a controller", plugin.Config{Node: minimal{}, Features: driver.Features{PublishReadonly: true}}, "Features.PublishReadonly"},
		{"mount group without a node", plugin.Config{Controller: minimal{}, Features: driver.Features{VolumeMountGroup: true}}, "Features.VolumeMountGroup"},
		{"plugin override that leaves out a served service", plugin.Config{Controller: minimal{}, Features: driver.Features{Expansion: driver.ExpansionNone},
			Overrides: plugin.CapabilityOverrides{Plugin: []csi.PluginCapability_Service_Type{}}}, "leaves out CONTROLLER_SERVICE"},
		{"plugin override with derived expansion", plugin.Config{Node: minimal{},
			Overrides: plugin.CapabilityOverrides{Plugin: []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}}}, "explicit Features.Expansion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Name, tt.cfg.VendorVersion = "ok.example.com", "1"
			_, err := plugin.New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestPluginCapabilitiesAreTheSameInEveryMode: a plugin split into controller and node processes
// reports one set of plugin capabilities from every process, as the spec demands, when it declares
// them with Overrides.Plugin.
func TestPluginCapabilitiesAreTheSameInEveryMode(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	declared := plugin.CapabilityOverrides{Plugin: []csi.PluginCapability_Service_Type{
		csi.PluginCapability_Service_CONTROLLER_SERVICE,
		csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE,
		csi.PluginCapability_Service_SNAPSHOT_METADATA_SERVICE,
	}}
	modes := map[string]plugin.Config{
		"both":       {Controller: mem, Node: mem, GroupController: mem, SnapshotMetadata: mem},
		"controller": {Controller: mem, GroupController: mem, SnapshotMetadata: mem},
		"node":       {Node: mem},
	}
	var first *csi.GetPluginCapabilitiesResponse
	for _, mode := range []string{"both", "controller", "node"} {
		cfg := modes[mode]
		cfg.Name, cfg.VendorVersion, cfg.Overrides = "mem.csikit.dev", "1", declared
		cfg.Features = driver.Features{VolumeAccessibilityConstraints: true, Expansion: driver.ExpansionOnline}
		p := start(t, cfg)
		got, err := p.identity.GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if first == nil {
			first = got
			continue
		}
		if fmt.Sprint(got.GetCapabilities()) != fmt.Sprint(first.GetCapabilities()) {
			t.Errorf("mode %s reports %v, mode both %v", mode, got.GetCapabilities(), first.GetCapabilities())
		}
	}
}

// TestRunSaysWhereTheEndpointComesFrom: without an endpoint, Run names the places it looked
// (Config.Endpoint and the variables this plugin reads, no others) and how a binary with an
// endpoint flag gets it there; it blames no flag, since it never sees one. An endpoint it cannot
// use is reported with where it came from.
func TestRunSaysWhereTheEndpointComesFrom(t *testing.T) {
	csiOnly := plugin.Config{Name: "ep.example.com", VendorVersion: "1", Controller: minimal{}, Node: minimal{}}
	cosiOnly := bucketConfig(memdriver.NewBuckets("e", "r"))
	both := cosiOnly
	both.Controller, both.Node = minimal{}, minimal{}
	relative := csiOnly
	relative.Endpoint = "unix://relative.sock"
	for _, tc := range []struct {
		name      string
		cfg       plugin.Config
		env       map[string]string
		want      []string
		forbidden []string
	}{
		{"CSI", csiOnly, nil,
			[]string{"Config.Endpoint is empty and $CSI_ENDPOINT is not set", "unix:///csi/csi.sock", "cmdline.Settings.Apply"},
			[]string{"COSI", "--endpoint", "flag"}},
		{"COSI only", cosiOnly, nil,
			[]string{"Config.Endpoint is empty and $COSI_ENDPOINT is not set", "unix:///var/lib/cosi/cosi.sock", "cmdline.Settings.Apply"},
			[]string{"$CSI_ENDPOINT", "--endpoint", "flag"}},
		{"CSI and COSI", both, nil,
			[]string{"neither $CSI_ENDPOINT nor $COSI_ENDPOINT is set"}, nil},
		{"CSI and COSI, each variable naming a socket", both,
			map[string]string{"CSI_ENDPOINT": "unix://relative.sock", "COSI_ENDPOINT": "unix:///var/lib/cosi/cosi.sock"},
			[]string{"$CSI_ENDPOINT (unix://relative.sock) and $COSI_ENDPOINT (unix:///var/lib/cosi/cosi.sock) name different sockets", "one socket"},
			[]string{"absolute"}},
		{"a bad variable", csiOnly, map[string]string{"CSI_ENDPOINT": "unix://relative.sock"},
			[]string{"CSI_ENDPOINT (read because Config.Endpoint is empty): ", "absolute"}, nil},
		{"a bad Config.Endpoint", relative, map[string]string{"CSI_ENDPOINT": "unix:///csi/csi.sock"},
			[]string{"Config.Endpoint: ", "absolute"}, []string{"CSI_ENDPOINT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CSI_ENDPOINT", tc.env["CSI_ENDPOINT"])
			t.Setenv("COSI_ENDPOINT", tc.env["COSI_ENDPOINT"])
			p, err := plugin.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Run(t.Context())
			if err == nil {
				t.Fatal("Run without a usable endpoint succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run: %v\nwant it to mention %q", err, w)
				}
			}
			for _, f := range tc.forbidden {
				if strings.Contains(err.Error(), f) {
					t.Errorf("Run: %v\nmentions %q", err, f)
				}
			}
		})
	}
}

// TestOverrideKeepsThePromisesOfFeatures: an override list narrows the RPCs; the promises still
// come from Features, the one place that states them.
func TestOverrideKeepsThePromisesOfFeatures(t *testing.T) {
	cfg := fullConfig(memdriver.New(memdriver.Options{}))
	cfg.Overrides.Controller = []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
	}
	cfg.Features = driver.Features{PublishReadonly: true, SingleNodeMultiWriter: true}
	p := start(t, cfg)
	cc, err := p.controller.ControllerGetCapabilities(context.Background(), &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []csi.ControllerServiceCapability_RPC_Type
	for _, c := range cc.GetCapabilities() {
		got = append(got, c.GetRpc().GetType())
	}
	want := []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ControllerGetCapabilities = %v, want %v", got, want)
	}
}
