// Package csikit is a Go SDK for writing storage drivers for Kubernetes and other container
// orchestrators. A storage vendor implements a few small Go interfaces about their storage
// (package driver); csikit serves them as a CSI plugin that honours every MUST of the spec: field
// validation and size limits, secret redaction in logs and errors, per-resource ABORTED locking,
// tamper-evident pagination tokens, the per-RPC error codes, capability derivation, and unix socket
// handling with graceful shutdown.
//
// The packages, from the vendor's view inwards:
//
//   - driver: the backend interfaces, Config, New, Serve and Run.
//   - driver/cmdline: the shared operator knobs (CSI_ENDPOINT, LOG_LEVEL and their flags).
//   - driver/endpoint: endpoint parsing and safe unix socket listening.
//   - middleware/...: the gRPC interceptors, each usable alone (requestid, recovery, logging,
//     sanitize, validation, locking).
//   - secrets: finding and redacting sensitive fields from the proto descriptors.
//   - idempotency: keyed in-flight locks and request fingerprints.
//
// examples/minimal is a complete driver in one file; see the README for the two commands a
// newcomer runs.
package csikit
