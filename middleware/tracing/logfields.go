package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
)

// Log field keys, as OpenTelemetry's log data model names them, so that log
// backends that join logs to traces find them.
const (
	TraceIDKey = "trace_id"
	SpanIDKey  = "span_id"
)

// LogFields returns the trace_id and span_id fields of the span in ctx, or
// nil when ctx carries no valid span context (tracing off), in which case it
// does not allocate. The IDs are given even when the span is not sampled:
// the caller's trace ID still ties the log line to the CO's own logs.
func LogFields(ctx context.Context) []zap.Field {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []zap.Field{
		zap.String(TraceIDKey, sc.TraceID().String()),
		zap.String(SpanIDKey, sc.SpanID().String()),
	}
}

// TraceID returns the hex trace ID of the span in ctx, or "" when ctx
// carries no valid span context, the same rule as LogFields. It has the shape of requestid.FromContext, for loggers that take one
// string per call.
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
