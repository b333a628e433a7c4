package tracing

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// Option configures ServerOption.
type Option func(*options)

type options struct {
	propagator propagation.TextMapPropagator
	// customPropagator is set by WithPropagators: the keys a propagator of
	// the caller's reads are not known, so every call is handed to it.
	customPropagator bool
	filter           func(fullMethod string) bool
}

// WithPropagators sets how trace context is read from incoming metadata
// (default: W3C Trace Context and W3C Baggage).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return func(o *options) { o.propagator, o.customPropagator = p, true }
}

// WithFilter traces only the calls for which keep returns true, given the
// full gRPC method ("/csi.v1.Identity/Probe"). Use it to leave out calls
// that only add noise, such as the liveness probe's Probe every few seconds.
func WithFilter(keep func(fullMethod string) bool) Option {
	return func(o *options) { o.filter = keep }
}

// Attribute keys of the server span, as OpenTelemetry's RPC semantic
// conventions (v1.43) name them, so trace backends that understand gRPC
// spans show them as such.
const (
	rpcSystemNameKey         = attribute.Key("rpc.system.name")
	rpcMethodKey             = attribute.Key("rpc.method")
	rpcResponseStatusCodeKey = attribute.Key("rpc.response.status_code")
)

// statusAttrs holds the rpc.response.status_code attribute of every gRPC
// code, built once: ending a span then copies an attribute instead of
// building one.
var statusAttrs = func() (a [codes.Unauthenticated + 1]attribute.KeyValue) {
	for c := range a {
		a[c] = rpcResponseStatusCodeKey.String(codeName(codes.Code(c)))
	}
	return a
}()

// codeName is a code's name as the gRPC status code table spells it
// ("INVALID_ARGUMENT"), which is what the RPC conventions ask for; grpc-go's
// String gives "InvalidArgument".
func codeName(c codes.Code) string {
	switch c {
	case codes.OK:
		return "OK"
	case codes.Canceled:
		return "CANCELLED"
	case codes.Unknown:
		return "UNKNOWN"
	case codes.InvalidArgument:
		return "INVALID_ARGUMENT"
	case codes.DeadlineExceeded:
		return "DEADLINE_EXCEEDED"
	case codes.NotFound:
		return "NOT_FOUND"
	case codes.AlreadyExists:
		return "ALREADY_EXISTS"
	case codes.PermissionDenied:
		return "PERMISSION_DENIED"
	case codes.ResourceExhausted:
		return "RESOURCE_EXHAUSTED"
	case codes.FailedPrecondition:
		return "FAILED_PRECONDITION"
	case codes.Aborted:
		return "ABORTED"
	case codes.OutOfRange:
		return "OUT_OF_RANGE"
	case codes.Unimplemented:
		return "UNIMPLEMENTED"
	case codes.Internal:
		return "INTERNAL"
	case codes.Unavailable:
		return "UNAVAILABLE"
	case codes.DataLoss:
		return "DATA_LOSS"
	case codes.Unauthenticated:
		return "UNAUTHENTICATED"
	}
	return "UNKNOWN"
}

// statusIndex is c's index in statusAttrs; a code grpc-go does not know is
// reported as UNKNOWN.
func statusIndex(c codes.Code) int {
	if int(c) < len(statusAttrs) {
		return int(c)
	}
	return int(codes.Unknown)
}

// serverFault reports the codes that mean the server failed: OpenTelemetry's
// RPC conventions mark only those server spans as errors. A client's mistake
// (NOT_FOUND, INVALID_ARGUMENT, ABORTED...) is a correct answer.
func serverFault(c codes.Code) bool {
	switch c {
	case codes.Unknown, codes.DeadlineExceeded, codes.Unimplemented, codes.Internal,
		codes.Unavailable, codes.DataLoss:
		return true
	}
	return false
}

