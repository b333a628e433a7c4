// Package csikit is a Go SDK for writing storage drivers for Kubernetes and other container
// orchestrators. A storage vendor implements a few small Go interfaces about their storage, in a
// contract package. csikit serves them as a CSI plugin, and beside it a COSI bucket driver or a
// volume-group service. The plugin honours every MUST of the spec. It validates fields and size
// limits, redacts secrets in logs and errors, and answers ABORTED for a resource in use. It issues
// tamper-evident pagination tokens and the per-RPC error codes. It derives capabilities from the
// interfaces, and handles unix sockets with graceful shutdown.
//
// The packages, from the vendor's view inwards:
//
//   - driver: the CSI contract: backend interfaces, requests, values, the sentinel errors every
//     protocol shares, Features.
//   - driver/bucket: the COSI contract, version-neutral over v1alpha1 and v1alpha2.
//   - driver/volumegroup: the volume-group contract (the volumegroup.Controller service).
//   - driver/plugin: the server: Config, New, Run, Serve, NewServer and Register; the RPC table,
//     the interceptor chain, capability derivation, error mapping and the COSI wire adapters.
//   - driver/cmdline: the shared operator knobs (CSI_ENDPOINT, LOG_LEVEL, metrics, tracing and
//     their flags); Settings.Apply puts them all into a plugin.Config, and is how a driver opts
//     in to the OTEL_* variables.
//   - driver/endpoint, driver/httpserve: endpoint parsing and safe unix socket listening; the
//     diagnostics HTTP endpoint.
//   - driver/nodemount: node-side mounting that is easy to get wrong.
//   - driver/memdriver: complete in-memory backends of every contract.
//   - driver/drivertest: a test server (NewServer) and one-call conformance suites for CSI, COSI
//     and volume groups.
//   - middleware/...: the gRPC interceptors, each usable alone (requestid, recovery, logging,
//     sanitize, validation, locking, metrics, tracing). Tracing needs only the OpenTelemetry API;
//     middleware/tracing/otelenv holds the SDK and its exporters, so only a driver that asks for
//     them links them.
//   - secrets: finding and redacting sensitive fields from the proto descriptors.
//   - idempotency: keyed in-flight locks and request fingerprints.
//
// examples/minimal is a complete driver in one file. README.md has the two commands a newcomer
// runs, and docs/ has one guide per task. The examples and cmd/csictl are modules of their own,
// joined to this one by the repository's go.work. So this module's go.mod lists only what its
// packages import. Run every unit test of the workspace with go test -race work.
package csikit
