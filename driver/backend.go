package driver

import (
	"context"
	"iter"
)

// Controller is the required part of a controller backend (capability CREATE_DELETE_VOLUME).
//
// The CO retries every call until it gets a definite answer, possibly after a crash that made it
// forget it had asked, so each method must be idempotent: the same call twice gives the same
// answer and creates or deletes nothing the second time. The library holds an in-flight lock per
// volume ID and create name, so the backend never sees two calls on one volume at once in one
// process; it still must survive a retry of a call that half-completed before a restart.
type Controller interface {
	// CreateVolume provisions a volume or, for a name it has seen, returns the existing volume when
	// the request is compatible (see CreateVolumeRequest.CheckExisting) and an error wrapping
	// ErrAlreadyExists otherwise. A missing source is ErrNotFound; a capacity range it cannot honour
	// is ErrOutOfRange; a source or capability it cannot provide is ErrUnsupported; no space in the
	// requested topology is ErrResourceExhausted.
	CreateVolume(ctx context.Context, req *CreateVolumeRequest) (*Volume, error)
	// DeleteVolume deletes a volume. A volume that does not exist is already deleted: return nil or
	// ErrNotFound, both answer OK, because the retry of a delete that succeeded must not fail. A
	// volume still in use (or with dependent snapshots the backend cannot keep) is ErrInUse, which
	// the CO retries later (FAILED_PRECONDITION).
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
	ControllerPublishVolume(ctx context.Context, req *ControllerPublishVolumeRequest) (publishContext map[string]string, err error)
	// ControllerUnpublishVolume detaches the volume from req.NodeID, or from every node when NodeID
	// is empty. Not attached, or a volume or node that no longer exists, is success (return nil or
	// ErrNotFound): the CO only wants the volume off the node. Return a gRPC NOT_FOUND status
	// instead only when the volume or node is gone and yet cannot be regarded as detached.
	ControllerUnpublishVolume(ctx context.Context, req *ControllerUnpublishVolumeRequest) error
}

// VolumeLister returns every volume at once; the library sorts, pages and mints tokens
// (capability LIST_VOLUMES). Implement VolumePageLister instead when listing everything is costly.
type VolumeLister interface {
	// ListVolumes returns every volume in any order; req.After and req.Limit are not used. The
	// library keeps each listing consistent across pages, so an entry that exists through the
	// whole listing is never skipped.
	ListVolumes(ctx context.Context, req *ListVolumesRequest) ([]VolumeEntry, error)
}

// VolumePageLister returns one page of volumes: at most req.Limit (0 = no limit) with IDs strictly
// after req.After, in ascending byte order of ID (strings.Compare, not a locale collation)
// (capability LIST_VOLUMES). One page then costs O(page). A page may be shorter than asked for;
// the library asks again from its last ID until it has enough or a page comes back empty.
type VolumePageLister interface {
	// ListVolumesPage returns at most req.Limit volumes whose IDs sort strictly after req.After,
	// ascending. Resuming after an ID, not an offset, is what keeps a listing from skipping or
	// repeating entries while volumes are created and deleted between pages.
	ListVolumesPage(ctx context.Context, req *ListVolumesRequest) ([]VolumeEntry, error)
}

// CapacityReporter reports free capacity (capability GET_CAPACITY).
type CapacityReporter interface {
	// GetCapacity returns the bytes available for a new volume with req's capabilities,
	// parameters and topology, each possibly empty ("in general"). An answer is a snapshot, not a
	// reservation: CreateVolume may still run out of space.
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
	// ListSnapshots returns every snapshot, optionally narrowed by req.SourceVolumeID or
	// req.SnapshotID; the library filters and pages again, so ignoring the filters is correct,
	// only slower. An unknown snapshot ID is an empty list, not ErrNotFound.
	ListSnapshots(ctx context.Context, req *ListSnapshotsRequest) ([]Snapshot, error)
}

// SnapshotPageLister returns one page of snapshots sorted by ID, as VolumePageLister does
// (capability LIST_SNAPSHOTS).
type SnapshotPageLister interface {
	// ListSnapshotsPage returns at most req.Limit snapshots whose IDs sort strictly after
	// req.After, ascending, like VolumePageLister.ListVolumesPage.
	ListSnapshotsPage(ctx context.Context, req *ListSnapshotsRequest) ([]Snapshot, error)
}

