// Package driver turns a few small Go interfaces about your storage into a CSI plugin that obeys
// every MUST of the spec. It is the map of the SDK; the rest of csikit serves it.
//
// # Backends
//
// A backend is any Go value that implements one of the required interfaces: Controller
// (CreateVolume, DeleteVolume, ValidateVolumeCapabilities), Node (NodePublishVolume,
// NodeUnpublishVolume, NodeGetInfo), GroupController or SnapshotMetadata. Every further ability is
// an optional interface found by type assertion on the same value, in the manner of
// database/sql/driver: ControllerPublisher, VolumeLister or VolumePageLister, CapacityReporter,
// Snapshotter, SnapshotLister or SnapshotPageLister, SnapshotGetter, VolumeExpander, VolumeGetter,
// VolumeModifier, VolumeHealthGetter, VolumeHealthLister on a controller; NodeStager,
// VolumeStatsReporter, NodeExpander, NodeVolumeHealthGetter, StorageHealthReporter on a node;
// Prober on any. Method names are unique across all interfaces, so one value can be controller and
// node at once. New refuses a backend of any kind (Controller, Node, GroupController,
// SnapshotMetadata, VolumeGroups, Buckets) that has a method named like one of its optional
// interfaces' but does not implement that interface (a wrong signature, a missing sibling),
// naming the interface and the signature it expects, because the capability would otherwise
// silently disappear.
//
// # Capabilities
//
// The capabilities a plugin advertises are derived from the interfaces its backends implement, so
// it never advertises an RPC it does not serve nor serves one it does not advertise; an RPC it does
// not serve answers UNIMPLEMENTED naming the RPC and the interface. Capabilities that are promises
// rather than RPCs (clone, readonly publish, topology, ...) are Features, which the library
// enforces on requests. CapabilityOverrides replace the derived lists and are checked at start-up;
// a plugin whose controller and node run as separate processes declares its plugin capabilities
// with CapabilityOverrides.Plugin so that every process reports the same set.
//
// # Requests
//
// Every request a backend receives has already passed validation: required fields are set, sizes
// are within the spec's limits, capacity ranges are consistent, names carry no banned characters
// and secret keys are well formed. Each typed request keeps the original CSI message in Raw for
// the rare field it does not lift out; backends must not modify it. Requests print, JSON-encode
// and zap-log with their secrets redacted. Create-by-name calls carry Fingerprint and
// CheckExisting for the spec's idempotency rule: an existing resource compatible with a repeated
// request is the answer, an incompatible one ErrAlreadyExists.
//
// # Errors
//
// Backends return plain Go errors wrapping the sentinels (ErrNotFound, ErrAlreadyExists, ErrInUse,
// ErrUnsupported, ErrOutOfRange, ErrResourceExhausted, ...). The library turns them into the code
// each RPC's error table demands: DeleteVolume of a missing volume is OK, NodePublishVolume of an
// unsupported capability is FAILED_PRECONDITION, anything unknown is INTERNAL with a message that
// names the RPC. A gRPC status returned as is keeps its code; status details are always dropped.
//
// # Every call
//
// Register (and NewServer, Serve, Run, which use it) puts the library's chain inside every method
// it registers, so no way of composing a server skips it: request ID, panic recovery, logging
// (redacted), status sanitising, the gate (undecodable requests, RPCs not served), validation,
// per-resource locking (a conflicting call gets ABORTED naming the resource; sources of a create
// are held shared), then the handler and the error mapping. Each RPC is described once, in one
// table inside this package, which drives all of this.
//
// # Listings
//
// Items are ordered by ID and a next_token resumes strictly after the last ID returned: an item
// that exists through the whole listing is never skipped, items added or removed meanwhile may or
// may not appear, and the listing always ends because the cursor only moves forward. Tokens are
// opaque, bounded and tamper-evident; a token this plugin did not mint for this listing is
// ABORTED. A backend gives either the full listing (VolumeLister) or one page after a cursor
// (VolumePageLister), which keeps a page at O(page).
//
// # Volume groups and object buckets
//
// The same Config serves two services beside CSI on the same socket. Config.VolumeGroups serves
// the volume-group service (VolumeGroupController, optionally VolumeGroupGetter and
// VolumeGroupLister or VolumeGroupPageLister). Config.Buckets serves COSI: a BucketProvisioner
// (create, delete), optionally a BucketGetter (static buckets) and a BucketAccessGranter (grant,
// revoke), written once against version-neutral requests and served as both cosi.v1alpha1 (the
// released sidecar) and sigs.k8s.io.cosi.v1alpha2. The library applies COSI's rules there as it
// does CSI's: DNS-subdomain names and 2048-character IDs, known protocols and modes, ABORTED for a
// concurrent duplicate on a bucket name, bucket or account, deletes and revokes of what is gone
// answered OK, an OUT_OF_RANGE grant exactly when Config.MultiBucketAccess is off and several
// buckets are asked for, answers checked for what the sidecar requires, credentials never in a log
// line, error or panic report, and the COSI_ENDPOINT rules (a unix socket ending in ".sock").
//
// # Serving
//
// New checks a Config (identity, backends, features, overrides) and refuses a misconfigured
// plugin at start-up. Run listens on CSI_ENDPOINT (COSI_ENDPOINT for a bucket-only plugin; unix sockets; a stale socket is replaced,
// anything else at the path is never deleted), serves, and on SIGTERM or SIGINT stops accepting,
// lets in-flight calls finish up to a deadline and removes the socket. It is ready (/readyz with
// Config.HTTPEndpoint) once the backends' Probe passes, retried with backoff, so storage that is
// unreachable at start-up shows as "not ready" rather than as a crash loop.
//
// Related packages: driver/memdriver is a complete in-memory backend to read before writing your
// own; driver/drivertest proves any driver correct (csi-sanity plus csikit's own specs);
// driver/nodemount does the node-side mounting that is easy to get wrong; driver/cmdline and
// driver/endpoint handle the operator's knobs and the socket.
package driver
