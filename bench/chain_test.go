package bench

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/locking"
	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/recovery"
	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/middleware/sanitize"
	"github.com/csikit/csikit/middleware/validation"
)

// BenchmarkChainControllerPublish measures what csikit's interceptor chain and server layer add to
// a ControllerPublishVolume call over a real unix socket: a plain grpc.Server with a hand-written
// handler ("bare") against driver.New(...).Serve with a backend doing the same work and a zap
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
	workers, err := driver.New(driver.Config{
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

// BenchmarkChainMetrics: what turning metrics on adds to a call, as a ratio of p50 latencies in
// one interleaved run (issue 10's target: <= 3%). Both servers are the whole driver logging at info
// to a file; "csikit-metrics" also records every call into a Prometheus registry.
func BenchmarkChainMetrics(b *testing.B) {
	dir := b.TempDir()
	withMetrics, err := driver.New(driver.Config{
		Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
		Logger:  zapJSON(logFile(b, dir, "csikit-metrics.log"), zapcore.InfoLevel),
		Metrics: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	interleave(b, []target{startCsikit(b, dir, "csikit", zapcore.InfoLevel), serveUnix(b, dir, "csikit-metrics", withMetrics.Serve)})
}

// BenchmarkChainTracing: what turning tracing on adds to a call (issue 10's target: <= 3% at
// p50), with every call sampled and its spans going to an exporter that drops them, interleaved
// with the same driver without tracing in one run.
func BenchmarkChainTracing(b *testing.B) {
	dir := b.TempDir()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(discardSpans{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	traced, err := driver.New(driver.Config{
		Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{},
		Logger:         zapJSON(logFile(b, dir, "csikit-tracing.log"), zapcore.InfoLevel),
		TracerProvider: tp,
	})
	if err != nil {
		b.Fatal(err)
	}
	interleave(b, []target{startCsikit(b, dir, "csikit", zapcore.InfoLevel), serveUnix(b, dir, "csikit-tracing", traced.Serve)})
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
