package driver

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
)

// CreateVolumeRequest asks for a new volume.
type CreateVolumeRequest struct {
	Name              string
	Capacity          CapacityRange
	Capabilities      []VolumeCapability
	Parameters        map[string]string
	MutableParameters map[string]string
	Secrets           Secrets
	Source            ContentSource
	// Topology is nil when the CO states no requirement.
	Topology *TopologyRequirement
	Raw      *csi.CreateVolumeRequest
}

// DeleteVolumeRequest asks to delete a volume. A volume that does not exist is already deleted:
// returning ErrNotFound is fine, the library answers OK.
type DeleteVolumeRequest struct {
	VolumeID string
	Secrets  Secrets
	Raw      *csi.DeleteVolumeRequest
}

// ValidateVolumeCapabilitiesRequest asks whether a volume supports the given capabilities.
type ValidateVolumeCapabilitiesRequest struct {
	VolumeID          string
	VolumeContext     map[string]string
	Capabilities      []VolumeCapability
	Parameters        map[string]string
	MutableParameters map[string]string
	Secrets           Secrets
	Raw               *csi.ValidateVolumeCapabilitiesRequest
}

// ControllerPublishRequest asks to make a volume available to a node.
type ControllerPublishRequest struct {
	VolumeID      string
	NodeID        string
	Capability    VolumeCapability
	Readonly      bool
	VolumeContext map[string]string
	Secrets       Secrets
	Raw           *csi.ControllerPublishVolumeRequest
}

// ControllerUnpublishRequest asks to detach a volume from a node; an empty NodeID means from every
// node. A volume or node that cannot be found counts as unpublished: returning ErrNotFound is fine,
// the library answers OK.
type ControllerUnpublishRequest struct {
	VolumeID string
	NodeID   string
	Secrets  Secrets
	Raw      *csi.ControllerUnpublishVolumeRequest
}

// ListVolumesRequest asks for volumes. A VolumeLister ignores After and Limit (the library pages its
// full answer); a VolumePageLister returns at most Limit volumes (0 = no limit) whose IDs sort
// strictly after After, in ascending ID order.
type ListVolumesRequest struct {
	After string
	Limit int
	Raw   *csi.ListVolumesRequest
}

// GetCapacityRequest asks how much can be provisioned with these capabilities, parameters and
// topology (each may be empty).
type GetCapacityRequest struct {
	Capabilities []VolumeCapability
	Parameters   map[string]string
	Topology     Topology
	Raw          *csi.GetCapacityRequest
}

// CreateSnapshotRequest asks for a snapshot of a volume.
type CreateSnapshotRequest struct {
	Name           string
	SourceVolumeID string
	Parameters     map[string]string
	Secrets        Secrets
	// Topology is nil unless the CO states a requirement (needs
	// Features.SnapshotAccessibilityConstraints).
	Topology *TopologyRequirement
	Raw      *csi.CreateSnapshotRequest
}

// DeleteSnapshotRequest asks to delete a snapshot. A snapshot that does not exist is already
// deleted: returning ErrNotFound is fine, the library answers OK.
type DeleteSnapshotRequest struct {
	SnapshotID string
	Secrets    Secrets
	Raw        *csi.DeleteSnapshotRequest
}

// ListSnapshotsRequest asks for snapshots, optionally only those of one source volume or only one
// snapshot. After and Limit are as in ListVolumesRequest. The library applies the two filters
// again on whatever the backend returns, so a backend may ignore them.
type ListSnapshotsRequest struct {
	SourceVolumeID string
	SnapshotID     string
	After          string
	Limit          int
	Secrets        Secrets
	Raw            *csi.ListSnapshotsRequest
}

// GetSnapshotRequest asks for one snapshot.
type GetSnapshotRequest struct {
	SnapshotID string
	Secrets    Secrets
	Raw        *csi.GetSnapshotRequest
}

// ControllerExpandVolumeRequest asks to grow a volume.
type ControllerExpandVolumeRequest struct {
	VolumeID string
	Capacity CapacityRange
	// Capability is nil when the CO did not say how the volume is used.
	Capability *VolumeCapability
	Secrets    Secrets
	Raw        *csi.ControllerExpandVolumeRequest
}

// ControllerGetVolumeRequest asks for one volume.
type ControllerGetVolumeRequest struct {
	VolumeID string
	Raw      *csi.ControllerGetVolumeRequest
}

// ControllerModifyVolumeRequest asks to change mutable parameters of a volume. Only the given keys
// change; a backend must apply all of them or none (ErrUnsupported/ErrInvalidArgument for a key or
// value it does not accept).
type ControllerModifyVolumeRequest struct {
	VolumeID          string
	MutableParameters map[string]string
	Secrets           Secrets
	Raw               *csi.ControllerModifyVolumeRequest
}