// ServerOption returns the grpc.ServerOption that starts a server span for
// every call with tp, as a stats handler: it sees every call before any
// interceptor runs and after the last one returns, so the span covers the
// whole chain and the server's own interceptors, carries the final status
// code, and is there for calls to methods the server does not know. That
// reach has a price on every call, traced or not: grpc-go copies the
// incoming metadata and builds an event for every header, message and
// trailer once any stats handler is installed (0.6 to 1.5% of a
// ControllerPublishVolume over a unix socket). UnarySpanInterceptor and
// StreamSpanInterceptor make the same span from inside the chain without
// that cost; package driver uses them.
//
// The span is named after the full method ("csi.v1.Controller/CreateVolume")
// and has rpc.system.name, rpc.method and rpc.response.status_code; its
// status is Error, with the final status message, for the codes that mean
// the server failed. A W3C traceparent in the incoming metadata makes it a
// child of the CO's trace. Nothing else is recorded: no per-message events,
// no payload sizes, no peer addresses, so the span costs the SDK's span and
// little more (see the package documentation for why this is not otelgrpc).
//
// A nil or no-op tp turns tracing off: the returned option does nothing, so
// a driver with tracing off pays nothing on any call.
func ServerOption(tp trace.TracerProvider, opts ...Option) grpc.ServerOption {
	h := ServerHandler(tp, opts...)
	if h == nil {
		return grpc.EmptyServerOption{}
	}
	return grpc.StatsHandler(h)
}

// ServerHandler is the stats handler ServerOption installs, for a server
// that combines stats handlers itself. It is nil when tp is nil or a no-op
// provider.
func ServerHandler(tp trace.TracerProvider, opts ...Option) stats.Handler {
	if h := newServerHandler(tp, opts); h != nil {
		return h
	}
	return nil
}

// newServerHandler is nil when tp is nil or a no-op provider.
func newServerHandler(tp trace.TracerProvider, opts []Option) *serverHandler {
	if tp == nil {
		return nil
	}
	if _, off := tp.(tracenoop.TracerProvider); off {
		return nil
	}
	o := &options{
		// The global propagator is a no-op until someone sets it; a CO's
		// traceparent would then be dropped silently.
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	for _, opt := range opts {
		opt(o)
	}
	return &serverHandler{
		tracer:     tp.Tracer(instrumentationName),
		propagator: o.propagator,
		w3cOnly:    !o.customPropagator,
		keep:       o.filter,
	}
}

// W3C metadata keys the default propagator reads: Trace Context reads
// tracestate only along with a traceparent.
const (
	traceparentKey = "traceparent"
	baggageKey     = "baggage"
)

// hasW3CContext reports whether the incoming metadata carries a traceparent
// or baggage, that is, whether the default propagator would find anything.
// The look-ups are the ones its Extract makes; asking first saves, on the
// calls that carry neither, the carrier (an allocation: a context does not
// fit in an interface word) and the propagators' own work.
func hasW3CContext(ctx context.Context) bool {
	return len(metadata.ValueFromIncomingContext(ctx, traceparentKey)) > 0 ||
		len(metadata.ValueFromIncomingContext(ctx, baggageKey)) > 0
}

// instrumentationName names the tracer, as OpenTelemetry asks: the package
// that creates the spans.
const instrumentationName = "github.com/csikit/csikit/middleware/tracing"

// serverHandler starts and ends server spans: the stats handler
// ServerOption installs, and the state of the span interceptors.
type serverHandler struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	// w3cOnly: the propagator is the default one, W3C Trace Context and
	// Baggage, whose keys are known (see hasW3CContext).
	w3cOnly bool
	keep    func(fullMethod string) bool
	// methods caches each method's span name and attributes, built on the
	// method's first call: the set of methods is the server's, small and
	// fixed, and a call then builds nothing.
	methods sync.Map // full method -> *methodSpan
	first   atomic.Pointer[methodSpan]
}

