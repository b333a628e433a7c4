// Package driver is the CSI contract: the Go interfaces a storage vendor implements, the requests
// they receive and the values and errors they return. Package plugin serves them as a CSI plugin
// that obeys every MUST of the spec, as database/sql serves what database/sql/driver declares.
//
// # Backends
//
// A backend is any Go value that implements one of the required interfaces: Controller
// (CreateVolume, DeleteVolume, ValidateVolumeCapabilities), Node (NodePublishVolume,
// NodeUnpublishVolume, NodeGetInfo), GroupController (group snapshots) or SnapshotMetadata
// (changed-block tracking). Every further ability is an optional interface found by type
// assertion on the same value: ControllerPublisher, VolumeLister or VolumePageLister,
// CapacityReporter, Snapshotter, SnapshotLister or SnapshotPageLister, SnapshotGetter,
// VolumeExpander, VolumeGetter, VolumeModifier, VolumeHealthGetter, VolumeHealthLister on a
// controller; NodeStager, VolumeStatsReporter, NodeExpander, NodeVolumeHealthGetter,
// StorageHealthReporter on a node; Prober on any. Method names are unique across all interfaces,
// so one value can be controller and node at once. The capabilities a plugin advertises are
// derived from the interfaces its backends implement; Features are the capabilities that are
// promises rather than RPCs (clone, readonly publish, topology, ...).
//
// # Requests
//
// Each request type is named after the method that receives it, plus Request
// (CreateVolumeRequest, NodeStageVolumeRequest, ...); a page lister receives its full lister's
// request. Every request a backend receives has already passed validation: required fields are
// set, sizes are within the spec's limits, capacity ranges are consistent, names carry no banned
// characters and secret keys are well formed. Each keeps the original CSI message in Raw for the
// rare field it does not lift out; backends must not modify it. Requests print and JSON-encode
// with their secrets redacted (Secrets likewise). Create-by-name requests (CreateVolumeRequest,
// CreateSnapshotRequest, CreateVolumeGroupSnapshotRequest) carry Fingerprint and CheckExisting for
// the spec's idempotency rule: an existing resource compatible with a repeated request is the
// answer, an incompatible one ErrAlreadyExists.
//
// # Values
//
// Backends answer with plain Go values: Volume, VolumeEntry, Snapshot, GroupSnapshot, Capacity,
// VolumeHealth, StorageHealth, VolumeUsage, NodeInfo and BlockMetadataStream, built from
// VolumeCapability, AccessMode, CapacityRange (Resolve picks a size), ContentSource, Topology and
// TopologyRequirement.
//
// # Errors
//
// Backends return plain Go errors wrapping the sentinels (ErrNotFound, ErrAlreadyExists, ErrInUse,
// ErrUnsupported, ErrOutOfRange, ErrResourceExhausted, ...), which every protocol csikit serves
// shares. The plugin turns them into the code each RPC's error table demands, and each
// sentinel's doc lists the CSI answers: DeleteVolume of a missing volume is OK while
// NodeUnpublishVolume of one is NOT_FOUND, NodePublishVolume of an unsupported capability is
// FAILED_PRECONDITION, anything unknown is INTERNAL with a message that names the RPC. A gRPC
// status returned as is keeps its code; status details are always dropped.
//
// # Slow, unreachable and asynchronous backends
//
// A backend on networked storage is sometimes slow, sometimes down, and some of its operations
// outlive a call. None of that may become a wrong answer, and most of it is the plugin's work:
//
//   - Faults are UNAVAILABLE. Return ErrUnavailable for a fault the plugin cannot recognise; a
//     refused or broken connection, a timeout of the backend's own and a wrapped UNAVAILABLE
//     status are recognised anywhere in the error's chain (ErrUnavailable lists them). Never
//     return a sentinel that names the request (ErrInvalidArgument, ErrAlreadyExists,
//     ErrOutOfRange, ErrUnsupported) for a fault: the COs take those as final.
//   - Deadlines: the context a method gets ends when the CO's deadline passes or, with
//     plugin.Config.BackendTimeout, at the plugin's bound; honour it in every call into the
//     storage. A method that hangs anyway keeps its resource locked until it returns, so a
//     retry meanwhile is ABORTED, not a second operation beside the first.
//   - Readiness: a Prober that cannot reach the storage returns ready=false or ErrUnavailable
//     (or the network error itself); the plugin then reports not ready and turns ready again
//     when the Prober does, with no restart. A Probe that hangs is cut short and counts as not
//     ready.
//
// An asynchronous operation (a clone the storage copies in the background, a snapshot it cuts
// later) follows one rule: the CO's retry must find the operation the first call started and
// finish it; never a second operation, never one that nobody will finish or delete.
//
//  1. Derive the backend's name for the operation's result from the request's name (the CO's
//     idempotency key), not from a random ID, so that a retry (after ABORTED, UNAVAILABLE, a
//     timeout, a crash of the plugin) looks it up before starting anything.
//  2. Record the request's Fingerprint with the result once it is complete, and check a
//     repeated request against it (CheckExisting): compatible is the answer, incompatible is
//     ErrAlreadyExists.
//  3. While the operation runs, answer an error wrapping ErrPending (ABORTED): the CO retries
//     with backoff. Do not wait in the call for a long copy. (CreateSnapshot may instead answer
//     the snapshot with ReadyToUse false, which the CO polls.)
//  4. The retry that finds it complete finishes what the first call left (size, metadata,
//     temporary snapshots) and answers exactly as a single successful call would have.
//  5. One that failed or was cancelled is removed before the answer (ErrUnavailable, so the
//     retry starts it cleanly), and a delete of a volume still being made cancels the operation
//     first: nothing is left that no call will ever see.
//  6. Listings leave out results that are not complete, so the CO never adopts half a volume.
//
// examples/cephfs is the model: its CreateVolume from a snapshot or a volume starts the Ceph
// mgr's asynchronous subvolume clone under the request's name, answers ErrPending while the
// clone runs, finishes the volume on the retry that finds it complete, removes a failed clone,
// and its DeleteVolume cancels a clone in progress.
//
// # Listings
//
// A backend gives either the full listing (VolumeLister, SnapshotLister) or one page after a
// cursor (VolumePageLister, SnapshotPageLister), which keeps a page at O(page). Items are ordered
// by ID and the plugin's next_token resumes strictly after the last ID returned, so an item that
// exists through the whole listing is never skipped and the listing always ends.
//
// Related packages: driver/plugin serves a backend; driver/memdriver is a complete in-memory
// backend to read before writing your own; driver/drivertest proves any driver correct
// (csi-sanity plus csikit's own specs); driver/nodemount does the node-side mounting that is easy
// to get wrong. The contracts of the services a plugin can serve beside CSI are in packages of
// their own, next to this one.
package driver
