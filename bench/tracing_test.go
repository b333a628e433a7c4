package bench

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"

	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/middleware/tracing"
)

// BenchmarkTracingHandlerInProcess is a diagnostic: the server-side stats-handler work of one
// call, in-process, csikit's handler (tracing.ServerHandler) against otelgrpc v0.72.0's server
// handler, interleaved. A call is what grpc-go hands a stats handler for a unary call: TagRPC,
// then InHeader, Begin, InPayload, OutHeader, OutPayload, OutTrailer and End. Incoming metadata
// is what grpc-go's client sends plus, in the "-parent" ways, a sampled W3C traceparent. The
// ratio-0.1 ways use ParentBased(TraceIDRatioBased(0.1)), so without a parent one call in ten
// is recorded; with a sampled parent every call is.
func BenchmarkTracingHandlerInProcess(b *testing.B) {
	always := tracerProvider(b, sdktrace.AlwaysSample())
	ratio := tracerProvider(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	otel := func(tp *sdktrace.TracerProvider) stats.Handler {
		return otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(prop),
			otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()))
	}
	md := metadata.MD{
		"content-type": {"application/grpc"},
		"user-agent":   {"grpc-go/1.85.0"},
		":authority":   {"localhost"},
	}
	parent := md.Copy()
	parent.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	plain := metadata.NewIncomingContext(context.Background(), md)
	withParent := metadata.NewIncomingContext(context.Background(), parent)

	call := func(h stats.Handler, ctx context.Context) func() {
		addr := &net.UnixAddr{Name: "/tmp/csi.sock", Net: "unix"}
		info := &stats.RPCTagInfo{FullMethodName: "/csi.v1.Controller/ControllerPublishVolume"}
		return func() {
			now := time.Now()
			ctx := h.TagRPC(ctx, info)
			h.HandleRPC(ctx, &stats.InHeader{FullMethod: info.FullMethodName, RemoteAddr: addr, LocalAddr: addr, Header: md})
			h.HandleRPC(ctx, &stats.Begin{BeginTime: now})
			h.HandleRPC(ctx, &stats.InPayload{Length: 180, WireLength: 185, RecvTime: now})
			h.HandleRPC(ctx, &stats.OutHeader{})
			h.HandleRPC(ctx, &stats.OutPayload{Length: 30, WireLength: 35, SentTime: now})
			h.HandleRPC(ctx, &stats.OutTrailer{})
			h.HandleRPC(ctx, &stats.End{BeginTime: now, EndTime: time.Now()})
		}
	}
	interleaveFuncs(b, []namedFunc{
		{"csikit-always", call(tracing.ServerHandler(always), plain)},
		{"otelgrpc-always", call(otel(always), plain)},
		{"csikit-ratio0.1", call(tracing.ServerHandler(ratio), plain)},
		{"otelgrpc-ratio0.1", call(otel(ratio), plain)},
		{"csikit-always-parent", call(tracing.ServerHandler(always), withParent)},
		{"otelgrpc-always-parent", call(otel(always), withParent)},
	})
}

// BenchmarkInProcessTracing is the driver's registered ControllerPublishVolume method called
// in-process (decode, the whole chain, the backend; logger at info to io.Discard) without tracing
// and with tracing on, the spans going to an exporter that drops them: what a call costs in CPU
// and allocations, sampled or not ("ratio-0.1": ParentBased(TraceIDRatioBased(0.1)), no incoming
// traceparent). Spans go through the SDK's batch span processor (sdktrace.WithBatcher), as with
// otelenv.NewProvider; its export goroutine is woken for every span, and its CPU shows in
// ns/op.
func BenchmarkInProcessTracing(b *testing.B) {
	wire := mustMarshal(b, publishRequest())
	mk := func(tp *sdktrace.TracerProvider) unaryCall {
		cfg := plugin.Config{Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
			Logger: zapJSON(io.Discard, zapcore.InfoLevel)}
		if tp != nil {
			cfg.TracerProvider = tp
		}
		d, err := plugin.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		h, impl := controllerMethod(b, d.Register, "ControllerPublishVolume")
		return unaryCall{h, impl, nil}
	}
	for _, tc := range []struct {
		name string
		tp   *sdktrace.TracerProvider
	}{
		{"off", nil},
		{"always", tracerProvider(b, sdktrace.AlwaysSample())},
		{"ratio-0.1", tracerProvider(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))},
	} {
		c := mk(tc.tp)
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.call(ctx, wire); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
