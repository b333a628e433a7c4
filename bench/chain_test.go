package bench

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/locking"
	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/recovery"
	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/middleware/sanitize"
	"github.com/csikit/csikit/middleware/tracing"
	"github.com/csikit/csikit/middleware/validation"
)

// BenchmarkChainControllerPublish measures what csikit's interceptor chain and server layer add to
// a ControllerPublishVolume call over a real unix socket: a plain grpc.Server with a hand-written
// handler ("bare") against plugin.New(...).Serve with a backend doing the same work and a zap
// JSON logger at info writing one line per call to a file. The interleaved case is the one to
// read: both servers run at once and calls alternate, so machine noise hits both alike.
func BenchmarkChainControllerPublish(b *testing.B) {
	b.Run("bare", func(b *testing.B) { solo(b, startBare(b, b.TempDir())) })
	b.Run("csikit", func(b *testing.B) { solo(b, startCsikit(b, b.TempDir(), "csikit", zapcore.InfoLevel)) })
	b.Run("interleaved", func(b *testing.B) {
		dir := b.TempDir()
		interleave(b, []target{startBare(b, dir), startCsikit(b, dir, "csikit", zapcore.InfoLevel)})
	})
}

// BenchmarkChainControllerPublishDebug is the interleaved case with csikit's logger at debug:
// each call then also logs the redacted request and response. For information: debug is not a
// production level.
func BenchmarkChainControllerPublishDebug(b *testing.B) {
	dir := b.TempDir()
	interleave(b, []target{startBare(b, dir), startCsikit(b, dir, "csikit", zapcore.DebugLevel)})
}

// BenchmarkChainBreakdown is a diagnostic: where csikit's added latency comes from. All servers
// run at once and calls rotate over them, as in BenchmarkChainControllerPublish. Each "only-*"
// server is a plain grpc.Server with the bare handler behind one csikit interceptor (loggers are
// zap.NewNop); "chain" is csikit's interceptors (middlewareChain) around the bare handler; "driver-nolog",
// "driver-discard" and "driver-file" are the whole driver with no logger, a zap JSON logger at
// info writing to io.Discard, and the same writing to a file (the configuration of
// BenchmarkChainControllerPublish). The two "-workers" servers run calls on gRPC's stream
// workers (grpc.NumStreamWorkers) instead of a fresh goroutine per call, which shows the cost of
// growing a new goroutine's stack on every call.
func BenchmarkChainBreakdown(b *testing.B) {
	dir := b.TempDir()
	plain := func(name string, opts ...any) target {
		var sopts []grpc.ServerOption
		for _, o := range opts {
			switch o := o.(type) {
			case grpc.UnaryServerInterceptor:
				sopts = append(sopts, grpc.ChainUnaryInterceptor(o))
			case []grpc.UnaryServerInterceptor:
				sopts = append(sopts, grpc.ChainUnaryInterceptor(o...))
			case grpc.ServerOption:
				sopts = append(sopts, o)
			default:
				b.Fatalf("%s: unexpected server option %T", name, o)
			}
		}
		s := grpc.NewServer(sopts...)
		csi.RegisterControllerServer(s, bareServer{})
		return serveUnix(b, dir, name, serveGRPC(s))
	}
	nop := zap.NewNop()
	nolog := newCsikit(b, nil)
	discard := newCsikit(b, zapJSON(io.Discard, zapcore.InfoLevel))
	workers, err := plugin.New(plugin.Config{
		Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
		Logger:        zapJSON(logFile(b, dir, "driver-file-workers.log"), zapcore.InfoLevel),
		ServerOptions: []grpc.ServerOption{grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0)))},
	})
	if err != nil {
		b.Fatal(err)
	}
	interleave(b, []target{
		startBare(b, dir),
		plain("only-requestid", requestid.UnaryServerInterceptor()),
		plain("only-recovery", recovery.UnaryServerInterceptor(recovery.WithLogger(nop))),
		plain("only-logging", logging.UnaryServerInterceptor(nop)),
		plain("only-sanitize", sanitize.UnaryServerInterceptor()),
		plain("only-validation", validation.UnaryServerInterceptor()),
		plain("only-locking", locking.UnaryServerInterceptor(idempotency.NewManager(), publishKeys)),
		plain("chain", middlewareChain(nil)),
		serveUnix(b, dir, "driver-nolog", nolog.Serve),
		serveUnix(b, dir, "driver-discard", discard.Serve),
		startCsikit(b, dir, "driver-file", zapcore.InfoLevel),
		serveUnix(b, dir, "driver-file-workers", workers.Serve),
		plain("bare-workers", grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0)))),
	})
}

// BenchmarkChainLogSink is a diagnostic: what the log line's destination costs. The whole driver
// three ways, all interleaved with the bare server: without a logger, logging at info to
// io.Discard (the line is built but not written), and logging at info to a file, the configuration
// of BenchmarkChainControllerPublish, where every call's line is one write(2) on the way to the
// answer. "bare-workers" is the bare server with the driver's server options (stream workers and
// its codec), which separates what the chain costs from what those options save.
func BenchmarkChainLogSink(b *testing.B) {
	dir := b.TempDir()
	nolog := newCsikit(b, nil)
	discard := newCsikit(b, zapJSON(io.Discard, zapcore.InfoLevel))
	workers := grpc.NewServer(plugin.ServerCodec(), grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))))
	csi.RegisterControllerServer(workers, bareServer{})
	interleave(b, []target{
		startBare(b, dir),
		serveUnix(b, dir, "bare-workers", serveGRPC(workers)),
		serveUnix(b, dir, "driver-nolog", nolog.Serve),
		serveUnix(b, dir, "driver-discard", discard.Serve),
		startCsikit(b, dir, "driver-file", zapcore.InfoLevel),
	})
}

