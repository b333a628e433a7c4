package memdriver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/memdriver"
)

// TestExpandRepeated checks that a repeated ControllerExpandVolume gives the same answer,
// node_expansion_required included, until the node has grown the volume: a CO that lost the first
// answer must still learn that the node has work to do.
func TestExpandRepeated(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		block bool
		// node expansion required after the first and the repeated controller call, and after a
		// controller call that follows the node expansion
		want [3]bool
	}{
		{"filesystem", false, [3]bool{true, true, false}},
		{"block", true, [3]bool{false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := memdriver.New(memdriver.Options{})
			raw := &csi.CreateVolumeRequest{Name: tt.name}
			v, err := d.CreateVolume(ctx, &driver.CreateVolumeRequest{Name: tt.name, Raw: raw,
				Capacity:     driver.CapacityRange{RequiredBytes: 1 << 20},
				Capabilities: []driver.VolumeCapability{{AccessMode: driver.SingleNodeWriter, Block: tt.block}}})
			if err != nil {
				t.Fatal(err)
			}
			expand := func() (int64, bool) {
				t.Helper()
				size, node, err := d.ControllerExpandVolume(ctx, &driver.ControllerExpandVolumeRequest{
					VolumeID: v.ID, Capacity: driver.CapacityRange{RequiredBytes: 2 << 20}})
				if err != nil {
					t.Fatal(err)
				}
				return size, node
			}
			var got [3]bool
			s1, n := expand()
			got[0] = n
			s2, n := expand()
			got[1] = n
			if s1 != 2<<20 || s2 != s1 {
				t.Errorf("sizes %d then %d, want %d twice", s1, s2, 2<<20)
			}
			if _, err := d.NodeExpandVolume(ctx, &driver.NodeExpandVolumeRequest{VolumeID: v.ID, VolumePath: "/x",
				Capacity: driver.CapacityRange{RequiredBytes: 2 << 20}}); err != nil {
				t.Fatal(err)
			}
			_, got[2] = expand()
			if got != tt.want {
				t.Errorf("node_expansion_required = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRestageWithOtherSettingsIsAlreadyExists(t *testing.T) {
	d := memdriver.New(memdriver.Options{})
	ctx := context.Background()
	vol, err := d.CreateVolume(ctx, &driver.CreateVolumeRequest{Name: "v", Raw: &csi.CreateVolumeRequest{Name: "v"},
		Capabilities: []driver.VolumeCapability{{AccessMode: driver.SingleNodeWriter}}})
	if err != nil {
		t.Fatal(err)
	}
	stage := func(path string, block bool) error {
		return d.NodeStageVolume(ctx, &driver.NodeStageVolumeRequest{VolumeID: vol.ID, StagingTargetPath: path,
			Capability: driver.VolumeCapability{AccessMode: driver.SingleNodeWriter, Block: block}})
	}
	tests := []struct {
		name  string
		path  string
		block bool
		want  error
	}{
		{"first", "/s", false, nil},
		{"same again", "/s", false, nil},
		{"other path", "/other", false, driver.ErrAlreadyExists},
		{"other access type", "/s", true, driver.ErrAlreadyExists},
	}
	for _, tt := range tests {
		if err := stage(tt.path, tt.block); !errors.Is(err, tt.want) {
			t.Fatalf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}