// SnapshotGetter returns one snapshot (capability GET_SNAPSHOT); ErrNotFound when it does not
// exist. It also serves ListSnapshots filtered by snapshot ID without a full listing.
type SnapshotGetter interface {
	// GetSnapshot returns the snapshot req.SnapshotID, or an error wrapping ErrNotFound.
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
	// ControllerGetVolume returns the volume req.VolumeID with the nodes it is published on (when
	// Features.ListVolumesPublishedNodes is set), or an error wrapping ErrNotFound.
	ControllerGetVolume(ctx context.Context, req *ControllerGetVolumeRequest) (*VolumeEntry, error)
}

// VolumeModifier changes mutable parameters (capability MODIFY_VOLUME; CreateVolume then also
// receives MutableParameters).
type VolumeModifier interface {
	// ControllerModifyVolume applies req.MutableParameters to an existing volume, all or none, so a
	// retry after a failure starts from a known state. Applying values the volume already has is
	// success. A missing volume is ErrNotFound; a key or value it does not accept is
	// ErrInvalidArgument (or ErrUnsupported); no room for the new setting (e.g. IOPS quota) is
	// ErrResourceExhausted.
	ControllerModifyVolume(ctx context.Context, req *ControllerModifyVolumeRequest) error
}

// VolumeHealthGetter reports one volume's health from the controller's view (capability
// GET_VOLUME_HEALTH).
type VolumeHealthGetter interface {
	// ControllerGetVolumeHealth returns the volume's adverse conditions (none means healthy), or
	// an error wrapping ErrNotFound. A VolumeID left empty in the answer is filled from req.
	ControllerGetVolumeHealth(ctx context.Context, req *ControllerGetVolumeHealthRequest) (*VolumeHealth, error)
}

// VolumeHealthLister reports every volume with an adverse condition (capability
// LIST_VOLUME_HEALTH; the spec requires GET_VOLUME_HEALTH too). The library pages the answer.
type VolumeHealthLister interface {
	// ControllerListVolumeHealth returns the health of every volume that has at least one adverse
	// condition; healthy volumes may be left out, which keeps the answer small on a big cluster.
	ControllerListVolumeHealth(ctx context.Context, req *ControllerListVolumeHealthRequest) ([]VolumeHealth, error)
}

// Node is the required part of a node backend. It runs on every node, on the node where the
// volume is used; paths in its requests are absolute paths of that node's root filesystem as the
// plugin process sees them. Like the controller methods, each method must be idempotent.
//
// What runs at once: the library holds the path a node call works on, not the whole volume, so
// that two pods on one node publishing one volume are not refused. Two calls for one target
// path, or a NodeStageVolume or NodeUnstageVolume and a NodePublishVolume from that staging
// path, never overlap (the later one gets ABORTED); calls for one volume at different target
// paths may. A backend that keeps state spanning the volume (a count of publications, one
// staged record) serialises those calls itself, waiting rather than refusing, as
// examples/hostpath does with a mutex per volume.
type Node interface {
	// NodePublishVolume makes the volume available at req.TargetPath. The CO creates the parent
	// directory; the backend creates req.TargetPath itself (spec: "Creation of target_path is the
	// responsibility of the SP"), a directory for mount access or a file for a block device.
	// Published there already with the same settings is success. Published at that path with
	// other settings (capability, readonly) is ErrAlreadyExists. Published at another path when
	// the access mode allows one node-level user only is ErrFailedPrecondition; a capability the
	// volume cannot provide is ErrUnsupported (FAILED_PRECONDITION here); a missing volume is
	// ErrNotFound. Package nodemount does the mount part of this right.
	NodePublishVolume(ctx context.Context, req *NodePublishVolumeRequest) error
	// NodeUnpublishVolume undoes NodePublishVolume and deletes the file or directory it created at
	// req.TargetPath, as the spec requires: the CO may reuse or clean up the parent directory. A
	// target that is not published, or no longer exists, is success, because the CO retries this
	// after crashes. A volume that does not exist at all is ErrNotFound (NOT_FOUND).
	NodeUnpublishVolume(ctx context.Context, req *NodeUnpublishVolumeRequest) error
	// NodeGetInfo identifies this node: the ID the controller receives in ControllerPublish, the
	// attach limit and the node's topology. Keep the ID stable across restarts: the CO stores it
	// and sends it back in ControllerPublishVolume.
	NodeGetInfo(ctx context.Context) (*NodeInfo, error)
}