// methodSpan is what every span of one method is named and attributed with.
type methodSpan struct {
	full string // the full method, "/csi.v1.Controller/CreateVolume"
	name string
	// attrs are rpc.system.name and rpc.method, set when a recording span
	// ends, together with the status code, rather than passed to Start:
	// passed at start they would be copied into a new slice for every call,
	// sampled or not (with a ratio sampler most are not), and the SDK would
	// grow the span's attribute slice once more. The cost is that a sampler
	// does not see them; the SDK's samplers do not look.
	attrs [2]attribute.KeyValue
	// ends holds, per status code, the three attributes a span of this
	// method ends with (attrs and the code's), built on the code's first
	// use. A call hands the SDK a slice of one of them: a slice built per
	// call would escape to the heap (SetAttributes is an interface method),
	// one allocation more for every recorded call.
	ends [len(statusAttrs)]atomic.Pointer[[3]attribute.KeyValue]
	// traced is false for a method WithFilter leaves out.
	traced bool
}

// endAttrs returns the attributes a span of m ends with when the call's code
// is c.
func (m *methodSpan) endAttrs(c codes.Code) []attribute.KeyValue {
	i := statusIndex(c)
	if p := m.ends[i].Load(); p != nil {
		return p[:]
	}
	p := &[3]attribute.KeyValue{m.attrs[0], m.attrs[1], statusAttrs[i]}
	// Two racing first calls build equal arrays; either one will do.
	m.ends[i].CompareAndSwap(nil, p)
	return m.ends[i].Load()[:]
}

// serverKind is the one start option of every span; built once, since each
// option is a closure.
var serverKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

func (h *serverHandler) method(full string) *methodSpan {
	// The first method seen answers without a map look-up: a driver builds
	// one interceptor per method, so for it this is the only one.
	if m := h.first.Load(); m != nil && m.full == full {
		return m
	}
	if m, ok := h.methods.Load(full); ok {
		return m.(*methodSpan)
	}
	name := full
	if len(name) > 0 && name[0] == '/' {
		name = name[1:]
	}
	m := &methodSpan{
		full:   full,
		name:   name,
		attrs:  [2]attribute.KeyValue{rpcSystemNameKey.String("grpc"), rpcMethodKey.String(name)},
		traced: h.keep == nil || h.keep(full),
	}
	actual, _ := h.methods.LoadOrStore(full, m)
	m = actual.(*methodSpan)
	h.first.CompareAndSwap(nil, m)
	return m
}

// spanKey marks the span this handler started, so that it ends its own span
// and never one another handler put in the context.
type spanKey struct{}

// start starts the call's span, a child of the CO's span when the incoming
// metadata carries a trace context. It returns the span only when it
// records: a span that is not sampled still goes on in the context (log
// lines carry its trace ID, child spans and outgoing calls continue the
// trace), and there is nothing to end.
func (h *serverHandler) start(ctx context.Context, m *methodSpan) (context.Context, trace.Span) {
	if !h.w3cOnly || hasW3CContext(ctx) {
		ctx = h.propagator.Extract(ctx, incomingCarrier{ctx})
	}
	ctx, span := h.tracer.Start(ctx, m.name, serverKind...)
	if !span.IsRecording() {
		return ctx, nil
	}
	return ctx, span
}

// finish ends a recording span with the call's outcome: the method's
// attributes and the status code, and an Error status with the message for
// the codes that mean the server failed.
func finish(span trace.Span, m *methodSpan, err error) {
	st, _ := status.FromError(err)
	c := st.Code()
	// One SetAttributes call for all three (the SDK grows the span's
	// attribute slice once per call), from a slice built once.
	span.SetAttributes(m.endAttrs(c)...)
	if serverFault(c) {
		// The final message, as the CO gets it: by now the chain has
		// scrubbed it of secrets (middleware/sanitize).
		span.SetStatus(otelcodes.Error, st.Message())
	}
	span.End()
}

