package driver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/metadata"

	"github.com/csikit/csikit/driver/memdriver"
)

// TestTracingOverTheSocket: with Config.TracerProvider set, a call continues the CO's trace,
// its span carries the request's resource IDs and no secret, and its log lines carry the trace ID.
func TestTracingOverTheSocket(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	ended := make(chan struct{}, 16)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(spanEnded{ended}))
	defer tp.Shutdown(context.Background())
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := fullConfig(memdriver.New(memdriver.Options{}))
	cfg.TracerProvider, cfg.Logger = tp, zap.New(core)
	p := start(t, cfg)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	const secret = "trace-s3cr3t-canary"
	if _, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
		Name: "pvc-traced", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		Secrets: map[string]string{"password": secret},
	}); err != nil {
		t.Fatal(err)
	}
	// The server ends its span after the answer is sent: wait for it (the timeout only turns a
	// hang into a failure).
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the call's span never ended")
	}
	var found bool
	for _, s := range exp.GetSpans() {
		if !strings.HasSuffix(s.Name, "/CreateVolume") {
			continue
		}
		found = true
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("span trace %s, want the CO's %s", s.SpanContext.TraceID(), traceID)
		}
		var named bool
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.Emit(), secret) {
				t.Errorf("span attribute %s leaks the secret", a.Key)
			}
			if a.Value.Emit() == "pvc-traced" {
				named = true
			}
		}
		if !named {
			t.Errorf("span attributes %v lack the volume name", s.Attributes)
		}
	}
	if !found {
		t.Fatalf("no CreateVolume span among %d", len(exp.GetSpans()))
	}
	var logged bool
	for _, e := range logs.All() {
		if e.ContextMap()["trace_id"] == traceID {
			logged = true
		}
	}
	if !logged {
		t.Error("no log line of the call carries its trace_id")
	}
}

// spanEnded signals every span that ends.
type spanEnded struct{ ended chan struct{} }

func (e spanEnded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e spanEnded) OnEnd(sdktrace.ReadOnlySpan)                     { e.ended <- struct{}{} }
func (e spanEnded) Shutdown(context.Context) error                  { return nil }
func (e spanEnded) ForceFlush(context.Context) error                { return nil }
