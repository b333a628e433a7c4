// Package driver is the CSI contract: the Go interfaces a storage vendor implements.
//
// It also holds the requests they receive, and the values and errors they return. Package
// plugin serves them as a CSI plugin that keeps every MUST of the spec. It is to this package
// what database/sql is to database/sql/driver.
//
// # Backends
//
// A backend is any Go value that implements one of the required interfaces:
//
//   - [Controller]: CreateVolume, DeleteVolume, ValidateVolumeCapabilities;
//   - [Node]: NodePublishVolume, NodeUnpublishVolume, NodeGetInfo;
//   - [GroupController]: group snapshots;
//   - [SnapshotMetadata]: changed-block tracking.
//
// Every further ability is an optional interface, found by type assertion on the same value. On
// a controller: [ControllerPublisher], [VolumeLister] or [VolumePageLister], [CapacityReporter],
// [Snapshotter], [SnapshotLister] or [SnapshotPageLister], [SnapshotGetter], [VolumeExpander],
// [VolumeGetter], [VolumeModifier], [VolumeHealthGetter], [VolumeHealthLister]. On a node:
// [NodeStager], [VolumeStatsReporter], [NodeExpander], [NodeVolumeHealthGetter],
// [StorageHealthReporter]. On any: [Prober].
//
// Method names are unique across all interfaces, so one value can be controller and node at
// once. A plugin derives the capabilities it advertises from the interfaces its backends
// implement. [Features] are the capabilities that are promises, not RPCs: clone, read-only
// publish, topology, and a few more.
//
// # Requests
//
// Each request type is named after the method that receives it, plus Request:
// [CreateVolumeRequest], [NodeStageVolumeRequest], and so on. A page lister receives its full
// lister's request.
//
// Every request a backend receives has passed validation. Required fields are set. Sizes are
// within the spec's limits, and capacity ranges are consistent. Names carry no banned characters,
// and secret keys are well formed. Each request keeps the original CSI message in Raw, for the
// rare field it does not lift out. Backends must not modify it. Requests print and JSON-encode
// with their secrets redacted, and so does [Secrets].
//
// Requests that create by name carry Fingerprint and CheckExisting, for the spec's idempotency
// rule: [CreateVolumeRequest], [CreateSnapshotRequest], [CreateVolumeGroupSnapshotRequest]. An
// existing resource compatible with a repeated request is the answer. An incompatible one is
// [ErrAlreadyExists].
//
// # Values
//
// Backends answer with plain Go values: [Volume], [VolumeEntry], [Snapshot], [GroupSnapshot],
// [Capacity], [VolumeHealth], [StorageHealth], [VolumeUsage], [NodeInfo] and
// [BlockMetadataStream]. They are built from [VolumeCapability], [AccessMode], [CapacityRange]
// ([CapacityRange.Resolve] picks a size), [ContentSource], [Topology] and [TopologyRequirement].
//
// # Errors
//
// Backends return plain Go errors that wrap the sentinels: [ErrNotFound], [ErrAlreadyExists],
// [ErrInUse], [ErrUnsupported], [ErrOutOfRange], [ErrResourceExhausted], and more. Every protocol
// csikit serves shares them. The plugin turns them into the code each RPC's error table demands,
// and each sentinel's doc lists the CSI answers. DeleteVolume of a missing volume is OK, while
// NodeUnpublishVolume of one is NOT_FOUND. NodePublishVolume of an unsupported capability is
// FAILED_PRECONDITION. Anything unknown is INTERNAL, with a message that names the RPC. A gRPC
// status returned as is keeps its code. Status details are always dropped.
//
// # Slow, unreachable and asynchronous backends
//
// A backend on networked storage is sometimes slow, and sometimes down. Some of its operations
// outlive a call. None of that may become a wrong answer, and most of it is the plugin's work:
//
//   - Faults are UNAVAILABLE. Return [ErrUnavailable] for a fault the plugin cannot recognise. A
//     refused or broken connection, a timeout of the backend's own and a wrapped UNAVAILABLE
//     status are recognised anywhere in the error's chain; ErrUnavailable lists them. Never
//     return a sentinel that names the request for a fault: ErrInvalidArgument,
//     ErrAlreadyExists, ErrOutOfRange or ErrUnsupported. The COs take those as final.
//   - Deadlines: the context a method gets ends when the CO's deadline passes. With
//     plugin.Config.BackendTimeout, it ends at the plugin's bound too. Honour it in every call
//     into the storage. A method that hangs anyway keeps its resource locked until it returns.
//     So a retry meanwhile is ABORTED, not a second operation beside the first.
//   - Readiness: a Prober that cannot reach the storage returns ready=false, or ErrUnavailable,
//     or the network error itself. The plugin then reports not ready, and turns ready again when
//     the Prober does, with no restart. A Probe that hangs is cut short, and counts as not ready.
//
// An asynchronous operation follows one rule: a clone the storage copies in the background, or a
// snapshot it cuts later. The CO's retry must find the operation the first call started, and
// finish it. Never a second operation, and never one that nobody will finish or delete.
//
//  1. Derive the backend's name for the result from the request's name, the CO's idempotency
//     key, not from a random ID. A retry then looks it up before starting anything: after
//     ABORTED, UNAVAILABLE, a timeout, or a crash of the plugin.
//  2. Record the request's Fingerprint with the result once it is complete. Check a repeated
//     request against it (CheckExisting): compatible is the answer, incompatible is
//     ErrAlreadyExists.
//  3. While the operation runs, answer an error that wraps [ErrPending] (ABORTED). The CO
//     retries with backoff. Do not wait in the call for a long copy. CreateSnapshot may instead
//     answer the snapshot with ReadyToUse false, which the CO polls.
//  4. The retry that finds it complete finishes what the first call left: size, metadata,
//     temporary snapshots. It answers exactly as a single successful call would have.
//  5. An operation that failed or was cancelled is removed before the answer (ErrUnavailable,
//     so the retry starts it cleanly). A delete of a volume still being made cancels the
//     operation first. Nothing is left that no call will ever see.
//  6. Listings leave out results that are not complete, so the CO never adopts half a volume.
//
// examples/cephfs is the model. Its CreateVolume from a snapshot or a volume starts the Ceph
// mgr's asynchronous subvolume clone, under the request's name. It answers ErrPending while the
// clone runs, and finishes the volume on the retry that finds it complete. It removes a failed
// clone. Its DeleteVolume cancels a clone in progress.
//
// # Listings
//
// A backend gives either the full listing ([VolumeLister], [SnapshotLister]) or one page after a
// cursor ([VolumePageLister], [SnapshotPageLister]). A page lister keeps a page at O(page). Items
// are ordered by ID. The plugin's next_token resumes strictly after the last ID returned. So an
// item that exists through the whole listing is never skipped, and the listing always ends.
//
// Related packages: [github.com/csikit/csikit/driver/plugin] serves a backend.
// [github.com/csikit/csikit/driver/memdriver] is a complete in-memory backend, to read before
// writing your own. [github.com/csikit/csikit/driver/drivertest] proves any driver correct, with
// csi-sanity and csikit's own specs. [github.com/csikit/csikit/driver/nodemount] does the
// node-side mounting that is easy to get wrong. The contracts of the services a plugin can serve
// beside CSI are in packages of their own, next to this one.
package driver
