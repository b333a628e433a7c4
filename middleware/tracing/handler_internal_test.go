package tracing

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// BenchmarkSpan is the server span's own work for one call, by form and sampler: the stats
// handler (TagRPC, then End; the events grpc-go sends in between are ignored and left out) and
// the unary interceptor around a handler that does nothing. Calls carry no traceparent, so
// ratio-0.1 records one call in ten.
func BenchmarkSpan(b *testing.B) {
	md := metadata.MD{"content-type": {"application/grpc"}, "user-agent": {"grpc-go/1.85.0"}, ":authority": {"localhost"}}
	ctx := metadata.NewIncomingContext(context.Background(), md)
	const method = "/csi.v1.Controller/ControllerPublishVolume"
	info := &stats.RPCTagInfo{FullMethodName: method}
	uinfo := &grpc.UnaryServerInfo{FullMethod: method}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"never", sdktrace.NeverSample()},
		{"ratio-0.1", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))},
		{"always", sdktrace.AlwaysSample()},
	} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tc.sampler))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		b.Run("stats-handler/"+tc.name, func(b *testing.B) {
			h := ServerHandler(tp)
			end := &stats.End{}
			b.ReportAllocs()
			for b.Loop() {
				h.HandleRPC(h.TagRPC(ctx, info), end)
			}
		})
		b.Run("interceptor/"+tc.name, func(b *testing.B) {
			span := UnarySpanInterceptor(tp)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = span(ctx, nil, uinfo, handler)
			}
		})
	}
}

// TestHandlerEndsOnlyItsOwnSpan: a span another stats handler or the caller put in the context
// is never ended by this handler.
func TestHandlerEndsOnlyItsOwnSpan(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	h := ServerHandler(tp, WithFilter(func(string) bool { return false }))
	ctx, foreign := tp.Tracer("other").Start(context.Background(), "other")
	info := &stats.RPCTagInfo{FullMethodName: "/csi.v1.Controller/DeleteVolume"}
	h.HandleRPC(h.TagRPC(ctx, info), &stats.End{})
	if !foreign.IsRecording() {
		t.Error("the handler ended a span it did not start")
	}
	foreign.End()
}
