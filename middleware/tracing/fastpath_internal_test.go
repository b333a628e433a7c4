package tracing

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestEndAttrs: every code, a known one or not, ends a span with the method's attributes and
// the code's name, and asking again gives the same attributes.
func TestEndAttrs(t *testing.T) {
	h := newServerHandler(sdktrace.NewTracerProvider(), nil)
	m := h.method("/csi.v1.Controller/DeleteVolume")
	for c := codes.OK; c <= codes.Unauthenticated+2; c++ {
		for range 2 {
			got := m.endAttrs(c)
			if len(got) != 3 || got[0] != m.attrs[0] || got[1] != m.attrs[1] {
				t.Fatalf("code %v: %v", c, got)
			}
			want := codeName(c)
			if c > codes.Unauthenticated {
				want = "UNKNOWN"
			}
			if got[2].Key != rpcResponseStatusCodeKey || got[2].Value.AsString() != want {
				t.Fatalf("code %v: status attribute %v, want %s", c, got[2], want)
			}
		}
	}
}

// TestMethodLookup: the first method seen and any later one each get their own attributes,
// whichever order they are asked in.
func TestMethodLookup(t *testing.T) {
	h := newServerHandler(sdktrace.NewTracerProvider(), nil)
	const a, b = "/csi.v1.Controller/DeleteVolume", "/csi.v1.Node/NodeGetInfo"
	for _, full := range []string{a, b, a, b, b, a} {
		m := h.method(full)
		if m.full != full || m.name != full[1:] || m.attrs[1].Value.AsString() != full[1:] {
			t.Fatalf("method(%q) = %q / %q", full, m.full, m.attrs[1].Value.AsString())
		}
	}
	if h.method(a) != h.method(a) || h.method(b) != h.method(b) {
		t.Fatal("a method's state is built more than once")
	}
}

// TestTraceContextReadOnlyWhenSent: with the default propagators a span continues an incoming
// traceparent and carries incoming baggage, and starts a new trace without them; a propagator of
// the caller's is asked on every call, whatever keys the metadata holds.
func TestTraceContextReadOnlyWhenSent(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	parent := metadata.Pairs("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	bag := metadata.Pairs("baggage", "tenant=blue")
	plain := metadata.Pairs("user-agent", "test")

	h := newServerHandler(tp, nil)
	m := h.method("/csi.v1.Controller/DeleteVolume")
	ctx, span := h.start(metadata.NewIncomingContext(context.Background(), parent), m)
	if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != traceID || span == nil {
		t.Errorf("with a traceparent: trace %s, want %s", got, traceID)
	}
	ctx, _ = h.start(metadata.NewIncomingContext(context.Background(), bag), m)
	if got := baggage.FromContext(ctx).Member("tenant").Value(); got != "blue" {
		t.Errorf("with baggage: tenant = %q, want blue", got)
	}
	ctx, _ = h.start(metadata.NewIncomingContext(context.Background(), plain), m)
	if sc := trace.SpanContextFromContext(ctx); !sc.IsValid() || sc.TraceID().String() == traceID {
		t.Errorf("without a traceparent: span context %v, want a new trace", sc)
	}

	asked := 0
	custom := newServerHandler(tp, []Option{WithPropagators(countingPropagator{&asked})})
	cm := custom.method("/csi.v1.Controller/DeleteVolume")
	for _, md := range []metadata.MD{parent, bag, plain} {
		custom.start(metadata.NewIncomingContext(context.Background(), md), cm)
	}
	if asked != 3 {
		t.Errorf("a caller's propagator was asked %d times for 3 calls", asked)
	}
}

// countingPropagator counts the calls to Extract.
type countingPropagator struct{ n *int }

func (p countingPropagator) Inject(context.Context, propagation.TextMapCarrier) {}
func (p countingPropagator) Extract(ctx context.Context, _ propagation.TextMapCarrier) context.Context {
	*p.n++
	return ctx
}
func (countingPropagator) Fields() []string { return []string{"x-custom"} }

// TestAttributeInterceptorPlanCache: an attribute interceptor that sees several request types
// records each one's own resource fields.
func TestAttributeInterceptorPlanCache(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	unary := UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{}
	handler := func(context.Context, any) (any, error) { return nil, status.Error(codes.OK, "") }
	reqs := []any{
		&csi.DeleteVolumeRequest{VolumeId: "vol-1"},
		&csi.NodeGetInfoRequest{},
		&csi.DeleteSnapshotRequest{SnapshotId: "snap-1"},
		&csi.DeleteVolumeRequest{VolumeId: "vol-2"},
	}
	want := []map[string]string{
		{"csi.volume_id": "vol-1"}, {}, {"csi.snapshot_id": "snap-1"}, {"csi.volume_id": "vol-2"},
	}
	for i, req := range reqs {
		ctx, span := tp.Tracer("test").Start(context.Background(), "call")
		_, _ = unary(ctx, req, info, handler)
		span.End()
		ended := rec.Ended()
		got := map[string]string{}
		for _, kv := range ended[len(ended)-1].Attributes() {
			got[string(kv.Key)] = kv.Value.Emit()
		}
		if len(got) != len(want[i]) {
			t.Fatalf("request %d (%T): attributes %v, want %v", i, req, got, want[i])
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Fatalf("request %d (%T): attributes %v, want %v", i, req, got, want[i])
			}
		}
	}
}