// ControllerGetVolumeHealthRequest asks for the health of one volume.
type ControllerGetVolumeHealthRequest struct {
	VolumeID string
	Secrets  Secrets
	Raw      *csi.ControllerGetVolumeHealthRequest
}

// ControllerListVolumeHealthRequest asks for every volume with an adverse condition.
type ControllerListVolumeHealthRequest struct {
	Secrets Secrets
	Raw     *csi.ControllerListVolumeHealthRequest
}

// NodeStageRequest asks to make a volume available at a node-global staging path.
type NodeStageRequest struct {
	VolumeID          string
	StagingTargetPath string
	Capability        VolumeCapability
	PublishContext    map[string]string
	VolumeContext     map[string]string
	Secrets           Secrets
	Raw               *csi.NodeStageVolumeRequest
}

// NodeUnstageRequest undoes NodeStage. It must succeed when the volume is not staged there.
type NodeUnstageRequest struct {
	VolumeID          string
	StagingTargetPath string
	Raw               *csi.NodeUnstageVolumeRequest
}

// NodePublishRequest asks to make a volume available at a workload's target path. When the backend
// stages volumes, StagingTargetPath is guaranteed to be set, except for an inline ephemeral volume
// (VolumeContext[EphemeralContextKey] == "true"), which the backend creates here and deletes at
// NodeUnpublishVolume.
type NodePublishRequest struct {
	VolumeID          string
	StagingTargetPath string
	TargetPath        string
	Capability        VolumeCapability
	Readonly          bool
	PublishContext    map[string]string
	VolumeContext     map[string]string
	Secrets           Secrets
	Raw               *csi.NodePublishVolumeRequest
}

// NodeUnpublishRequest undoes NodePublish; the backend must remove what it created at TargetPath.
// It must succeed when the volume is not published there.
type NodeUnpublishRequest struct {
	VolumeID   string
	TargetPath string
	Raw        *csi.NodeUnpublishVolumeRequest
}

// NodeGetVolumeStatsRequest asks for usage of a volume at a path where it is staged or published.
type NodeGetVolumeStatsRequest struct {
	VolumeID          string
	VolumePath        string
	StagingTargetPath string
	Raw               *csi.NodeGetVolumeStatsRequest
}

// NodeExpandVolumeRequest asks to grow a volume on the node (typically its filesystem).
type NodeExpandVolumeRequest struct {
	VolumeID          string
	VolumePath        string
	StagingTargetPath string
	// Capacity may be zero: then the backend may grow to the device's full size.
	Capacity   CapacityRange
	Capability *VolumeCapability
	Secrets    Secrets
	Raw        *csi.NodeExpandVolumeRequest
}

// NodeGetVolumeHealthRequest asks for the health of a volume as seen from this node.
type NodeGetVolumeHealthRequest struct {
	VolumeID          string
	VolumePublishPath string
	StagingTargetPath string
	Raw               *csi.NodeGetVolumeHealthRequest
}

// NodeGetStorageHealthRequest asks for the health of the storage backends seen from this node.
type NodeGetStorageHealthRequest struct {
	Secrets Secrets
	Raw     *csi.NodeGetStorageHealthRequest
}

// CreateVolumeGroupSnapshotRequest asks for snapshots of several volumes taken together.
type CreateVolumeGroupSnapshotRequest struct {
	Name            string
	SourceVolumeIDs []string
	Parameters      map[string]string
	Secrets         Secrets
	Raw             *csi.CreateVolumeGroupSnapshotRequest
}

// DeleteVolumeGroupSnapshotRequest asks to delete a group snapshot and its member snapshots. A
// group that does not exist is already deleted: ErrNotFound is answered with OK. SnapshotIDs is what
// the CO believes the members are; report a mismatch with ErrInvalidArgument.
type DeleteVolumeGroupSnapshotRequest struct {
	GroupSnapshotID string
	SnapshotIDs     []string
	Secrets         Secrets
	Raw             *csi.DeleteVolumeGroupSnapshotRequest
}

// GetVolumeGroupSnapshotRequest asks for one group snapshot.
type GetVolumeGroupSnapshotRequest struct {
	GroupSnapshotID string
	SnapshotIDs     []string
	Secrets         Secrets
	Raw             *csi.GetVolumeGroupSnapshotRequest
}

// GetMetadataAllocatedRequest asks for the allocated ranges of a snapshot from StartingOffset on.
type GetMetadataAllocatedRequest struct {
	SnapshotID     string
	StartingOffset int64
	Secrets        Secrets
	Raw            *csi.GetMetadataAllocatedRequest
}

// GetMetadataDeltaRequest asks for the ranges that changed between two snapshots of one volume.
type GetMetadataDeltaRequest struct {
	BaseSnapshotID   string
	TargetSnapshotID string
	StartingOffset   int64
	Secrets          Secrets
	Raw              *csi.GetMetadataDeltaRequest
}