// NodeStager stages volumes once per node before publishing (capability STAGE_UNSTAGE_VOLUME):
// attach or log in to the device, format it if new, and mount it at a node-global staging path
// that each NodePublishVolume then bind-mounts. Implement both methods or neither; plugin.New
// refuses a backend with only one.
//
// Order the CO guarantees: ControllerPublishVolume (if served) before NodeStageVolume;
// NodeStageVolume succeeds before any NodePublishVolume of the volume on this node; every
// NodeUnpublishVolume succeeds before NodeUnstageVolume; NodeUnstageVolume before
// ControllerUnpublishVolume. A backend can rely on it and need not count publications.
type NodeStager interface {
	// NodeStageVolume stages req.VolumeID at req.StagingTargetPath. The CO creates that directory
	// and makes it readable and writable for the plugin (spec: "The CO SHALL be responsible for
	// creating the directory if it does not exist"), so the backend mounts onto it and must not
	// delete it on unstage. The CO uses one staging path per volume.
	//
	// A repeated call for a volume already staged there with the same capability is success and
	// must not mount twice (check the mount table, as nodemount does, rather than a flag in memory
	// that a restart loses). Staged there with a different capability (fs type, mount flags,
	// block versus mount) is ErrAlreadyExists. A capability the volume cannot provide is
	// ErrUnsupported (answered FAILED_PRECONDITION, "exceeds capabilities"); a missing volume is
	// ErrNotFound.
	NodeStageVolume(ctx context.Context, req *NodeStageVolumeRequest) error
	// NodeUnstageVolume undoes everything NodeStageVolume did at req.StagingTargetPath (unmount,
	// detach, log out) and leaves the directory itself to the CO. A volume not staged there is
	// success: the CO repeats this call when it does not know whether the last one worked. A
	// volume that does not exist at all is ErrNotFound.
	NodeUnstageVolume(ctx context.Context, req *NodeUnstageVolumeRequest) error
}

// VolumeStatsReporter reports usage (capability GET_VOLUME_STATS). A volume that does not exist
// at req.VolumePath is ErrNotFound.
type VolumeStatsReporter interface {
	// NodeGetVolumeStats returns usage figures for the volume at req.VolumePath (published or
	// staged there; req.StagingTargetPath tells which when the CO sends it). Block volumes may
	// report only Total; inodes may be left out when the filesystem has none.
	NodeGetVolumeStats(ctx context.Context, req *NodeGetVolumeStatsRequest) ([]VolumeUsage, error)
}

// NodeExpander grows volumes on the node, e.g. resizes the filesystem (node capability
// EXPAND_VOLUME). It returns the new capacity, 0 if unknown.
type NodeExpander interface {
	// NodeExpandVolume grows what the node sees (filesystem, multipath map) to the size the
	// controller already gave the device. Already that size is success. A missing volume or path
	// is ErrNotFound; a size it cannot reach is ErrOutOfRange; a volume that cannot grow while in
	// use is ErrFailedPrecondition.
	NodeExpandVolume(ctx context.Context, req *NodeExpandVolumeRequest) (capacityBytes int64, err error)
}

// NodeVolumeHealthGetter reports one volume's health from this node (node capability
// GET_VOLUME_HEALTH).
type NodeVolumeHealthGetter interface {
	// NodeGetVolumeHealth returns the volume's adverse conditions at req.VolumePublishPath (none
	// means healthy), or an error wrapping ErrNotFound.
	NodeGetVolumeHealth(ctx context.Context, req *NodeGetVolumeHealthRequest) (*VolumeHealth, error)
}

// StorageHealthReporter reports the storage backends' health from this node (capability
// GET_STORAGE_HEALTH).
type StorageHealthReporter interface {
	// NodeGetStorageHealth returns one entry per adverse condition of the storage this node
	// reaches; none means healthy.
	NodeGetStorageHealth(ctx context.Context, req *NodeGetStorageHealthRequest) ([]StorageHealth, error)
}

