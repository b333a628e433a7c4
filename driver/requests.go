package driver

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Every request type carries Raw, the CSI request, with its secrets in clear. Printing or
// encoding a request whole would leak them. So each type prints and JSON-encodes itself from Raw,
// with every secret value replaced. The methods are generated into requests_format.go by
// internal/reqfmt, from the struct declarations. TestFormattersAreGenerated fails until a new
// request type has them.

//go:generate env CSIKIT_WRITE_FORMATTERS=1 go test -run ^TestFormattersAreGenerated$ .

// CreateVolumeRequest asks for a new volume.
type CreateVolumeRequest struct {
	// Name is the CO's name for the volume (for Kubernetes, pvc-<uid>). It is the idempotency
	// key: the CO retries with the same name until it gets an answer, so a backend must find an
	// existing volume by it, not create a second one.
	Name string

	// Capacity bounds the size; resolve it with CapacityRange.Resolve. Zero bounds mean the
	// plugin's default size.
	Capacity CapacityRange

	// Capabilities are every way the volume will be used (at least one); the volume must support
	// all of them, or CreateVolume returns ErrUnsupported.
	Capabilities []VolumeCapability

	// Parameters are the opaque StorageClass parameters, meaningful to the backend alone. Reject
	// a key you do not know with ErrInvalidArgument rather than ignore a typo, but accept the
	// csi.storage.k8s.io/pvc/name, pvc/namespace and pv/name keys that the Kubernetes provisioner
	// adds when run with --extra-create-metadata.
	Parameters map[string]string

	// MutableParameters are the initial values of parameters ControllerModifyVolume may change
	// later (only sent to a backend that implements VolumeModifier).
	MutableParameters map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Source is the snapshot or volume to copy from; the zero value means an empty volume. A
	// source that does not exist is ErrNotFound.
	Source ContentSource

	// Topology is nil when the CO states no requirement.
	Topology *TopologyRequirement

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.CreateVolumeRequest
}

// DeleteVolumeRequest asks to delete a volume. A volume that does not exist is already deleted:
// returning ErrNotFound is fine, the library answers OK.
type DeleteVolumeRequest struct {
	// VolumeID is the ID CreateVolume returned.
	VolumeID string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.DeleteVolumeRequest
}

// ValidateVolumeCapabilitiesRequest asks whether a volume supports the given capabilities.
type ValidateVolumeCapabilitiesRequest struct {
	// VolumeID is the volume to check; ErrNotFound when it does not exist.
	VolumeID string

	// VolumeContext is the context CreateVolume returned, as the CO stored it.
	VolumeContext map[string]string

	// Capabilities must all be supported for a confirmed answer.
	Capabilities []VolumeCapability

	// Parameters are the creation parameters the CO believes the volume has.
	Parameters map[string]string

	// MutableParameters are the mutable parameters the CO believes the volume has.
	MutableParameters map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ValidateVolumeCapabilitiesRequest
}

// ControllerPublishVolumeRequest asks to make a volume available to a node.
type ControllerPublishVolumeRequest struct {
	// VolumeID is the volume to attach; ErrNotFound when it does not exist.
	VolumeID string

	// NodeID is the ID the node's NodeGetInfo returned; ErrNotFound when the node is unknown.
	NodeID string

	// Capability is how the node will use the volume; its access mode decides whether a second
	// node may attach (ErrFailedPrecondition when it may not).
	Capability VolumeCapability

	// Readonly asks for read-only attachment, where the storage can enforce it.
	Readonly bool

	// VolumeContext is the context CreateVolume returned.
	VolumeContext map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerPublishVolumeRequest
}

// ControllerUnpublishVolumeRequest asks to detach a volume from a node; an empty NodeID means from every
// node. A volume or node that cannot be found counts as unpublished: returning ErrNotFound is fine,
// the library answers OK.
type ControllerUnpublishVolumeRequest struct {
	// VolumeID is the volume to detach.
	VolumeID string

	// NodeID is the node to detach from; empty means from every node it is attached to.
	NodeID string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerUnpublishVolumeRequest
}