// TagRPC starts the call's span (see start).
func (h *serverHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	m := h.method(info.FullMethodName)
	if !m.traced {
		return ctx
	}
	ctx, span := h.start(ctx, m)
	if span == nil {
		return ctx
	}
	return context.WithValue(ctx, spanKey{}, callSpan{span, m})
}

// callSpan is the recording span TagRPC started and its method, for
// HandleRPC to end.
type callSpan struct {
	span trace.Span
	m    *methodSpan
}

// HandleRPC ends the span when the call ends, with its status code. Every
// other event is ignored: per-message events and sizes are what made
// otelgrpc's span expensive, and operators search by method, resource and
// status, not by payload size.
func (h *serverHandler) HandleRPC(ctx context.Context, s stats.RPCStats) {
	end, ok := s.(*stats.End)
	if !ok {
		return
	}
	if cs, ok := ctx.Value(spanKey{}).(callSpan); ok {
		// End's own clock, not end.EndTime: a timestamp option costs an
		// allocation, and the two readings are microseconds apart.
		finish(cs.span, cs.m, end.Error)
	}
}

// UnarySpanInterceptor returns an interceptor that does what ServerOption's
// stats handler does, from inside the interceptor chain: the span covers
// the interceptors after it and the handler, and ends with the code the
// call returns to the interceptors before it. Put it first. It skips the
// work grpc-go does for any stats handler on every call (a copy of the
// incoming metadata and an event per header, message and trailer), which is
// what the driver needs to stay within its latency budget. Nil when tp is
// nil or a no-op provider; use one of ServerOption or the interceptors, not
// both.
func UnarySpanInterceptor(tp trace.TracerProvider, opts ...Option) grpc.UnaryServerInterceptor {
	h := newServerHandler(tp, opts)
	if h == nil {
		return nil
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		m := h.method(info.FullMethod)
		if !m.traced {
			return handler(ctx, req)
		}
		ctx, span := h.start(ctx, m)
		resp, err := handler(ctx, req)
		if span != nil {
			finish(span, m, err)
		}
		return resp, err
	}
}

// StreamSpanInterceptor is UnarySpanInterceptor for streaming calls. Nil
// when tp is nil or a no-op provider.
func StreamSpanInterceptor(tp trace.TracerProvider, opts ...Option) grpc.StreamServerInterceptor {
	h := newServerHandler(tp, opts)
	if h == nil {
		return nil
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		m := h.method(info.FullMethod)
		if !m.traced {
			return handler(srv, ss)
		}
		ctx, span := h.start(ss.Context(), m)
		err := handler(srv, &spanStream{ServerStream: ss, ctx: ctx})
		if span != nil {
			finish(span, m, err)
		}
		return err
	}
}

// spanStream is a server stream whose context carries the call's span.
type spanStream struct {
	grpc.ServerStream
	ctx context.Context
}

// Context returns the stream's context with the call's span.
func (s *spanStream) Context() context.Context { return s.ctx }

// TagConn does nothing: spans are per call.
func (*serverHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

// HandleConn does nothing: spans are per call.
func (*serverHandler) HandleConn(context.Context, stats.ConnStats) {}

// incomingCarrier reads trace context from the call's incoming metadata one
// key at a time, without copying the whole metadata map as
// metadata.FromIncomingContext does.
type incomingCarrier struct{ ctx context.Context }

// Get returns the first value of key in the incoming metadata, or "".
func (c incomingCarrier) Get(key string) string {
	if v := metadata.ValueFromIncomingContext(c.ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values returns every value of key, for propagators that join repeated
// headers (W3C Baggage may be sent as several).
func (c incomingCarrier) Values(key string) []string {
	return metadata.ValueFromIncomingContext(c.ctx, key)
}

// Set does nothing: the carrier is only read from.
func (incomingCarrier) Set(string, string) {}

// Keys lists the incoming metadata keys, for propagators that look keys up
// by prefix; the default ones do not call it.
func (c incomingCarrier) Keys() []string {
	md, _ := metadata.FromIncomingContext(c.ctx)
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	return keys
}
