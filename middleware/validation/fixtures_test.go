package validation

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Hand-built, fully populated, valid messages: every top-level field set, with values a real CO
// or plugin would send.

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
			FsType:           "ext4",
			MountFlags:       []string{"noatime", "nodev"},
			VolumeMountGroup: "1000",
		}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	}
}

func secrets() map[string]string {
	return map[string]string{"username": "admin", "password": "s3cr3t-Pa55word!", "ca.crt_v-1": "-----BEGIN-----"}
}

func topo(zone string) *csi.Topology {
	return &csi.Topology{Segments: map[string]string{"topology.example.com/region": "R1", "zone": zone}}
}

const (
	volID   = "vol-0123456789abcdef"
	snapID  = "snap-0123456789abcdef"
	groupID = "group-snap-01"
	nodeID  = "node-1.example.com"
)

func validCreateVolume() *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:               "pvc-6d7c2c6e-1c4e-4d42-9c3a-2f7e0e7c3d11",
		CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 30, LimitBytes: 2 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(), blockCap()},
		Parameters:         map[string]string{"type": "ssd", "csi.storage.k8s.io/fstype": "ext4"},
		Secrets:            secrets(),
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snapID}}},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{topo("Z1"), topo("Z2")},
			Preferred: []*csi.Topology{topo("Z2")},
		},
		MutableParameters: map[string]string{"iops": "3000"},
	}
}

func validControllerPublish() *csi.ControllerPublishVolumeRequest {
	return &csi.ControllerPublishVolumeRequest{
		VolumeId:         volID,
		NodeId:           nodeID,
		VolumeCapability: mountCap(),
		Readonly:         true,
		Secrets:          secrets(),
		VolumeContext:    map[string]string{"pool": "fast", "storage.kubernetes.io/csiProvisionerIdentity": "1700000000000-1234-hostpath.csi.k8s.io"},
	}
}

