package plugin_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

func zone(z string) *csi.Topology { return &csi.Topology{Segments: map[string]string{"zone": z}} }

// TestRepeatedCreateVolumeIsCompatibleNotEqual drives the spec's rule over the socket: a retry
// gets the existing volume when that volume is compatible with the new request, which is wider
// than "the same request".
func TestRepeatedCreateVolumeIsCompatibleNotEqual(t *testing.T) {
	first := func() *csi.CreateVolumeRequest {
		return &csi.CreateVolumeRequest{
			Name:               "pvc-1",
			VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
			CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 20},
			Parameters:         map[string]string{"tier": "gold"},
			AccessibilityRequirements: &csi.TopologyRequirement{
				Requisite: []*csi.Topology{zone("a")}, Preferred: []*csi.Topology{zone("a")},
			},
		}
	}
	tests := []struct {
		name   string
		change func(*csi.CreateVolumeRequest)
		want   codes.Code
	}{
		{"the same request gets the volume", func(*csi.CreateVolumeRequest) {}, codes.OK},
		{"a wider range that holds the size gets the volume", func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 1 << 19, LimitBytes: 1 << 30}
		}, codes.OK},
		{"no range at all gets the volume", func(r *csi.CreateVolumeRequest) { r.CapacityRange = nil }, codes.OK},
		{"a requisite the volume satisfies gets the volume", func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{zone("b"), zone("a")}}
		}, codes.OK},
		{"no topology requirement gets the volume", func(r *csi.CreateVolumeRequest) { r.AccessibilityRequirements = nil }, codes.OK},
		{"another access mode of the same kind gets the volume", func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = []*csi.VolumeCapability{mountCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY)}
		}, codes.OK},
		{"a range above the size is ALREADY_EXISTS", func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 2 << 20}
		}, codes.AlreadyExists},
		{"a limit below the size is ALREADY_EXISTS", func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{LimitBytes: 1 << 19}
		}, codes.AlreadyExists},
		{"a requisite the volume is not in is ALREADY_EXISTS", func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{zone("b")}}
		}, codes.AlreadyExists},
		{"other parameters are ALREADY_EXISTS", func(r *csi.CreateVolumeRequest) { r.Parameters["tier"] = "silver" }, codes.AlreadyExists},
		{"block instead of mount is ALREADY_EXISTS", func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = []*csi.VolumeCapability{blockCap(snw)}
		}, codes.AlreadyExists},
		{"secrets do not matter", func(r *csi.CreateVolumeRequest) { r.Secrets = map[string]string{"k": "rotated"} }, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memdriver.New(memdriver.Options{Topology: map[string]string{"zone": "a"}})
			p := start(t, fullConfig(mem))
			ctx := context.Background()
			orig, err := p.controller.CreateVolume(ctx, first())
			if err != nil {
				t.Fatalf("first CreateVolume: %v", err)
			}
			retry := first()
			tt.change(retry)
			resp, err := p.controller.CreateVolume(ctx, retry)
			if got := status.Code(err); got != tt.want {
				t.Fatalf("retry: code %v (%v), want %v", got, err, tt.want)
			}
			if err == nil && resp.GetVolume().GetVolumeId() != orig.GetVolume().GetVolumeId() {
				t.Errorf("retry returned volume %q, want the existing %q", resp.GetVolume().GetVolumeId(), orig.GetVolume().GetVolumeId())
			}
		})
	}
}

// TestHugeRequiredBytesIsOutOfRange is the overflow regression over the socket: required_bytes
// near MaxInt64 used to come back OK with a negative size.
func TestHugeRequiredBytesIsOutOfRange(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	_, err := p.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "huge", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		CapacityRange: &csi.CapacityRange{RequiredBytes: math.MaxInt64 - 1},
	})
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("CreateVolume with required_bytes near MaxInt64: %v, want OUT_OF_RANGE", err)
	}
}

// TestNomadCreateVolumeWithEmptyTopology sends exactly what HashiCorp Nomad's ToCSIRequest sends
// for a volume without a topology_request: an accessibility_requirements message with neither
// requisite nor preferred, no content source, no capacity range when both bounds are 0. A plugin
// without VOLUME_ACCESSIBILITY_CONSTRAINTS must accept it, and the backend sees no requirement.
func TestNomadCreateVolumeWithEmptyTopology(t *testing.T) {
	var seen *driver.CreateVolumeRequest
	b := recordingCreate{seen: &seen}
	p := start(t, plugin.Config{Name: "nomad.example.com", VendorVersion: "1", Controller: b})
	_, err := p.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name:                      "nomad-vol",
		VolumeCapabilities:        []*csi.VolumeCapability{mountCap(snw)},
		Parameters:                map[string]string{},
		Secrets:                   map[string]string{},
		AccessibilityRequirements: &csi.TopologyRequirement{},
	})
	if err != nil {
		t.Fatalf("Nomad's CreateVolume on a plugin without topology: %v", err)
	}
	if seen == nil || seen.Topology != nil {
		t.Fatalf("the backend saw topology %+v, want none", seen)
	}
}

type recordingCreate struct {
	minimal
	seen **driver.CreateVolumeRequest
}

func (r recordingCreate) CreateVolume(_ context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	*r.seen = req
	return &driver.Volume{ID: "v-" + req.Name}, nil
}

// TestKubeletLengthPathsOverTheSocket: kubelet's pod volume paths are longer than the spec's
// general 128-byte string limit (the spec exempts paths), and NodeGetVolumeStats and
// NodeExpandVolume used to refuse them, breaking stats and online expansion for every pod.
func TestKubeletLengthPathsOverTheSocket(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	p := start(t, fullConfig(mem))
	ctx := context.Background()
	vol := createVolume(t, p, "pvc-long")
	// /var/lib/kubelet/pods/<uid>/volumes/kubernetes.io~csi/pvc-<uid>/mount, under the test's dir.
	target := filepath.Join(t.TempDir(), "pods", "0f6e9c1e-5d43-4a8e-9b21-2f4d3c1a9e77", "volumes",
		"kubernetes.io~csi", "pvc-7d1c2b3a-4e5f-4a6b-8c9d-0e1f2a3b4c5d", "mount")
	if len(target) <= 128 {
		t.Fatalf("test path is only %d bytes", len(target))
	}
	staging := filepath.Join(t.TempDir(), "plugins", "kubernetes.io", "csi", "mem.csikit.dev",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "globalmount")
	if _, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolumeId(),
		StagingTargetPath: staging, VolumeCapability: mountCap(snw)}); err != nil {
		t.Fatalf("NodeStageVolume at a %d-byte path: %v", len(staging), err)
	}
	if _, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(),
		StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap(snw)}); err != nil {
		t.Fatalf("NodePublishVolume at a %d-byte path: %v", len(target), err)
	}
	if _, err := p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: target}); err != nil {
		t.Fatalf("NodeGetVolumeStats at a %d-byte path: %v", len(target), err)
	}
	_, err := p.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol.GetVolumeId(), VolumePath: target,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}})
	if status.Code(err) == codes.InvalidArgument {
		t.Fatalf("NodeExpandVolume at a %d-byte path: %v", len(target), err)
	}
}
