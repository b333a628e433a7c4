package driver

import (
	"context"
	"iter"
)

// Controller is the required part of a controller backend (capability CREATE_DELETE_VOLUME).
type Controller interface {
	// CreateVolume provisions a volume or, for a name it has seen, returns the existing volume when
	// the request is compatible (see CreateVolumeRequest.CheckExisting) and an error wrapping
	// ErrAlreadyExists otherwise. A missing source is ErrNotFound; a capacity range it cannot honour
	// is ErrOutOfRange; a source or capability it cannot provide is ErrUnsupported; no space in the
	// requested topology is ErrResourceExhausted.
	CreateVolume(ctx context.Context, req *CreateVolumeRequest) (*Volume, error)
	// DeleteVolume deletes a volume; ErrNotFound counts as success; a volume still in use (or with
	// dependent snapshots the backend cannot keep) is ErrInUse.
	DeleteVolume(ctx context.Context, req *DeleteVolumeRequest) error
	// ValidateVolumeCapabilities returns nil when the volume supports every requested capability,
	// an error wrapping ErrUnsupported to decline (its text becomes the response's message, and the
	// call still succeeds), or ErrNotFound for a volume that does not exist.
	ValidateVolumeCapabilities(ctx context.Context, req *ValidateVolumeCapabilitiesRequest) error
}

// ControllerPublisher attaches volumes to nodes (capability PUBLISH_UNPUBLISH_VOLUME).
type ControllerPublisher interface {
	// ControllerPublishVolume returns the publish context passed on to the node calls. A missing
	// volume or node is ErrNotFound; published to the node with other settings is ErrAlreadyExists;
	// published to another node with a single-node mode is ErrFailedPrecondition; the node's attach
	// limit reached is ErrResourceExhausted.
	ControllerPublishVolume(ctx context.Context, req *ControllerPublishRequest) (publishContext map[string]string, err error)
	// ControllerUnpublishVolume detaches; not attached (or not found) is success.
	ControllerUnpublishVolume(ctx context.Context, req *ControllerUnpublishRequest) error
}

// VolumeLister returns every volume at once; the library sorts, pages and mints tokens
// (capability LIST_VOLUMES). Implement VolumePageLister instead when listing everything is costly.
type VolumeLister interface {
	ListVolumes(ctx context.Context, req *ListVolumesRequest) ([]VolumeEntry, error)
}

// VolumePageLister returns one page of volumes: at most req.Limit (0 = no limit) with IDs strictly
// after req.After, in ascending byte order of ID (strings.Compare, not a locale collation)
// (capability LIST_VOLUMES). One page then costs O(page). A page may be shorter than asked for;
// the library asks again from its last ID until it has enough or a page comes back empty.
type VolumePageLister interface {
	ListVolumesPage(ctx context.Context, req *ListVolumesRequest) ([]VolumeEntry, error)
}

// CapacityReporter reports free capacity (capability GET_CAPACITY).
type CapacityReporter interface {
	GetCapacity(ctx context.Context, req *GetCapacityRequest) (*Capacity, error)
}

// Snapshotter creates and deletes snapshots (capability CREATE_DELETE_SNAPSHOT; the backend's
// CreateVolume must then accept snapshot sources).
type Snapshotter interface {
	// CreateSnapshot is idempotent by name like CreateVolume: an existing snapshot of the same
	// source volume is returned, another source is ErrAlreadyExists. A missing source volume is
	// ErrNotFound; no space is ErrResourceExhausted.
	CreateSnapshot(ctx context.Context, req *CreateSnapshotRequest) (*Snapshot, error)
	// DeleteSnapshot deletes; ErrNotFound counts as success; in use is ErrInUse; a member of a group
	// snapshot is ErrGroupMember.
	DeleteSnapshot(ctx context.Context, req *DeleteSnapshotRequest) error
}

// SnapshotLister returns every matching snapshot at once (capability LIST_SNAPSHOTS).
type SnapshotLister interface {
	ListSnapshots(ctx context.Context, req *ListSnapshotsRequest) ([]Snapshot, error)
}

// SnapshotPageLister returns one page of snapshots sorted by ID, as VolumePageLister does
// (capability LIST_SNAPSHOTS).
type SnapshotPageLister interface {
	ListSnapshotsPage(ctx context.Context, req *ListSnapshotsRequest) ([]Snapshot, error)
}

// SnapshotGetter returns one snapshot (capability GET_SNAPSHOT); ErrNotFound when it does not
// exist. It also serves ListSnapshots filtered by snapshot ID without a full listing.
type SnapshotGetter interface {
	GetSnapshot(ctx context.Context, req *GetSnapshotRequest) (*Snapshot, error)
}

// VolumeExpander grows volumes on the controller side (capability EXPAND_VOLUME).
type VolumeExpander interface {
	// ControllerExpandVolume returns the new capacity and whether NodeExpandVolume must follow. A
	// missing volume is ErrNotFound; a range it cannot honour is ErrOutOfRange. Published volumes
	// must grow too unless Features.Expansion is ExpansionOffline; then a published volume is
	// ErrInUse.
	ControllerExpandVolume(ctx context.Context, req *ControllerExpandVolumeRequest) (capacityBytes int64, nodeExpansionRequired bool, err error)
}

// VolumeGetter returns one volume (capability GET_VOLUME); ErrNotFound when it does not exist.
type VolumeGetter interface {
	ControllerGetVolume(ctx context.Context, req *ControllerGetVolumeRequest) (*VolumeEntry, error)
}

