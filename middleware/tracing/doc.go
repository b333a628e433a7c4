// Package tracing traces gRPC calls with OpenTelemetry.
//
// It has three parts, each usable alone:
//
//   - UnarySpanInterceptor and StreamSpanInterceptor, first in the chain,
//     start one server span per call, named after the full method, with
//     rpc.system.name, rpc.method and rpc.response.status_code. A W3C
//     traceparent sent by the CO in the incoming metadata makes the span a
//     child of the CO's trace. The span is in the context every later
//     interceptor and the backend see, so a backend starts child spans with
//     trace.SpanFromContext(ctx).TracerProvider(). ServerOption makes the
//     same span from a stats handler, for servers whose own interceptors
//     should run inside it; it costs more per call (see ServerOption).
//   - UnaryServerInterceptor and StreamServerInterceptor run inside the
//     chain, after validation, and add the resource the call is about
//     (volume, snapshot, node, create name, group, bucket, account IDs) to
//     that span, read by field name from the request. Only a fixed
//     allow-list of top-level string fields is read, and never a field that
//     secrets.IsSecretField reports, so no secret reaches a span. When the
//     span is not recording they cost nothing.
//   - LogFields and TraceID give the trace and span IDs of the call for its
//     log lines, so a log line leads to its trace.
//
// The package needs only the OpenTelemetry API: the SDK and the exporters
// come with the TracerProvider a driver chooses. Package otelenv builds one
// from the standard OTEL_* environment variables (cmdline.Settings.Tracing
// is how a plugin binary asks for it), its exporters fed by the SDK's batch
// span processor; tracing is off unless OTEL_TRACES_EXPORTER asks for an
// exporter.
//
// # Why not otelgrpc
//
// The server span used to come from otelgrpc's stats handler
// (go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc).
// It does more per call than a CSI plugin's operators use: it copies the
// incoming metadata to extract the trace context, builds the span's
// attributes and the peer address attributes anew on every call, keeps a
// per-call state for its metrics, and inspects every message event. With
// every call sampled it added 9 to 15% to the median latency of a
// ControllerPublishVolume over a unix socket (BENCHMARKS.md), against a
// target of 3%, and as a stats handler it makes grpc-go do work for every
// call whether it is sampled or not. The span here keeps what operators
// search by (method, status, the resource IDs the attribute interceptors
// add) and nothing else: the trace context is read one metadata key at a
// time, the method's attributes are built once per method and set only on
// spans that record, the status attribute of every code is built once, no
// per-message event is recorded, and in the driver it is started by an
// interceptor, not a stats handler. The calls that carry no trace context
// skip the propagators altogether, each method's final attributes are one
// prebuilt slice per status code, and the resource attributes are gathered
// in a pooled buffer and handed over in one slice of the exact size (the API
// does not promise that a span copies them). What remains is the
// OpenTelemetry SDK's own span, which no instrumentation can avoid: its
// recording span, its end-of-span snapshot and its attribute storage, about
// 1.4 KB of allocations per sampled call.
//
// Dropping otelgrpc also drops a dependency that follows its own release
// train, semantic-convention migrations included. The span's name and the
// attributes kept (rpc.system.name, rpc.method, rpc.response.status_code,
// from the RPC conventions v1.43) are those otelgrpc v0.72.0 gave, so
// queries built on them keep working; server.address and server.port (the
// socket, the same for every call) are no longer recorded.
//
// # Batching
//
// otelenv.NewProvider hands spans to each exporter through the SDK's own
// batch span processor (sdktrace.WithBatcher), with the specification's
// queue, batch size, schedule and export timeout and the OTEL_BSP_*
// variables. That processor wakes its export goroutine for every span
// ended, which a sampled call pays for: with every call sampled, a
// ControllerPublishVolume over a unix socket took about 0.5 us more at p50
// than with the batching processor csikit carried before (BENCHMARKS.md).
// Keeping a processor of its own in step with the specification and the SDK
// was not worth that half microsecond.
package tracing
