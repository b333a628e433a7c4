package tracing

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// Option configures ServerOption.
type Option func(*options)

type options struct {
	propagator propagation.TextMapPropagator
	filter     func(fullMethod string) bool
}

// WithPropagators sets how trace context is read from incoming metadata
// (default: W3C Trace Context and W3C Baggage).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(o *options) { o.propagator = p }
}

// WithFilter traces only the calls for which keep returns true, given the
// full gRPC method ("/csi.v1.Identity/Probe"). Use it to leave out calls
// that only add noise, such as the liveness probe's Probe every few seconds.
func WithFilter(keep func(fullMethod string) bool) Option {
	return func(o *options) { o.filter = keep }
}

// ServerOption returns the grpc.ServerOption that starts a span for every
// call with tp: otelgrpc's server stats handler. A stats handler, rather than
// an interceptor, sees every call before any interceptor runs and after the
// last one returns, so the span covers the whole chain and carries the final
// status code.
//
// A nil or no-op tp turns tracing off: the returned option does nothing, so
// a driver with tracing off pays nothing on any call.
func ServerOption(tp trace.TracerProvider, opts ...Option) grpc.ServerOption {
	if tp == nil {
		return grpc.EmptyServerOption{}
	}
	if _, off := tp.(tracenoop.TracerProvider); off {
		return grpc.EmptyServerOption{}
	}
	o := &options{
		// otelgrpc defaults to the global propagator, which is a no-op until
		// someone sets it; a CO's traceparent would then be dropped silently.
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	for _, opt := range opts {
		opt(o)
	}
	hopts := []otelgrpc.Option{
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithPropagators(o.propagator),
		// Metrics are middleware/metrics' job, with the names the CSI
		// dashboards read; otelgrpc's own histograms would double them
		// through whatever global MeterProvider the program set.
		otelgrpc.WithMeterProvider(metricnoop.NewMeterProvider()),
	}
	if keep := o.filter; keep != nil {
		hopts = append(hopts, otelgrpc.WithFilter(func(info *stats.RPCTagInfo) bool {
			return keep(info.FullMethodName)
		}))
	}
	return grpc.StatsHandler(otelgrpc.NewServerHandler(hopts...))
}
