// Package drivertest proves a CSI or COSI driver correct from a Go test, in one call.
//
// It works in the manner of testing/fstest.TestFS:
//
//	func TestConformance(t *testing.T) {
//		drivertest.CSI(t, cfg, drivertest.Options{})
//	}
//
// [CSI] builds the plugin from a plugin.Config and serves it with [NewServer]. [CSIEndpoint]
// tests a plugin that is already running. Both run csi-sanity in-process: csi-test v5.6.0, the
// release for CSI spec v1.13.0. csikit's own specs join the same Ginkgo suite through
// sanity.DescribeSanity. So they share its connections, its setup per spec and its cleanup of
// resources. Ginkgo prints each spec's outcome. Every skipped spec is logged with its reason,
// and the counts come back as a [Result]. Ginkgo's own flags (-ginkgo.focus, -ginkgo.skip,
// -ginkgo.v, ...) work as usual.
//
// # Profiles
//
// A spec "needs mounts" when it needs NodeStageVolume or NodePublishVolume to succeed. For a
// driver that really mounts, success is a mount, and a mount needs root. Specs that call them
// only to check the answer to a bad argument mount nothing. Neither do the identity, controller
// and group controller specs. No csi-sanity v5.6.0 spec reads the mount table. The one that looks
// at the filesystem checks only that the target path exists after publishing and is gone after
// unpublishing. [MountSpecs] lists these specs, csi-sanity's and csikit's, each with its reason.
//
//   - Unprivileged (the default): the specs of MountSpecs are skipped by name before the suite
//     starts, and each skip is logged with its reason. Everything else runs.
//   - Unprivileged with Options.NoMounts: for a node service that mounts nothing. An in-memory
//     or fake backend records stage and publish and creates the target path. Nothing is
//     skipped, because nothing needs privilege.
//   - Privileged (Options.Privileged): every spec runs against real mounts. The test must run as
//     root, and is skipped otherwise.
//
// Every spec gets fresh target and staging directories under a temporary root (Options.WorkDir),
// through csi-sanity's CreateTargetDir and CreateStagingDir hooks. So a mount one spec leaves
// behind cannot fail the specs after it. The directories are removed when the spec ends. In the
// privileged profile, whatever is still mounted below them is unmounted first: deepest first,
// stacked mounts included, with k8s.io/mount-utils' CleanupMountPoint. In the unprivileged
// profile a leftover mount is reported and left alone. Either way, a cleanup problem fails the
// spec that caused it, although csi-sanity ignores the hooks' errors. Nothing is ever deleted
// through a mount. A spec that passed but left a mount behind fails too. Its cleanup had
// unpublished and unstaged every volume it used, so the driver did not undo a mount.
//
// # csikit's own specs
//
// They cover what csi-sanity does not. Options.Disable switches a group off, with a reason. All
// of them adapt to the capabilities the plugin advertises, and skip what it does not.
//
//   - CheckPagination: 25 volumes, and 25 snapshots of 5 volumes, are listed with max_entries 1,
//     3 and 7 by following next_token. Every item comes exactly once, no page is over
//     max_entries, no token is over 128 bytes, and the listing ends. ListSnapshots is also
//     filtered by source volume. An invalid starting_token is ABORTED, and a negative
//     max_entries INVALID_ARGUMENT. csi-sanity's own pagination spec is disabled upstream.
//   - CheckGroupSnapshot: the lifecycle of a volume group snapshot. Create it from two volumes,
//     and again (the same group). Get it (the same group, members and creation time), and wait
//     until it is ready. Restore a member into a new volume. Delete it twice. Then get is
//     NOT_FOUND, and so is GetSnapshot of a member, with GET_SNAPSHOT. csi-sanity only checks
//     argument errors.
//   - CheckVolumeGroups: the volume-group service (volumegroup.Controller), when GetPluginInfo's
//     manifest lists it under plugin.ManifestVolumeGroupRPCs. The lifecycle: create a group
//     empty, get it, set its members to exactly the list asked for, empty it, list it, delete it
//     with its volumes. Repeated calls: the same group and answer; other parameters under the
//     same name are ALREADY_EXISTS; a repeated delete is OK. Every error row: delete of a missing
//     group is OK; get or modify of a missing group, or with a missing volume, is NOT_FOUND; a
//     member deleted alone is FAILED_PRECONDITION. ListVolumeGroups across pages of 1, 3 and 7:
//     every group once, an invalid token ABORTED. Concurrent membership changes of one group:
//     identical ones answer identically or are ABORTED, and the group ends as one caller asked.
//     Some rows the volume-group spec leaves to the driver: an incompatible volume
//     (INVALID_ARGUMENT), the member limit (RESOURCE_EXHAUSTED), a group in use
//     (FAILED_PRECONDITION), joining at CreateVolume, a group snapshot of a whole volume group.
//     They run when Options.VolumeGroups says how to produce them, and are skipped naming the
//     option otherwise.
//   - CheckConcurrency: eight identical CreateVolume, ControllerPublishVolume,
//     ControllerUnpublishVolume and DeleteVolume calls at once, and the node calls where mounts
//     are allowed. Each succeeds with the same answer or is ABORTED, and at least one succeeds.
//     CreateVolume makes exactly one volume, counted when the plugin lists volumes.
//   - CheckIdempotency: a repeated CreateVolume, ControllerPublishVolume, ControllerExpandVolume,
//     CreateSnapshot, NodeStageVolume and NodePublishVolume gets an identical response. It is
//     compared field by field, node_expansion_required and creation_time included. Repeated
//     deletes, unpublishes and unstages succeed.
//   - CheckSecretCanary: two lifecycles, happy paths and error paths. One makes controller, group
//     and snapshot metadata calls; the other stages and publishes on the node. A client
//     interceptor puts a fresh random value (24 bytes, hex) into every secrets field of every
//     request. It finds the fields from the csi_secret annotation of csi.proto, so no call is
//     forgotten. No value may appear in any response (searched as protojson and prototext), in
//     any error, or in any line the plugin logged. A third lifecycle does the same for every
//     vg_csi_secret field of the volume-group calls, when the plugin serves them. CSI captures
//     the library's logs at debug level. When the backend logs elsewhere, or for CSIEndpoint,
//     pass its logs as Options.Logs. At the end of the run the whole log is searched once more,
//     for the canaries and for Options.Secrets.
//
// # Limits
//
// Ginkgo runs one suite per process. So CSI or CSIEndpoint may be called once per test binary,
// and a second call fails the test. Give each driver's conformance test a package of its own,
// and do not combine it with -count greater than 1. Two profiles of one driver, such as
// unprivileged and privileged, therefore need two packages, e.g. conformance/ and
// conformance/privileged/, each with one test. ExampleCSI is such a file, whole. csi-sanity logs
// through klog. During the run its lines are kept with the spec they belong to, and printed when
// it fails.
//
// csi-sanity's calls send a copy of each request. csi-sanity v5.6.0 compares proto messages with
// reflect.DeepEqual, and gRPC's marshalling stores a size cache in the message it sends. Without
// the copy, its "snapshot with accessibility requirements" spec would fail for every driver that
// reports the requested topology back.
//
// # COSI
//
// [COSI] and [COSIEndpoint] prove an object storage (COSI) driver from a Go test, in one call. They
// test both wire versions csikit serves: cosi.v1alpha1, spoken by the released sidecar, and
// sigs.k8s.io.cosi.v1alpha2. No public COSI conformance suite exists. This one checks what the
// real sidecars check of a driver, and what they rely on without checking:
//
//	func TestCOSIConformance(t *testing.T) {
//		drivertest.COSI(t, cfg, drivertest.COSIOptions{})
//	}
//
// The suite is plain Go subtests, one per wire version and one per rule, each named by the rule
// it checks. So -run selects them, and there is no limit of one run per test binary. A version
// the driver does not serve (DriverGetInfo answers UNIMPLEMENTED) is skipped with that reason.
// Like CSI, they return a Result: one spec per rule and version ("v1alpha2/<rule>"), run, failed
// or skipped with its reason.
//
//   - Identity: the driver name is at most 63 characters of DNS-1035 labels. v1alpha2 lists at
//     least one protocol, none UNKNOWN, none twice.
//   - Create: the same name three times gives the same bucket_id. The ID is at most 2048
//     characters of [A-Za-z0-9._/-]. The answer has the requested protocol's info (S3: bucket
//     ID, endpoint, region, addressing style PATH or VIRTUAL). Other parameters under the same
//     name are ALREADY_EXISTS (COSIOptions.IncompatibleBucketParameters). Get of an unknown
//     bucket is NOT_FOUND (v1alpha2, when served). Bad input is INVALID_ARGUMENT: bad names,
//     UNKNOWN enums, missing fields, IDs with a bad character. Delete of a bucket that is gone is
//     OK, twice.
//   - Grant: repeated under one "ba-<uuid>" account name, with buckets in random order, it gives
//     the same account_id and the same credentials every time. The v1alpha2 sidecar rewrites the
//     user's Secret on every reconcile. The answer covers exactly the requested buckets, with
//     only the requested protocol, and a key has both halves. v1alpha1 answers exactly one
//     credentials entry, keyed by the protocol ("s3": accessKeyID, accessSecretKey, endpoint,
//     region). It never answers ALREADY_EXISTS, which its sidecar crashes on. v1alpha2 answers
//     ALREADY_EXISTS to an incompatible repeat. Two accounts never share a key. Several buckets
//     behind one access are OUT_OF_RANGE if and only if COSIOptions.MultiBucketAccess is false.
//     Revoke of an access that is gone is OK, twice. With COSIOptions.CheckCredentials, granted
//     credentials work, and stop working at revoke.
//   - Concurrency: identical creates, and identical grants, sent at once each answer the same
//     bucket (account and credentials) or ABORTED, never two different ones.
//   - IDs shaped like paths: bucket and account IDs are opaque keys. But their alphabet
//     ([A-Za-z0-9._/-]) lets "/" and ".." through, and the CO sends IDs the driver never issued.
//     The suite makes a canary directory in a fresh temporary directory. It sends IDs that lead
//     to it, or to a file in it, from any root: many "../" and its path, its absolute path,
//     behind "./" and "a/../..", with "/sub/.." after it. Every RPC that takes an ID gets them.
//     Get and grant must answer NOT_FOUND or INVALID_ARGUMENT. Delete and revoke must answer OK
//     (nothing there) or INVALID_ARGUMENT. After every call the canary must be unchanged. Get is
//     also sent ".", "..", "a/../..", "/" and other names of a real bucket ("./" and "x/../"
//     before its ID). Delete and revoke are only ever sent IDs that lead into the canary, so a
//     driver that fails the check damages nothing else. A driver in another filesystem
//     (COSIEndpoint against a container) cannot reach the canary. Its answers are judged all the
//     same.
//   - Terminal codes: INVALID_ARGUMENT, ALREADY_EXISTS, UNIMPLEMENTED and OUT_OF_RANGE are final
//     for the sidecar. So they may appear only where the COSI error table puts them. Every call
//     the suite makes is checked.
//   - Credential canary: no access key ID or secret granted during the run may appear in a log
//     line, an error message, an answer other than the grant's, or a panic report. COSI captures
//     the library's logs at debug level, and COSIOptions.Logs adds the backend's own.
//     COSIOptions.ArmPanic makes the backend panic once, after it minted credentials. Failure
//     messages name where a value appeared, never the value.
//
// COSI builds the plugin from a plugin.Config and serves it with NewServer. COSIEndpoint tests a
// driver that is already running, whatever it is built with.
//
// # Outages
//
// [CSIOutage] and [COSIOutage] prove that a driver on networked storage never turns an outage into
// a wrong answer. They run against the real storage, and the driver keeps running throughout.
// OutageOptions.Down takes the storage away (stop its daemons). OutageOptions.Up brings it back.
//
// While the storage is down, Probe must say ready=false, not fail with an error code. /readyz
// (OutageOptions.ReadyzURL) must answer 503. A create of a new name, and a delete of an existing
// volume or bucket, must answer UNAVAILABLE, DEADLINE_EXCEEDED or ABORTED. Never OK for what
// cannot have happened, never a code the CO takes as final. Once the storage is back, with no
// restart, the driver must be ready again. The retried create must succeed once, and a repeat
// answers the same ID. Everything it made must delete. Readiness and service are polled for up
// to OutageOptions.Within, since a driver may look at a cached connection.
//
// # A test server
//
// [NewServer] is what CSI and COSI serve a Config with. Any test of a driver can use it, in the
// spirit of net/http/httptest.NewServer. It builds the plugin with plugin.New, and serves it on
// a fresh unix socket until the test ends. The socket's path is short enough for a socket
// address, whatever the test's name. It gives a client connection (Server.Conn), and everything
// the plugin logged at debug level (Server.Logs), secrets redacted, for a test or a canary to
// search.
//
//	srv := drivertest.NewServer(t, cfg)
//	resp, err := csi.NewControllerClient(srv.Conn).CreateVolume(ctx, req)
package drivertest
