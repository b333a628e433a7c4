package driver_test

import (
	"errors"
	"math"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver"
)

func TestCheckExisting(t *testing.T) {
	req := func(c driver.CapacityRange, topo *driver.TopologyRequirement) *driver.CreateVolumeRequest {
		caps := []driver.VolumeCapability{{AccessMode: driver.SingleNodeWriter, FSType: "ext4"}}
		return &driver.CreateVolumeRequest{
			Name: "v", Capacity: c, Capabilities: caps, Topology: topo,
			Raw: &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}}},
		}
	}
	stored := req(driver.CapacityRange{RequiredBytes: 100}, nil).Fingerprint()
	tests := []struct {
		name     string
		req      *driver.CreateVolumeRequest
		existing *driver.Volume
		ok       bool
	}{
		{"unknown size (0) is never out of range", req(driver.CapacityRange{RequiredBytes: 1 << 40}, nil), &driver.Volume{ID: "v1"}, true},
		{"size inside the range", req(driver.CapacityRange{RequiredBytes: 50, LimitBytes: 200}, nil), &driver.Volume{ID: "v1", CapacityBytes: 100}, true},
		{"size below required", req(driver.CapacityRange{RequiredBytes: 101}, nil), &driver.Volume{ID: "v1", CapacityBytes: 100}, false},
		{"a volume with no topology is accessible everywhere",
			req(driver.CapacityRange{}, &driver.TopologyRequirement{Requisite: []driver.Topology{{"zone": "b"}}}),
			&driver.Volume{ID: "v1"}, true},
		{"a segment with fewer keys than the requisite holds in it",
			req(driver.CapacityRange{}, &driver.TopologyRequirement{Requisite: []driver.Topology{{"zone": "a", "rack": "1"}}}),
			&driver.Volume{ID: "v1", AccessibleTopology: []driver.Topology{{"zone": "a"}}}, true},
		{"a segment with a key the requisite lacks does not hold",
			req(driver.CapacityRange{}, &driver.TopologyRequirement{Requisite: []driver.Topology{{"zone": "a"}}}),
			&driver.Volume{ID: "v1", AccessibleTopology: []driver.Topology{{"zone": "a", "rack": "1"}}}, false},
		{"preferred alone never fails",
			req(driver.CapacityRange{}, &driver.TopologyRequirement{Preferred: []driver.Topology{{"zone": "b"}}}),
			&driver.Volume{ID: "v1", AccessibleTopology: []driver.Topology{{"zone": "a"}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.CheckExisting(stored, tt.existing)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckExisting = %v, want ok = %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, driver.ErrAlreadyExists) {
				t.Errorf("error %v does not wrap ErrAlreadyExists", err)
			}
		})
	}
}

func TestCapacityRangeResolveNeverOverflows(t *testing.T) {
	tests := []struct {
		name        string
		r           driver.CapacityRange
		granularity int64
		want        int64
		outOfRange  bool
	}{
		{"rounded up", driver.CapacityRange{RequiredBytes: 1}, 4096, 4096, false},
		{"default when unset", driver.CapacityRange{}, 4096, 1 << 20, false},
		{"required near the maximum cannot be rounded up", driver.CapacityRange{RequiredBytes: math.MaxInt64 - 10}, 4096, 0, true},
		{"the maximum itself with byte granularity fits", driver.CapacityRange{RequiredBytes: math.MaxInt64}, 1, math.MaxInt64, false},
		{"rounding past the limit", driver.CapacityRange{RequiredBytes: 1, LimitBytes: 100}, 4096, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.Resolve(1<<20, tt.granularity)
			if tt.outOfRange {
				if !errors.Is(err, driver.ErrOutOfRange) {
					t.Fatalf("Resolve = %d, %v; want ErrOutOfRange", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
