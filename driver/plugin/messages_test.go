package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// TestEveryRefusalNamesTheRPCAndTheField drives bad requests through real servers, each refused
// by a different check (the validation middleware's rules, the plugin's capability gates, the
// COSI and volume-group adapters), and asserts one message style for all of them: the RPC, then
// the field, then what is wrong ("CreateVolume: name: 300 bytes, the limit is 128").
func TestEveryRefusalNamesTheRPCAndTheField(t *testing.T) {
	ctx := context.Background()
	full, vg := groupPlugin(t, memdriver.Options{}, nil)
	// A plugin without optional features: its capability gates refuse what it does not advertise.
	bare := start(t, plugin.Config{Name: "bare.example.com", VendorVersion: "1", Controller: memdriver.New(memdriver.Options{}),
		Node: memdriver.New(memdriver.Options{})})
	plain := start(t, plugin.Config{Name: "plain.example.com", VendorVersion: "1", Controller: minimal{}})
	buckets := startCOSI(t, bucketConfig(memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")))
	vol := createVolume(t, full, "messages")

	mount := func(mode csi.VolumeCapability_AccessMode_Mode) []*csi.VolumeCapability {
		return []*csi.VolumeCapability{mountCap(mode)}
	}
	create := func(p *testPlugin, f func(r *csi.CreateVolumeRequest)) func() error {
		return func() error {
			r := &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: mount(snw), CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}}
			f(r)
			_, err := p.controller.CreateVolume(ctx, r)
			return err
		}
	}
	smw := csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
	tests := []struct {
		name, rpc, field string
		call             func() error
	}{
		{"a 300-byte name", "CreateVolume", "name", create(full, func(r *csi.CreateVolumeRequest) { r.Name = strings.Repeat("n", 300) })},
		{"no capabilities", "CreateVolume", "volume_capabilities", create(full, func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = nil })},
		{"a limit below the required size", "CreateVolume", "capacity_range.limit_bytes", create(full, func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 2 << 20, LimitBytes: 1 << 20}
		})},
		{"a bad secret key", "CreateVolume", "secrets", create(full, func(r *csi.CreateVolumeRequest) { r.Secrets = map[string]string{"not a key!": "x"} })},
		{"an unadvertised access mode", "CreateVolume", "volume_capabilities.access_mode", create(bare, func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = mount(smw) })},
		{"topology without the feature", "CreateVolume", "accessibility_requirements", create(bare, func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{"zone": "a"}}}}
		})},
		{"a clone without the feature", "CreateVolume", "volume_content_source", create(bare, func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "v1"}}}
		})},
		{"mutable parameters without MODIFY_VOLUME", "CreateVolume", "mutable_parameters", create(plain, func(r *csi.CreateVolumeRequest) {
			r.MutableParameters = map[string]string{"iops": "10"}
		})},
		// The backend's own refusal (driver.ErrInvalidArgument) gets the RPC put first too.
		{"a mutable parameter the backend refuses", "CreateVolume", "mutable parameter", create(bare, func(r *csi.CreateVolumeRequest) {
			r.MutableParameters = map[string]string{"iops": "10"}
		})},
		{"a read-only publish without the feature", "ControllerPublishVolume", "readonly", func() error {
			_, err := bare.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n",
				VolumeCapability: mountCap(snw), Readonly: true})
			return err
		}},
		{"a publish without a node", "ControllerPublishVolume", "node_id", func() error {
			_, err := full.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol.GetVolumeId(), VolumeCapability: mountCap(snw)})
			return err
		}},
		{"a negative max_entries", "ListVolumes", "max_entries", func() error {
			_, err := full.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: -1})
			return err
		}},
		{"a relative target path", "NodePublishVolume", "target_path", func() error {
			_, err := full.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: "relative/dir",
				VolumeCapability: mountCap(snw)})
			return err
		}},
		{"a mount group without the feature", "NodePublishVolume", "volume_capability.mount.volume_mount_group", func() error {
			c := mountCap(snw)
			c.GetMount().VolumeMountGroup = "1000"
			_, err := bare.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/tmp/t", VolumeCapability: c})
			return err
		}},
		{"an unadvertised mode on the node", "NodePublishVolume", "volume_capability.access_mode", func() error {
			_, err := bare.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/tmp/t", VolumeCapability: mountCap(smw)})
			return err
		}},
		{"a volume listed twice in a group", "ModifyVolumeGroupMembership", "volume_ids[1]", func() error {
			_, err := vg.ModifyVolumeGroupMembership(ctx, &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: "g", VolumeIds: []string{"a", "a"}})
			return err
		}},
		{"a bucket protocol not served", "DriverCreateBucket", "protocols[0]", func() error {
			_, err := buckets.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "b1",
				Protocols: []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_AZURE}}})
			return err
		}},
		{"a bucket name that is no DNS name", "DriverCreateBucket", "name", func() error {
			_, err := buckets.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "Not_A_Name", Protocols: []*cosi2.ObjectProtocol{s3Proto()}})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("got %v; want INVALID_ARGUMENT", err)
			}
			if !strings.HasPrefix(msg, tt.rpc+": ") {
				t.Errorf("message %q does not start with %q", msg, tt.rpc+": ")
			}
			if !strings.Contains(msg, ": "+tt.field) {
				t.Errorf("message %q does not name the field %s", msg, tt.field)
			}
		})
	}
}