// GroupController takes snapshots of several volumes together (GroupController service, capability
// CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT).
type GroupController interface {
	// CreateVolumeGroupSnapshot is idempotent by name; an existing group with other sources or
	// parameters is ErrAlreadyExists; volumes that cannot be snapshotted together is
	// ErrFailedPrecondition; no space is ErrResourceExhausted.
	//
	// Every member snapshot must be cut at the same point in time relative to the volumes' write
	// stream (write-order consistency), or the call fails. If it fails before the group has an ID
	// the CO could delete, the backend removes the members it already cut: nothing else will.
	// Return ReadyToUse false while members are still being processed; the CO calls again with
	// the same arguments until it is true.
	CreateVolumeGroupSnapshot(ctx context.Context, req *CreateVolumeGroupSnapshotRequest) (*GroupSnapshot, error)
	// DeleteVolumeGroupSnapshot deletes the group and every member snapshot. A group that does
	// not exist, or whose members are already gone, is success (return nil or ErrNotFound; both
	// answer OK), because a retried delete must not fail. req.SnapshotIDs is the CO's list of
	// members: a backend that can tell it does not match the group returns ErrInvalidArgument,
	// and one that needs the list to delete must check it. A group still in use is ErrInUse.
	DeleteVolumeGroupSnapshot(ctx context.Context, req *DeleteVolumeGroupSnapshotRequest) error
	// GetVolumeGroupSnapshot returns the group req.GroupSnapshotID with all its members, or an
	// error wrapping ErrNotFound when it does not exist any more (NOT_FOUND: unlike delete, "gone"
	// is an answer here, not success). A req.SnapshotIDs that does not match the group is
	// ErrInvalidArgument, as for delete.
	GetVolumeGroupSnapshot(ctx context.Context, req *GetVolumeGroupSnapshotRequest) (*GroupSnapshot, error)
}

// BlockMetadataStream is a backend's answer to a snapshot metadata call. Blocks must yield ranges in
// ascending, non-overlapping order; ranges that end at or before the requested starting offset
// are dropped by the library, which also splits them into messages of at most max_results and
// stops the iteration when the client goes away.
type BlockMetadataStream struct {
	// Type says whether every range in Blocks has the same size (FixedLength, e.g. a block
	// bitmap) or not (VariableLength, e.g. extents).
	Type BlockMetadataType
	// VolumeCapacityBytes is the size of the snapshot's volume, sent in every message so the
	// client knows where the ranges end.
	VolumeCapacityBytes int64
	// Blocks yields the ranges lazily, so a backend can walk a large bitmap without holding it in
	// memory; a non-nil error ends the stream with that error, mapped like any backend error.
	Blocks iter.Seq2[BlockRange, error]
}

// SnapshotMetadata serves changed-block and allocated-block metadata of block volume snapshots
// (plugin capability SNAPSHOT_METADATA_SERVICE). A missing snapshot is ErrNotFound; a starting
// offset past the volume's end is answered OUT_OF_RANGE by the library; no changed-block tracking
// is ErrFailedPrecondition.
type SnapshotMetadata interface {
	// GetMetadataAllocated describes the allocated ranges of snapshot req.SnapshotID, so a backup
	// tool copies only data that exists.
	GetMetadataAllocated(ctx context.Context, req *GetMetadataAllocatedRequest) (*BlockMetadataStream, error)
	// GetMetadataDelta describes the ranges that changed from req.BaseSnapshotID to
	// req.TargetSnapshotID (two snapshots of one volume), for incremental backups.
	GetMetadataDelta(ctx context.Context, req *GetMetadataDeltaRequest) (*BlockMetadataStream, error)
}

// Prober is optional on any backend: Probe reports whether the plugin is ready. Return ready=false
// while still initialising or while the storage is unreachable (an error wrapping ErrUnavailable,
// or the network error itself, counts the same: not ready, not an error code); return another
// error (e.g. wrapping ErrFailedPrecondition) when unhealthy. With several backends, the plugin
// is ready when all of them are. The plugin probes on its own too, so its readiness (/readyz)
// follows the storage down and back up without a restart. In Kubernetes, give such a plugin a
// kubelet livenessProbe on /livez (plugin.Config.HTTPEndpoint) rather than the livenessprobe
// sidecar, which fails on "not ready" and would restart it while the storage is away.
type Prober interface {
	// Probe is called often (a liveness probe), so it should be cheap: check a cached
	// connection, not a full round trip to the array on every call. The plugin waits for it at
	// most plugin.Config.ProbeTimeout and runs one call at a time: a Probe that hangs makes the
	// plugin not ready, never a Probe RPC that hangs.
	Probe(ctx context.Context) (ready bool, err error)
}