// VolumeModifier changes mutable parameters (capability MODIFY_VOLUME; CreateVolume then also
// receives MutableParameters).
type VolumeModifier interface {
	ControllerModifyVolume(ctx context.Context, req *ControllerModifyVolumeRequest) error
}

// VolumeHealthGetter reports one volume's health from the controller's view (capability
// GET_VOLUME_HEALTH).
type VolumeHealthGetter interface {
	ControllerGetVolumeHealth(ctx context.Context, req *ControllerGetVolumeHealthRequest) (*VolumeHealth, error)
}

// VolumeHealthLister reports every volume with an adverse condition (capability
// LIST_VOLUME_HEALTH; the spec requires GET_VOLUME_HEALTH too). The library pages the answer.
type VolumeHealthLister interface {
	ControllerListVolumeHealth(ctx context.Context, req *ControllerListVolumeHealthRequest) ([]VolumeHealth, error)
}

// Node is the required part of a node backend.
type Node interface {
	// NodePublishVolume makes the volume available at req.TargetPath (creating it). Published at
	// that path with other settings is ErrAlreadyExists; a capability the volume cannot provide is
	// ErrUnsupported; a missing volume is ErrNotFound. Published there already with the same
	// settings is success.
	NodePublishVolume(ctx context.Context, req *NodePublishRequest) error
	// NodeUnpublishVolume undoes NodePublishVolume and removes what it created at req.TargetPath.
	NodeUnpublishVolume(ctx context.Context, req *NodeUnpublishRequest) error
	// NodeGetInfo identifies this node.
	NodeGetInfo(ctx context.Context) (*NodeInfo, error)
}

// NodeStager stages volumes once per node before publishing (capability STAGE_UNSTAGE_VOLUME).
type NodeStager interface {
	NodeStageVolume(ctx context.Context, req *NodeStageRequest) error
	NodeUnstageVolume(ctx context.Context, req *NodeUnstageRequest) error
}

// VolumeStatsReporter reports usage (capability GET_VOLUME_STATS). A volume that does not exist
// at req.VolumePath is ErrNotFound.
type VolumeStatsReporter interface {
	NodeGetVolumeStats(ctx context.Context, req *NodeGetVolumeStatsRequest) ([]VolumeUsage, error)
}

// NodeExpander grows volumes on the node, e.g. resizes the filesystem (node capability
// EXPAND_VOLUME). It returns the new capacity, 0 if unknown.
type NodeExpander interface {
	NodeExpandVolume(ctx context.Context, req *NodeExpandVolumeRequest) (capacityBytes int64, err error)
}

// NodeVolumeHealthGetter reports one volume's health from this node (node capability
// GET_VOLUME_HEALTH).
type NodeVolumeHealthGetter interface {
	NodeGetVolumeHealth(ctx context.Context, req *NodeGetVolumeHealthRequest) (*VolumeHealth, error)
}

// StorageHealthReporter reports the storage backends' health from this node (capability
// GET_STORAGE_HEALTH).
type StorageHealthReporter interface {
	NodeGetStorageHealth(ctx context.Context, req *NodeGetStorageHealthRequest) ([]StorageHealth, error)
}

// GroupController takes snapshots of several volumes together (GroupController service, capability
// CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT).
type GroupController interface {
	// CreateVolumeGroupSnapshot is idempotent by name; an existing group with other sources or
	// parameters is ErrAlreadyExists; volumes that cannot be snapshotted together is
	// ErrFailedPrecondition; no space is ErrResourceExhausted.
	CreateVolumeGroupSnapshot(ctx context.Context, req *CreateVolumeGroupSnapshotRequest) (*GroupSnapshot, error)
	DeleteVolumeGroupSnapshot(ctx context.Context, req *DeleteVolumeGroupSnapshotRequest) error
	GetVolumeGroupSnapshot(ctx context.Context, req *GetVolumeGroupSnapshotRequest) (*GroupSnapshot, error)
}

// BlockMetadataStream is a backend's answer to a snapshot metadata call. Blocks must yield ranges in
// ascending, non-overlapping order; ranges that end at or before the requested starting offset
// are dropped by the library, which also splits them into messages of at most max_results and
// stops the iteration when the client goes away.
type BlockMetadataStream struct {
	Type                BlockMetadataType
	VolumeCapacityBytes int64
	Blocks              iter.Seq2[BlockRange, error]
}

// SnapshotMetadata serves changed-block and allocated-block metadata of block volume snapshots
// (plugin capability SNAPSHOT_METADATA_SERVICE). A missing snapshot is ErrNotFound; a starting
// offset past the volume's end is answered OUT_OF_RANGE by the library; no changed-block tracking
// is ErrFailedPrecondition.
type SnapshotMetadata interface {
	GetMetadataAllocated(ctx context.Context, req *GetMetadataAllocatedRequest) (*BlockMetadataStream, error)
	GetMetadataDelta(ctx context.Context, req *GetMetadataDeltaRequest) (*BlockMetadataStream, error)
}

// Prober is optional on any backend: Probe reports whether the plugin is ready. Return ready=false
// while still initialising; return an error (e.g. wrapping ErrFailedPrecondition) when unhealthy.
// With several backends, the plugin is ready when all of them are.
type Prober interface {
	Probe(ctx context.Context) (ready bool, err error)
}