// ListVolumesRequest asks for volumes. A VolumeLister ignores After and Limit (the library pages its
// full answer); a VolumePageLister returns at most Limit volumes (0 = no limit) whose IDs sort
// strictly after After, in ascending ID order.
type ListVolumesRequest struct {
	// After is the last ID of the previous page ("" for the first page); a VolumePageLister
	// returns only IDs that sort strictly after it.
	After string

	// Limit is the most entries a VolumePageLister may return; 0 means no limit.
	Limit int

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ListVolumesRequest
}

// GetCapacityRequest asks how much can be provisioned with these capabilities, parameters and
// topology (each may be empty).
type GetCapacityRequest struct {
	// Capabilities narrow the question to volumes usable this way; empty means any.
	Capabilities []VolumeCapability

	// Parameters are StorageClass parameters (e.g. a pool); empty means any.
	Parameters map[string]string

	// Topology narrows the question to one location; nil means everywhere (only sent to a plugin
	// with Features.VolumeAccessibilityConstraints).
	Topology Topology

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.GetCapacityRequest
}

// CreateSnapshotRequest asks for a snapshot of a volume.
type CreateSnapshotRequest struct {
	// Name is the CO's name for the snapshot and its idempotency key, as for CreateVolume.
	Name string

	// SourceVolumeID is the volume to snapshot; ErrNotFound when it does not exist.
	SourceVolumeID string

	// Parameters are the opaque VolumeSnapshotClass parameters.
	Parameters map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Topology is nil unless the CO states a requirement (needs
	// Features.SnapshotAccessibilityConstraints).
	Topology *TopologyRequirement

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.CreateSnapshotRequest
}

// DeleteSnapshotRequest asks to delete a snapshot. A snapshot that does not exist is already
// deleted: returning ErrNotFound is fine, the library answers OK.
type DeleteSnapshotRequest struct {
	// SnapshotID is the ID CreateSnapshot returned.
	SnapshotID string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.DeleteSnapshotRequest
}

// ListSnapshotsRequest asks for snapshots, optionally only those of one source volume or only one
// snapshot. After and Limit are as in ListVolumesRequest. The library applies the two filters
// again on whatever the backend returns, so a backend may ignore them.
type ListSnapshotsRequest struct {
	// SourceVolumeID, when set, asks only for snapshots of this volume.
	SourceVolumeID string

	// SnapshotID, when set, asks only for this snapshot (an empty list when it does not exist).
	SnapshotID string

	// After is the last ID of the previous page, for a SnapshotPageLister.
	After string

	// Limit is the most entries a SnapshotPageLister may return; 0 means no limit.
	Limit int

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ListSnapshotsRequest
}

// GetSnapshotRequest asks for one snapshot.
type GetSnapshotRequest struct {
	// SnapshotID is the snapshot to return; ErrNotFound when it does not exist.
	SnapshotID string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.GetSnapshotRequest
}

// ControllerExpandVolumeRequest asks to grow a volume.
type ControllerExpandVolumeRequest struct {
	// VolumeID is the volume to grow; ErrNotFound when it does not exist.
	VolumeID string

	// Capacity is the new size range; a volume already within it is success (a retry).
	Capacity CapacityRange

	// Capability is nil when the CO did not say how the volume is used.
	Capability *VolumeCapability

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerExpandVolumeRequest
}

// ControllerGetVolumeRequest asks for one volume.
type ControllerGetVolumeRequest struct {
	// VolumeID is the volume to return; ErrNotFound when it does not exist.
	VolumeID string

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerGetVolumeRequest
}

// ControllerModifyVolumeRequest asks to change mutable parameters of a volume. Only the given keys
// change; a backend must apply all of them or none (ErrUnsupported/ErrInvalidArgument for a key or
// value it does not accept).
type ControllerModifyVolumeRequest struct {
	// VolumeID is the volume to change; ErrNotFound when it does not exist.
	VolumeID string

	// MutableParameters are the keys to change and their new values (at least one).
	MutableParameters map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerModifyVolumeRequest
}

// ControllerGetVolumeHealthRequest asks for the health of one volume.
type ControllerGetVolumeHealthRequest struct {
	// VolumeID is the volume to report on; ErrNotFound when it does not exist.
	VolumeID string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerGetVolumeHealthRequest
}

// ControllerListVolumeHealthRequest asks for every volume with an adverse condition.
type ControllerListVolumeHealthRequest struct {
	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.ControllerListVolumeHealthRequest
}

// NodeStageVolumeRequest asks to make a volume available at a node-global staging path.
type NodeStageVolumeRequest struct {
	// VolumeID is the volume to stage; ErrNotFound when it does not exist.
	VolumeID string

	// StagingTargetPath is an absolute directory the CO has created and made writable for the
	// plugin; the CO uses one per volume. Mount onto it; do not create or remove it.
	StagingTargetPath string

	// Capability is how the volume will be used; stage it so every publish with this capability
	// works (format with FSType for mount access, leave a block volume raw).
	Capability VolumeCapability

	// PublishContext is what ControllerPublishVolume returned for this node (e.g. the LUN or
	// device path); empty when the plugin has no ControllerPublisher.
	PublishContext map[string]string

	// VolumeContext is the context CreateVolume returned.
	VolumeContext map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeStageVolumeRequest
}

// NodeUnstageVolumeRequest undoes NodeStage. It must succeed when the volume is not staged there.
type NodeUnstageVolumeRequest struct {
	// VolumeID is the volume to unstage.
	VolumeID string

	// StagingTargetPath is where NodeStageVolume staged it; leave the directory in place.
	StagingTargetPath string

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeUnstageVolumeRequest
}

// NodePublishVolumeRequest asks to make a volume available at a workload's target path. When the backend
// stages volumes, StagingTargetPath is guaranteed to be set, except for an inline ephemeral volume
// (VolumeContext[EphemeralContextKey] == "true"), which the backend creates here and deletes at
// NodeUnpublishVolume.
type NodePublishVolumeRequest struct {
	// VolumeID is the volume to publish; ErrNotFound when it does not exist.
	VolumeID string

	// StagingTargetPath is where NodeStageVolume staged the volume (bind-mount from there); empty
	// when the backend does not stage, and for inline ephemeral volumes.
	StagingTargetPath string

	// TargetPath is where the workload expects the volume. Its parent exists; the backend creates
	// TargetPath itself (a directory for mount access, a file for block) and is the one to remove
	// it at NodeUnpublishVolume.
	TargetPath string

	// Capability is how the workload uses the volume.
	Capability VolumeCapability

	// Readonly asks for a read-only publication; for a bind mount that takes a remount, or the
	// flag is silently ignored (nodemount does it).
	Readonly bool

	// PublishContext is what ControllerPublishVolume returned for this node.
	PublishContext map[string]string

	// VolumeContext is the context CreateVolume returned, plus the CO's own keys (for Kubernetes
	// pod information when the CSIDriver asks for it, and EphemeralContextKey).
	VolumeContext map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodePublishVolumeRequest
}

// NodeUnpublishVolumeRequest undoes NodePublish; the backend must remove what it created at TargetPath.
// It must succeed when the volume is not published there.
type NodeUnpublishVolumeRequest struct {
	// VolumeID is the volume to unpublish.
	VolumeID string

	// TargetPath is where NodePublishVolume published it; remove it once it is no longer a mount.
	TargetPath string

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeUnpublishVolumeRequest
}

// NodeGetVolumeStatsRequest asks for usage of a volume at a path where it is staged or published.
type NodeGetVolumeStatsRequest struct {
	// VolumeID is the volume to report on.
	VolumeID string

	// VolumePath is a path where the volume is published or staged; a path where it is not is
	// ErrNotFound.
	VolumePath string

	// StagingTargetPath is where the volume is staged, when the CO says (it SHOULD, but older COs
	// do not).
	StagingTargetPath string

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeGetVolumeStatsRequest
}

// NodeExpandVolumeRequest asks to grow a volume on the node (typically its filesystem).
type NodeExpandVolumeRequest struct {
	// VolumeID is the volume to grow; ErrNotFound when it does not exist.
	VolumeID string

	// VolumePath is where the volume is published (or staged).
	VolumePath string

	// StagingTargetPath is where the volume is staged, when the CO says.
	StagingTargetPath string

	// Capacity may be zero: then the backend may grow to the device's full size.
	Capacity CapacityRange

	// Capability is how the volume is used; nil when the CO did not say.
	Capability *VolumeCapability

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeExpandVolumeRequest
}

// NodeGetVolumeHealthRequest asks for the health of a volume as seen from this node.
type NodeGetVolumeHealthRequest struct {
	// VolumeID is the volume to report on.
	VolumeID string

	// VolumePublishPath is a path where the volume is published or staged on this node.
	VolumePublishPath string

	// StagingTargetPath is where the volume is staged, when the CO says.
	StagingTargetPath string

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeGetVolumeHealthRequest
}

// NodeGetStorageHealthRequest asks for the health of the storage backends seen from this node.
type NodeGetStorageHealthRequest struct {
	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.NodeGetStorageHealthRequest
}

// CreateVolumeGroupSnapshotRequest asks for snapshots of several volumes taken together.
type CreateVolumeGroupSnapshotRequest struct {
	// Name is the CO's name for the group snapshot and its idempotency key.
	Name string

	// SourceVolumeIDs are the volumes to snapshot together (at least one); each member snapshot's
	// SourceVolumeID must be one of them.
	SourceVolumeIDs []string

	// Parameters are the opaque VolumeGroupSnapshotClass parameters.
	Parameters map[string]string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.CreateVolumeGroupSnapshotRequest
}

// DeleteVolumeGroupSnapshotRequest asks to delete a group snapshot and its member snapshots. A
// group that does not exist is already deleted: ErrNotFound is answered with OK. SnapshotIDs is what
// the CO believes the members are; report a mismatch with ErrInvalidArgument.
type DeleteVolumeGroupSnapshotRequest struct {
	// GroupSnapshotID is the ID CreateVolumeGroupSnapshot returned.
	GroupSnapshotID string

	// SnapshotIDs are the member snapshots as the CO knows them.
	SnapshotIDs []string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.DeleteVolumeGroupSnapshotRequest
}

// GetVolumeGroupSnapshotRequest asks for one group snapshot.
type GetVolumeGroupSnapshotRequest struct {
	// GroupSnapshotID is the group snapshot to return; ErrNotFound when it does not exist.
	GroupSnapshotID string

	// SnapshotIDs are the member snapshots as the CO knows them; a mismatch the backend can see is
	// ErrInvalidArgument.
	SnapshotIDs []string

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.GetVolumeGroupSnapshotRequest
}

// GetMetadataAllocatedRequest asks for the allocated ranges of a snapshot from StartingOffset on.
type GetMetadataAllocatedRequest struct {
	// SnapshotID is the snapshot to describe; ErrNotFound when it does not exist.
	SnapshotID string

	// StartingOffset is the byte offset to start from; the library drops ranges that end before
	// it, so a backend may start earlier (e.g. at the block that contains it).
	StartingOffset int64

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.GetMetadataAllocatedRequest
}

// GetMetadataDeltaRequest asks for the ranges that changed between two snapshots of one volume.
type GetMetadataDeltaRequest struct {
	// BaseSnapshotID is the older snapshot.
	BaseSnapshotID string

	// TargetSnapshotID is the newer snapshot of the same volume.
	TargetSnapshotID string

	// StartingOffset is as in GetMetadataAllocatedRequest.
	StartingOffset int64

	// Secrets are the credentials the CO passed (named by the StorageClass or snapshot class).
	// They print with their values hidden; still, never put a value in an error message, which
	// reaches the CO's events.
	Secrets Secrets

	// Raw is the request as received, after validation, for fields this struct does not carry
	// (a newer spec's additions). Read it, never modify it: the library still uses it.
	Raw *csi.GetMetadataDeltaRequest
}
