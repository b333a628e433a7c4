package secrets

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
)

// typicalCreateVolume is the request the benchmarks and golden tests use:
// name, capacity range, two volume capabilities with mount flags, three
// parameters, two secrets, a snapshot content source and a topology
// requirement with two requisite and one preferred segment.
func typicalCreateVolume() *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:          "pvc-5f1c2a9e-8d1b-4c3e-9a7f-0b6d2e4c8a11",
		CapacityRange: &csi.CapacityRange{RequiredBytes: 10 << 30, LimitBytes: 20 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{
			{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
					FsType: "ext4", MountFlags: []string{"noatime", "discard"},
				}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			},
			{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
					FsType: "xfs", MountFlags: []string{"nouuid"},
				}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
			},
		},
		Parameters: map[string]string{"pool": "fast-ssd", "replicas": "3", "encrypted": "true"},
		Secrets:    map[string]string{"username": "admin", "password": "hunter2-s3cr3t"},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "snap-0123456789"},
		}},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{
				{Segments: map[string]string{"topology.example.com/zone": "zone-a"}},
				{Segments: map[string]string{"topology.example.com/zone": "zone-b"}},
			},
			Preferred: []*csi.Topology{
				{Segments: map[string]string{"topology.example.com/zone": "zone-a"}},
			},
		},
	}
}
