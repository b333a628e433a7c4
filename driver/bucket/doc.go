// Package bucket is the COSI contract: what an object-bucket backend implements so that package
// plugin serves it as a COSI driver. It is to COSI what package driver is to CSI.
//
// A backend implements Provisioner (CreateBucket, DeleteBucket) and, when it can, Getter
// (GetBucket, for buckets an administrator made: static provisioning) and AccessGranter
// (GrantBucketAccess, RevokeBucketAccess), all on one value, found by type assertion. It answers
// with a Bucket (its ID and its S3Info, AzureInfo or GCSInfo) and, for a grant, an Access (the
// account ID, the granted buckets and Credentials). Errors are the sentinels of package driver
// (driver.ErrNotFound, driver.ErrAlreadyExists, ...), which the plugin maps to COSI's codes.
//
// The interfaces speak of buckets, accounts and credentials, never of a wire version. Each request
// (CreateBucketRequest, GetBucketRequest, DeleteBucketRequest, GrantBucketAccessRequest,
// RevokeBucketAccessRequest) carries version-neutral fields, the Version it came by and the wire
// request itself (in the embedded Wire, shared by all but GetBucketRequest), typed: RawV1Alpha1
// (package cosi.v1alpha1, spoken by the released sidecar, Go package
// sigs.k8s.io/container-object-storage-interface/proto) or RawV1Alpha2
// (sigs.k8s.io.cosi.v1alpha2, Go package driver/bucket/cosiv1alpha2), exactly one of them set. Upstream has already moved past
// the v1alpha2 served here (DriverGetExistingBucket renamed DriverGetBucket, access modes split
// into object data, object metadata and bucket metadata, a two-phase bucket ID proposed); such a
// revision is a new adapter in the plugin, not a change to any backend. Create and grant are
// idempotent by name: Fingerprint and CheckExisting decide a repeated call, with the same
// fingerprint whichever version a request came by. Requests print and JSON-encode with
// credentials and secret-looking parameter values hidden; Credentials never print a value.
//
// What the plugin does for a bucket backend, in both versions: validation (names are DNS
// subdomains of at most 253 characters; bucket and account IDs at most 2048 characters of
// [A-Za-z0-9._/-]; known protocols, authentication types and access modes), per-name, per-bucket
// and per-account locking (ABORTED for a concurrent duplicate; grants and revokes hold their
// buckets shared, so grants of different accounts to one bucket run at once, and a backend that
// edits per-bucket state on a grant, such as a bucket policy, serialises those edits itself, as
// examples/rgw does), the error tables (deletes and
// revokes of what is gone answer OK; only a backend's own sentinel becomes a terminal code, so a
// transient fault never looks final to the sidecar), the answer's shape (exactly the requested
// buckets, only the requested protocol, the S3 fields the sidecar requires, both halves of a key),
// and redaction of every credential in logs, errors and panics, and of every parameter value whose
// key looks secret.
//
// # Errors
//
// The plugin answers the sentinels of package driver with these codes, in both versions (the
// table the CSI RPCs use, with COSI's rows):
//
//   - driver.ErrNotFound: NOT_FOUND, but OK from DriverDeleteBucket and DriverRevokeBucketAccess.
//   - driver.ErrAlreadyExists: ALREADY_EXISTS. A v1alpha1 DriverGrantBucketAccess answers
//     FAILED_PRECONDITION instead (any ALREADY_EXISTS, the backend's status too), because the
//     v1alpha1 sidecar crashes on ALREADY_EXISTS from a grant.
//   - driver.ErrInUse: FAILED_PRECONDITION.
//   - driver.ErrFailedPrecondition: FAILED_PRECONDITION.
//   - driver.ErrUnsupported: INVALID_ARGUMENT.
//   - driver.ErrInvalidArgument: INVALID_ARGUMENT.
//   - driver.ErrOutOfRange: OUT_OF_RANGE. COSI reserves OUT_OF_RANGE for a grant of several
//     buckets the driver cannot put behind one access, so from a grant of one bucket it (or an
//     OUT_OF_RANGE status) is a plugin bug, answered INTERNAL. Without plugin.COSIConfig.MultiBucketAccess the plugin
//     answers a grant of several buckets OUT_OF_RANGE itself, before the backend is called.
//   - driver.ErrResourceExhausted: RESOURCE_EXHAUSTED.
//   - driver.ErrPending: ABORTED.
//   - driver.ErrUnauthenticated: UNAUTHENTICATED.
//   - driver.ErrPermissionDenied: PERMISSION_DENIED.
//   - driver.ErrUnavailable: UNAVAILABLE.
//
// Errors that are not sentinels follow the rules in package driver's documentation of the
// sentinels, for every COSI RPC in both versions as for CSI: a gRPC status returned as it is
// keeps its code; a refused or broken connection and a timeout of the backend's own are
// UNAVAILABLE (driver.ErrUnavailable lists what is recognised); DEADLINE_EXCEEDED and CANCELLED
// only when the sidecar's own deadline passed or it went away; anything else is INTERNAL. The
// v1alpha2 sidecar treats INVALID_ARGUMENT, ALREADY_EXISTS and UNIMPLEMENTED as final, and
// OUT_OF_RANGE from a grant; so never return them (or the sentinels behind them) for a
// transient fault: that is driver.ErrUnavailable. (The v1alpha1 sidecar retries every code.)
//
// # Slow, unreachable and asynchronous backends
//
// A sidecar's reconcile context need not carry a deadline, and then a backend call that hangs
// holds a sidecar worker for as long as it hangs. plugin.Config.BackendTimeout bounds
// it: the call is answered UNAVAILABLE, the backend's context ends, and the bucket or account
// stays locked until the backend returns, so a retry meanwhile is ABORTED. A Prober on the
// bucket backend makes the plugin's readiness follow the storage, as in package driver.
//
// A bucket or access the storage makes asynchronously follows package driver's rule for
// asynchronous operations (its "Slow, unreachable and asynchronous backends"): the backend's
// name for it comes from the request's name, a call that finds it still being made answers
// driver.ErrPending (ABORTED, retried by both sidecars), the retry that finds it done finishes
// it and answers what one successful call would have, and one that failed is removed first.
// examples/cephfs is the model of the pattern (a CSI clone); RGW makes buckets and users
// synchronously, so examples/rgw needs none of it.
//
// # IDs are not paths
//
// Bucket and account IDs are opaque keys the backend chooses. The plugin checks only their shape,
// 1 to 2048 characters of [A-Za-z0-9._/-], and that alphabet lets "/" and ".." through:
// "../../etc", "/var/lib", ".", ".." and "a/../.." are all valid IDs. The CO sends back the IDs
// the backend answered, but also IDs an administrator typed (static provisioning: a Bucket object
// naming an existing bucket) and IDs of buckets that were never here. So a backend looks every
// ID it is given up among the ones it issued (a map or database key, a storage API that takes
// it as a name) and answers driver.ErrNotFound for any other (driver.ErrInvalidArgument for one
// it can tell is malformed); it never uses an ID as a file path, or as part of one, without first
// checking that it is one it issued and that it stays inside its own tree. A directory-per-bucket
// backend that joins the ID onto its root answers a get of "../../../../etc" with OK, grants keys
// for it, and deletes it. drivertest.COSI sends such IDs to every RPC that takes one and watches a
// canary directory outside the driver.
//
// driver/memdriver.Buckets is the smallest correct backend; examples/memorys3 is one with a real
// S3 server behind it.
package bucket