func validRequests() []proto.Message {
	return []proto.Message{
		&csi.GetPluginInfoRequest{},
		&csi.GetPluginCapabilitiesRequest{},
		&csi.ProbeRequest{},
		validCreateVolume(),
		&csi.DeleteVolumeRequest{VolumeId: volID, Secrets: secrets()},
		validControllerPublish(),
		&csi.ControllerUnpublishVolumeRequest{VolumeId: volID, NodeId: nodeID, Secrets: secrets()},
		&csi.ValidateVolumeCapabilitiesRequest{
			VolumeId:           volID,
			VolumeContext:      map[string]string{"pool": "fast"},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap()},
			Parameters:         map[string]string{"type": "ssd"},
			Secrets:            secrets(),
			MutableParameters:  map[string]string{"iops": "3000"},
		},
		&csi.ListVolumesRequest{MaxEntries: 100, StartingToken: "opaque-token-1"},
		&csi.ControllerListVolumeHealthRequest{MaxEntries: 10, StartingToken: "t", Secrets: secrets()},
		&csi.ControllerGetVolumeHealthRequest{VolumeId: volID, Secrets: secrets()},
		&csi.GetCapacityRequest{
			VolumeCapabilities: []*csi.VolumeCapability{blockCap()},
			Parameters:         map[string]string{"type": "ssd"},
			AccessibleTopology: topo("Z1"),
		},
		&csi.ControllerGetCapabilitiesRequest{},
		&csi.CreateSnapshotRequest{
			SourceVolumeId: volID,
			Name:           "snapshot-\u00e9t\u00e9 2024\twith tab",
			Secrets:        secrets(),
			Parameters:     map[string]string{"retention": "7d"},
			AccessibilityRequirements: &csi.TopologyRequirement{
				Preferred: []*csi.Topology{topo("Z3")},
			},
		},
		&csi.DeleteSnapshotRequest{SnapshotId: snapID, Secrets: secrets()},
		&csi.ListSnapshotsRequest{MaxEntries: 5, StartingToken: "t2", SourceVolumeId: volID, SnapshotId: snapID, Secrets: secrets()},
		&csi.GetSnapshotRequest{SnapshotId: snapID, Secrets: secrets()},
		&csi.ControllerExpandVolumeRequest{
			VolumeId:         volID,
			CapacityRange:    &csi.CapacityRange{RequiredBytes: 10 << 30},
			Secrets:          secrets(),
			VolumeCapability: mountCap(),
		},
		&csi.ControllerGetVolumeRequest{VolumeId: volID},
		&csi.ControllerModifyVolumeRequest{VolumeId: volID, Secrets: secrets(), MutableParameters: map[string]string{"iops": "6000"}},
		&csi.GroupControllerGetCapabilitiesRequest{},
		&csi.CreateVolumeGroupSnapshotRequest{
			Name:            "group-snapshot-1",
			SourceVolumeIds: []string{volID, "vol-2"},
			Secrets:         secrets(),
			Parameters:      map[string]string{"consistency": "crash"},
		},
		&csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: groupID, SnapshotIds: []string{snapID, "snap-2"}, Secrets: secrets()},
		&csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: groupID, SnapshotIds: []string{snapID}, Secrets: secrets()},
		&csi.GetMetadataAllocatedRequest{SnapshotId: snapID, StartingOffset: 4096, MaxResults: 256, Secrets: secrets()},
		&csi.GetMetadataDeltaRequest{BaseSnapshotId: snapID, TargetSnapshotId: "snap-2", StartingOffset: 1 << 20, MaxResults: 1, Secrets: secrets()},
		&csi.NodeStageVolumeRequest{
			VolumeId:          volID,
			PublishContext:    map[string]string{"devicePath": "/dev/xvdf"},
			StagingTargetPath: "/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/0f1e/globalmount",
			VolumeCapability:  mountCap(),
			Secrets:           secrets(),
			VolumeContext:     map[string]string{"pool": "fast"},
		},
		&csi.NodeUnstageVolumeRequest{VolumeId: volID, StagingTargetPath: "/var/lib/kubelet/staging/vol"},
		&csi.NodePublishVolumeRequest{
			VolumeId:          volID,
			PublishContext:    map[string]string{"devicePath": "/dev/xvdf"},
			StagingTargetPath: "/var/lib/kubelet/staging/vol",
			TargetPath:        "/var/lib/kubelet/pods/1234/volumes/kubernetes.io~csi/pvc-1/mount",
			VolumeCapability:  blockCap(),
			Readonly:          true,
			Secrets:           secrets(),
			VolumeContext:     map[string]string{"csi.storage.k8s.io/ephemeral": "false"},
		},
		&csi.NodeUnpublishVolumeRequest{VolumeId: volID, TargetPath: "/var/lib/kubelet/pods/1234/volumes/mount"},
		&csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: "/var/lib/kubelet/pods/1234/volumes/mount", StagingTargetPath: "/var/lib/kubelet/staging/vol"},
		&csi.NodeGetVolumeHealthRequest{VolumeId: volID, VolumePublishPath: "/var/lib/kubelet/pods/1/mount", StagingTargetPath: "/var/lib/kubelet/staging/vol"},
		&csi.NodeGetStorageHealthRequest{Secrets: secrets()},
		&csi.NodeExpandVolumeRequest{
			VolumeId:          volID,
			VolumePath:        "/var/lib/kubelet/pods/1234/volumes/mount",
			CapacityRange:     &csi.CapacityRange{LimitBytes: 20 << 30},
			StagingTargetPath: "/var/lib/kubelet/staging/vol",
			VolumeCapability:  mountCap(),
			Secrets:           secrets(),
		},
		&csi.NodeGetCapabilitiesRequest{},
		&csi.NodeGetInfoRequest{},
	}
}

func validVolume() *csi.Volume {
	return &csi.Volume{
		CapacityBytes: 1 << 30,
		VolumeId:      volID,
		VolumeContext: map[string]string{"pool": "fast"},
		ContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "vol-src"}}},
		AccessibleTopology: []*csi.Topology{topo("Z1")},
	}
}

func validSnapshot() *csi.Snapshot {
	return &csi.Snapshot{
		SizeBytes:          1 << 30,
		SnapshotId:         snapID,
		SourceVolumeId:     volID,
		CreationTime:       timestamppb.New(timestamppb.Now().AsTime()),
		ReadyToUse:         true,
		GroupSnapshotId:    groupID,
		AccessibleTopology: []*csi.Topology{topo("Z1")},
	}
}

func validGroupSnapshot() *csi.VolumeGroupSnapshot {
	return &csi.VolumeGroupSnapshot{
		GroupSnapshotId: groupID,
		Snapshots:       []*csi.Snapshot{validSnapshot()},
		CreationTime:    timestamppb.Now(),
		ReadyToUse:      true,
	}
}

func validHealth() *csi.VolumeHealth {
	return &csi.VolumeHealth{
		VolumeId: volID,
		HealthStatuses: []*csi.VolumeHealth_VolumeHealthEntry{
			{Status: csi.VolumeHealthErrorType_DEGRADED, Reason: "PathDown", Message: "one of two paths is down"},
		},
	}
}

