package tracing_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/csikit/csikit/middleware/tracing"
)

func TestLogFields(t *testing.T) {
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	valid := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID})
	tests := []struct {
		name        string
		ctx         context.Context
		wantTraceID string
		wantSpanID  string
	}{
		{"no span gives no fields", context.Background(), "", ""},
		{"valid span gives both IDs", trace.ContextWithSpanContext(context.Background(), valid), traceID.String(), spanID.String()},
		{"sampled-out remote parent still gives the caller's trace", trace.ContextWithRemoteSpanContext(context.Background(), valid), traceID.String(), spanID.String()},
		{"span context without a span ID is not valid", trace.ContextWithSpanContext(context.Background(),
			trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID})), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			zap.New(core).Info("call", tracing.LogFields(tt.ctx)...)
			fields := logs.All()[0].ContextMap()
			if tt.wantTraceID == "" {
				if len(fields) != 0 {
					t.Errorf("fields = %v, want none", fields)
				}
			} else if fields[tracing.TraceIDKey] != tt.wantTraceID || fields[tracing.SpanIDKey] != tt.wantSpanID {
				t.Errorf("fields = %v, want trace_id %s span_id %s", fields, tt.wantTraceID, tt.wantSpanID)
			}
			if got := tracing.TraceID(tt.ctx); got != tt.wantTraceID {
				t.Errorf("TraceID = %q, want %q", got, tt.wantTraceID)
			}
		})
	}
}

func TestLogFieldsAllocateNothingWithoutSpan(t *testing.T) {
	ctx := context.Background()
	{
		if n := testing.AllocsPerRun(1000, func() { _ = tracing.LogFields(ctx) }); n != 0 {
			t.Errorf("LogFields: %v allocs, want 0", n)
		}
		if n := testing.AllocsPerRun(1000, func() { _ = tracing.TraceID(ctx) }); n != 0 {
			t.Errorf("TraceID: %v allocs, want 0", n)
		}
	}
}