// BenchmarkChainMetrics: what turning metrics on adds to a call, as a ratio of p50 latencies in
// one interleaved run (target: <= 3%). Both servers are the whole driver logging at info
// to a file; "csikit-metrics" also records every call into a Prometheus registry.
func BenchmarkChainMetrics(b *testing.B) {
	dir := b.TempDir()
	withMetrics, err := plugin.New(plugin.Config{
		Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
		Logger:  zapJSON(logFile(b, dir, "csikit-metrics.log"), zapcore.InfoLevel),
		Metrics: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	interleave(b, []target{startCsikit(b, dir, "csikit", zapcore.InfoLevel), serveUnix(b, dir, "csikit-metrics", withMetrics.Serve)})
}

// BenchmarkChainTracing: what turning tracing on adds to a call (target: <= 3% at
// p50), as a ratio of p50 latencies in one interleaved run against the same driver without
// tracing. Spans go to an exporter that drops them. "always" samples every call (the worst case);
// "ratio-0.1" is what operators run, ParentBased(TraceIDRatioBased(0.1)): the calls carry no
// traceparent, so one call in ten is recorded and the others get a non-recording span whose trace
// ID still reaches the log line.
func BenchmarkChainTracing(b *testing.B) {
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"always", sdktrace.AlwaysSample()},
		{"ratio-0.1", sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			traced, err := plugin.New(plugin.Config{
				Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
				Logger:         zapJSON(logFile(b, dir, "csikit-tracing.log"), zapcore.InfoLevel),
				TracerProvider: tracerProvider(b, tc.sampler),
			})
			if err != nil {
				b.Fatal(err)
			}
			interleave(b, []target{startCsikit(b, dir, "csikit", zapcore.InfoLevel), serveUnix(b, dir, "csikit-tracing", traced.Serve)})
		})
	}
}

// BenchmarkChainTracingBreakdown is a diagnostic: where tracing's cost comes from, every server in
// one interleaved run. "csikit" has tracing off; "noop-stats-handler" installs a stats handler
// that does nothing (what grpc-go's stats plumbing costs by itself, on every call); the others
// start a server span, handed to an exporter that drops it, with csikit's attribute step inside
// the chain: "span-interceptor" from csikit's interceptor in front of the chain
// (tracing.UnarySpanInterceptor), "span-stats-handler" from csikit's stats handler
// (tracing.ServerOption), "otelgrpc" from otelgrpc v0.72.0's server stats handler, for comparison.
// "-always" samples every call, "-ratio" one in ten
// (ParentBased(TraceIDRatioBased(0.1)), the calls carry no traceparent). Spans go through the
// SDK's batch span processor (sdktrace.WithBatcher), as with otelenv.NewProvider.
func BenchmarkChainTracingBreakdown(b *testing.B) {
	dir := b.TempDir()
	always := tracerProvider(b, sdktrace.AlwaysSample())
	ratio := tracerProvider(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))
	interceptor := func(tp trace.TracerProvider) grpc.ServerOption {
		return grpc.ChainUnaryInterceptor(tracing.UnarySpanInterceptor(tp))
	}
	interleave(b, []target{
		startCsikit(b, dir, "csikit", zapcore.InfoLevel),
		newTraced(b, dir, "noop-stats-handler", grpc.StatsHandler(noopStats{})),
		newTraced(b, dir, "span-interceptor-always", interceptor(always)),
		newTraced(b, dir, "span-interceptor-ratio", interceptor(ratio)),
		newTraced(b, dir, "span-stats-handler-always", tracing.ServerOption(always)),
		newTraced(b, dir, "span-stats-handler-ratio", tracing.ServerOption(ratio)),
		newTraced(b, dir, "otelgrpc-always", grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(always),
			otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
			otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider())))),
	})
}

// tracerProvider is an SDK provider with sampler whose spans are dropped by the exporter, shut
// down when the benchmark ends, built as otelenv.NewProvider builds it from OTEL_*
// variables: the exporter behind the SDK's batch span processor (sdktrace.WithBatcher, default
// settings), so the benchmarks measure what a driver runs. A synchronous processor
// (sdktrace.WithSyncer) snapshots and exports each span on the call's own goroutine, which
// measured twice the added latency for a set-up csikit never runs.
func tracerProvider(b *testing.B, sampler sdktrace.Sampler) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}), sdktrace.WithSampler(sampler))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// newTraced serves the driver logging at info to a file, with opt as its one server option.
func newTraced(b *testing.B, dir, name string, opt grpc.ServerOption) target {
	cfg := plugin.Config{
		Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
		Logger:        zapJSON(logFile(b, dir, name+".log"), zapcore.InfoLevel),
		ServerOptions: []grpc.ServerOption{opt},
	}
	d, err := plugin.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return serveUnix(b, dir, name, d.Serve)
}

// noopStats is a stats handler that does nothing.
type noopStats struct{}

func (noopStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (noopStats) HandleRPC(context.Context, stats.RPCStats)                         {}
func (noopStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (noopStats) HandleConn(context.Context, stats.ConnStats)                       {}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