func validResponses() []proto.Message {
	blocks := []*csi.BlockMetadata{{ByteOffset: 0, SizeBytes: 4096}, {ByteOffset: 8192, SizeBytes: 4096}}
	return []proto.Message{
		&csi.GetPluginInfoResponse{Name: "hostpath.csi.k8s.io", VendorVersion: "v1.2.3", Manifest: map[string]string{"url": "https://example.com"}},
		&csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
			{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
			{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
		}},
		&csi.ProbeResponse{Ready: wrapperspb.Bool(true)},
		&csi.CreateVolumeResponse{Volume: validVolume()},
		&csi.DeleteVolumeResponse{},
		&csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{"devicePath": "/dev/xvdf"}},
		&csi.ControllerUnpublishVolumeResponse{},
		&csi.ValidateVolumeCapabilitiesResponse{
			Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
				VolumeContext:      map[string]string{"pool": "fast"},
				VolumeCapabilities: []*csi.VolumeCapability{mountCap()},
				Parameters:         map[string]string{"type": "ssd"},
				MutableParameters:  map[string]string{"iops": "3000"},
			},
			Message: "all good",
		},
		&csi.ListVolumesResponse{
			Entries: []*csi.ListVolumesResponse_Entry{{
				Volume: validVolume(),
				Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: []string{nodeID}},
			}},
			NextToken: "next",
		},
		&csi.ControllerListVolumeHealthResponse{Entries: []*csi.VolumeHealth{validHealth()}, NextToken: "n"},
		&csi.ControllerGetVolumeHealthResponse{VolumeHealth: validHealth()},
		&csi.GetCapacityResponse{AvailableCapacity: 1 << 40, MaximumVolumeSize: wrapperspb.Int64(1 << 40), MinimumVolumeSize: wrapperspb.Int64(1 << 20)},
		&csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
			{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}}},
		}},
		&csi.CreateSnapshotResponse{Snapshot: validSnapshot()},
		&csi.DeleteSnapshotResponse{},
		&csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{{Snapshot: validSnapshot()}}, NextToken: "n"},
		&csi.GetSnapshotResponse{Snapshot: validSnapshot()},
		&csi.ControllerExpandVolumeResponse{CapacityBytes: 10 << 30, NodeExpansionRequired: true},
		&csi.ControllerGetVolumeResponse{
			Volume: validVolume(),
			Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: []string{nodeID}},
		},
		&csi.ControllerModifyVolumeResponse{},
		&csi.GroupControllerGetCapabilitiesResponse{Capabilities: []*csi.GroupControllerServiceCapability{
			{Type: &csi.GroupControllerServiceCapability_Rpc{Rpc: &csi.GroupControllerServiceCapability_RPC{Type: csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT}}},
		}},
		&csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: validGroupSnapshot()},
		&csi.DeleteVolumeGroupSnapshotResponse{},
		&csi.GetVolumeGroupSnapshotResponse{GroupSnapshot: validGroupSnapshot()},
		&csi.GetMetadataAllocatedResponse{BlockMetadataType: csi.BlockMetadataType_FIXED_LENGTH, VolumeCapacityBytes: 1 << 30, BlockMetadata: blocks},
		&csi.GetMetadataDeltaResponse{BlockMetadataType: csi.BlockMetadataType_VARIABLE_LENGTH, VolumeCapacityBytes: 1 << 30, BlockMetadata: blocks},
		&csi.NodeStageVolumeResponse{},
		&csi.NodeUnstageVolumeResponse{},
		&csi.NodePublishVolumeResponse{},
		&csi.NodeUnpublishVolumeResponse{},
		&csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Available: 10, Total: 100, Used: 90, Unit: csi.VolumeUsage_BYTES}}},
		&csi.NodeGetVolumeHealthResponse{VolumeHealth: validHealth()},
		&csi.NodeGetStorageHealthResponse{BackendHealth: []*csi.NodeGetStorageHealthResponse_StorageBackendHealth{
			{Status: csi.StorageHealthErrorType_STORAGE_DEGRADED, Reason: "HighLatency", Message: "p99 > 1s", VolumeCapability: blockCap()},
		}},
		&csi.NodeExpandVolumeResponse{CapacityBytes: 20 << 30},
		&csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
			{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}}},
		}},
		&csi.NodeGetInfoResponse{NodeId: nodeID, MaxVolumesPerNode: 16, AccessibleTopology: topo("Z1")},
	}
}