// scripted is a controller whose CreateVolume answers what the test says.
type scripted struct {
	minimal
	create func(*driver.CreateVolumeRequest) (*driver.Volume, error)
}

func (s scripted) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	return s.create(r)
}

// TestInternalAnswersNameTheOperationAndTheFix: what a backend gets wrong is answered INTERNAL
// with the RPC first and what to change: a plain error names the driver.Err* sentinels that
// choose a code (and keeps the request's secrets out), a size outside an open-ended range says
// "no limit" as every range does, a topology without the feature names the Features field.
func TestInternalAnswersNameTheOperationAndTheFix(t *testing.T) {
	const secret = "hunter2-canary"
	tests := []struct {
		name    string
		create  func(*driver.CreateVolumeRequest) (*driver.Volume, error)
		want    []string
		without []string
	}{
		{"a plain backend error", func(*driver.CreateVolumeRequest) (*driver.Volume, error) {
			return nil, errors.New("array said no")
		}, []string{"CreateVolume: backend error: array said no", "driver.ErrNotFound", "driver.ErrAlreadyExists", "driver.Err*"}, nil},
		{"a plain backend error quoting a secret", func(r *driver.CreateVolumeRequest) (*driver.Volume, error) {
			return nil, fmt.Errorf("login with %s refused", r.Secrets["password"])
		}, []string{"CreateVolume: backend error: login with", "driver.Err*"}, []string{secret}},
		{"a size below an open-ended range", func(*driver.CreateVolumeRequest) (*driver.Volume, error) {
			return &driver.Volume{ID: "v", CapacityBytes: 1}, nil
		}, []string{"CreateVolume: plugin bug:", "outside the requested range [1048576, no limit] bytes"}, []string{", 0]"}},
		{"a topology without the feature", func(*driver.CreateVolumeRequest) (*driver.Volume, error) {
			return &driver.Volume{ID: "v", AccessibleTopology: []driver.Topology{{"zone": "a"}}}, nil
		}, []string{"CreateVolume: plugin bug:", "VOLUME_ACCESSIBILITY_CONSTRAINTS", "Features.VolumeAccessibilityConstraints"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, plugin.Config{Name: "scripted.example.com", VendorVersion: "1", Controller: scripted{create: tt.create}})
			_, err := p.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
				CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}, Secrets: map[string]string{"password": secret}})
			msg := status.Convert(err).Message()
			if status.Code(err) != codes.Internal {
				t.Fatalf("got %v; want INTERNAL", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			for _, w := range tt.without {
				if strings.Contains(msg, w) {
					t.Errorf("message %q contains %q", msg, w)
				}
			}
		})
	}
}
