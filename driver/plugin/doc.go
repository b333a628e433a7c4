// Package plugin serves storage backends as a gRPC plugin that keeps every MUST of the CSI spec.
//
// It does the same for COSI and for the volume-group service beside CSI. It is to the contracts
// what database/sql is to database/sql/driver. A backend implements the interfaces of package
// driver (CSI), and may implement those of the bucket (COSI) and volume-group contracts. A
// [Config] names the backends. [New] checks them. [Plugin.Run], [Plugin.Serve],
// [Plugin.NewServer] or [Plugin.Register] serve them.
//
// # Capabilities
//
// The capabilities a plugin advertises are derived from the interfaces its backends implement.
// So it never advertises an RPC it does not serve, nor serves one it does not advertise. An RPC
// it does not serve answers UNIMPLEMENTED, naming the RPC and the interface.
//
// Some capabilities are promises, not RPCs: clone, read-only publish, topology, and a few more.
// They are [driver.Features], the one place that states them, and the plugin enforces them on
// requests. [CapabilityOverrides] narrow the derived RPC lists, and New checks them. A plugin
// whose controller and node run as separate processes sets CapabilityOverrides.Plugin, so that
// every process reports the same set.
//
// New also refuses a near miss: a backend with a method named like one of an optional
// interface's, which does not implement that interface (a wrong signature, a missing sibling).
// The error names the interface and the signature it expects. Without it, the capability would
// silently disappear.
//
// # Every call
//
// Register puts the plugin's chain inside every method it registers. NewServer, Serve and Run use
// Register, so no way of composing a server skips the chain. In order, it runs:
//
//   - a request ID, panic recovery, and a redacted log line;
//   - status sanitising, and the gate: undecodable requests and RPCs not served;
//   - validation of the request;
//   - per-resource locking: a conflicting call gets ABORTED naming the resource;
//   - the handler, then the error mapping.
//
// Locks on the sources of a create are shared. The node RPCs lock the staging or target path of
// the volume, not the whole volume, so one volume can be published to several targets at once.
//
// The error mapping turns the sentinels of package driver into the code each RPC's error table
// demands. DeleteVolume of a missing volume is OK. Anything unknown is INTERNAL, naming the RPC.
// A gRPC status keeps its code, and its details are always dropped. One table inside this
// package describes each RPC once and drives all of this.
//
// # Listings
//
// Items are ordered by ID. A next_token resumes strictly after the last ID returned. So an item
// that exists through the whole listing is never skipped. Items added or removed meanwhile may
// or may not appear. A listing always ends, because its cursor only moves forward. Tokens are
// opaque, bounded and tamper-evident. A token this plugin did not mint for this listing is
// ABORTED.
//
// # Volume groups and object buckets
//
// The same Config serves two more services on the same socket. Config.VolumeGroups serves the
// volume-group service. Config.COSI serves object buckets over COSI. A bucket backend is written
// once, against version-neutral requests. The plugin serves it as cosi.v1alpha1 (the released
// sidecar's) and as sigs.k8s.io.cosi.v1alpha2.
//
// The plugin applies COSI's rules as it does CSI's:
//
//   - names are DNS subdomains, and IDs at most 2048 characters;
//   - protocols and access modes are ones it knows;
//   - a concurrent duplicate on a bucket name, bucket or account is ABORTED;
//   - deleting or revoking what is gone is OK;
//   - a grant of several buckets is OUT_OF_RANGE exactly when multi-bucket access is off;
//   - answers are checked for what the sidecar requires;
//   - credentials are never in a log line, an error or a panic report;
//   - COSI_ENDPOINT is a unix socket whose name ends in ".sock".
//
// # Serving
//
// New checks a Config: identity, backends, features and overrides. A misconfigured plugin fails
// at start-up. Run listens on CSI_ENDPOINT, or COSI_ENDPOINT for a bucket-only plugin. It
// replaces a stale socket, and never deletes anything else at the path. On SIGTERM or SIGINT it
// stops accepting, lets in-flight calls finish up to a deadline, and removes the socket.
//
// The plugin is ready (/readyz, with Config.HTTPEndpoint) while the backends' Probe passes. It
// asks again with backoff while Probe fails, and every few seconds while it passes. So storage
// that is unreachable at start-up shows as "not ready", not as a crash loop. Storage that goes
// away later turns the plugin not ready and back, with no restart.
//
// # Slow and unreachable backends
//
// A fault of the backend never becomes an answer a CO takes as final. These are UNAVAILABLE on
// every RPC of every service: a refused or broken connection, a timeout the backend hit on its
// own, and [driver.ErrUnavailable], whose doc lists what is recognised. DEADLINE_EXCEEDED and
// CANCELLED mean the CO's own deadline passed, or the CO went away.
//
// Config.BackendTimeout bounds how long a call waits for a backend that ignores its context. The
// CO then gets UNAVAILABLE. The call's locks stay held until the backend returns, so a retry
// meanwhile is ABORTED, never a second operation beside the first. Probe, /healthz and the
// readiness watch wait at most Config.ProbeTimeout for the backends. They run one Probe per
// backend at a time. A fault or no answer is "not ready" (ready=false), not an error.
//
// Related packages: [github.com/csikit/csikit/driver/cmdline] sets a Config from the operator's
// flags and environment. [github.com/csikit/csikit/driver/drivertest] serves a Config for tests
// and proves it correct. [github.com/csikit/csikit/driver/endpoint] parses endpoints and listens
// on unix sockets safely.
package plugin
