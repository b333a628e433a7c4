// Package tracing traces gRPC calls with OpenTelemetry.
//
// It has three parts, each usable alone:
//
//   - ServerOption installs otelgrpc's stats handler: one server span per
//     call, named after the full method, with rpc.method and
//     rpc.response.status_code. A W3C traceparent sent by the CO in the
//     incoming metadata makes the span a child of the CO's trace. The span
//     is in the context every interceptor and backend sees, so a backend
//     starts child spans with trace.SpanFromContext(ctx).TracerProvider().
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
// NewProviderFromEnv builds a TracerProvider from the standard OTEL_*
// environment variables. Tracing is off unless OTEL_TRACES_EXPORTER asks for
// an exporter.
package tracing
