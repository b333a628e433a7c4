// Package plugin serves storage backends as a gRPC plugin that obeys every MUST of the CSI spec
// (and of COSI and the volume-group service beside it). It is to the contracts what database/sql
// is to database/sql/driver: a backend implements the interfaces of package driver (CSI), and
// optionally those of the bucket (COSI) and volume-group contracts; Config names the backends, New
// checks them, and Run, Serve, NewServer or Register serve them.
//
// # Capabilities
//
// The capabilities a plugin advertises are derived from the interfaces its backends implement, so
// it never advertises an RPC it does not serve nor serves one it does not advertise; an RPC it does
// not serve answers UNIMPLEMENTED naming the RPC and the interface. Capabilities that are promises
// rather than RPCs (clone, readonly publish, topology, ...) are driver.Features, which the plugin
// enforces on requests. CapabilityOverrides replace the derived lists and are checked at start-up;
// a plugin whose controller and node run as separate processes declares its plugin capabilities
// with CapabilityOverrides.Plugin so that every process reports the same set. New refuses a
// backend that has a method named like one of its optional interfaces' but does not implement
// that interface (a wrong signature, a missing sibling), naming the interface and the signature
// it expects, because the capability would otherwise silently disappear.
//
// # Every call
//
// Register (and NewServer, Serve, Run, which use it) puts the plugin's chain inside every method
// it registers, so no way of composing a server skips it: request ID, panic recovery, logging
// (redacted), status sanitising, the gate (undecodable requests, RPCs not served), validation,
// per-resource locking (a conflicting call gets ABORTED naming the resource; sources of a create
// are held shared; the node RPCs hold the staging or target path of the volume, not the whole
// volume, so one volume is published to several targets at once), then the handler and the error mapping: the sentinels of package driver
// become the code each RPC's error table demands (DeleteVolume of a missing volume is OK,
// anything unknown is INTERNAL naming the RPC), a gRPC status keeps its code, status details are
// always dropped. Each RPC is described once, in one table inside this package, which drives all
// of this.
//
// # Listings
//
// Items are ordered by ID and a next_token resumes strictly after the last ID returned: an item
// that exists through the whole listing is never skipped, items added or removed meanwhile may or
// may not appear, and the listing always ends because the cursor only moves forward. Tokens are
// opaque, bounded and tamper-evident; a token this plugin did not mint for this listing is
// ABORTED.
//
// # Volume groups and object buckets
//
// The same Config serves two services beside CSI on the same socket. Config.VolumeGroups serves
// the volume-group service; Config.COSI serves object buckets over COSI, written once against
// version-neutral requests and served as both cosi.v1alpha1 (the released sidecar) and
// sigs.k8s.io.cosi.v1alpha2. The plugin applies COSI's rules there as it does CSI's: DNS-subdomain
// names and 2048-character IDs, known protocols and modes, ABORTED for a concurrent duplicate on a
// bucket name, bucket or account, deletes and revokes of what is gone answered OK, an
// OUT_OF_RANGE grant exactly when multi-bucket access is off and several buckets are asked for,
// answers checked for what the sidecar requires, credentials never in a log line, error or panic
// report, and the COSI_ENDPOINT rules (a unix socket ending in ".sock").
//
// # Serving
//
// New checks a Config (identity, backends, features, overrides) and refuses a misconfigured
// plugin at start-up. Run listens on CSI_ENDPOINT (COSI_ENDPOINT for a bucket-only plugin; unix
// sockets; a stale socket is replaced, anything else at the path is never deleted), serves, and
// on SIGTERM or SIGINT stops accepting, lets in-flight calls finish up to a deadline and removes
// the socket. It is ready (/readyz with Config.HTTPEndpoint) while the backends' Probe passes,
// asked again with backoff while it does not and every few seconds while it does, so storage
// that is unreachable at start-up shows as "not ready" rather than as a crash loop, and storage
// that goes away later turns the plugin not ready and back, with no restart.
//
// # Slow and unreachable backends
//
// A fault of the backend never becomes an answer a CO takes as final. A refused or broken
// connection, a timeout the backend hit on its own and driver.ErrUnavailable are UNAVAILABLE on
// every RPC of every service; DEADLINE_EXCEEDED and CANCELLED mean the CO's own deadline passed
// or it went away (driver.ErrUnavailable lists what is recognised). Config.BackendTimeout bounds
// how long a call waits for a backend that ignores its context: the CO gets UNAVAILABLE and the
// call's locks stay held until the backend returns, so a retry meanwhile is ABORTED, never a
// second operation beside the first. Probe, /healthz and the readiness watch wait at most
// Config.ProbeTimeout for the backends, run one Probe per backend at a time, and treat a fault or
// no answer as "not ready" (ready=false), not as an error.
//
// Related packages: driver/cmdline sets a Config from the operator's flags and environment;
// driver/drivertest serves a Config for tests and proves it correct; driver/endpoint parses
// endpoints and listens on unix sockets safely.
package plugin
