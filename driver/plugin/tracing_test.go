package plugin_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// TestTracingOverTheSocket: with Config.TracerProvider set, a call continues the CO's trace,
// its span carries the request's resource IDs and no secret, and its log lines carry the trace ID;
// a refused call's span carries its code. The span is started inside the registered methods, so
// Register on a server of the user's own traces as Serve does.
func TestTracingOverTheSocket(t *testing.T) {
	ways := []struct {
		name  string
		serve func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error
	}{
		{"Serve", func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error { return d.Serve }},
		{"Register on a plain grpc.Server", func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error {
			s := grpc.NewServer()
			d.Register(s)
			return plainServe(s)
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			ended := make(chan struct{}, 16)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSpanProcessor(spanEnded{ended}))
			defer tp.Shutdown(context.Background())
			core, logs := observer.New(zapcore.InfoLevel)
			cfg := fullConfig(memdriver.New(memdriver.Options{}))
			cfg.TracerProvider, cfg.Logger = tp, zap.New(core)
			d, err := plugin.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			controller := csi.NewControllerClient(serveWith(t, d, way.serve(d)))
			// The server ends its span after the answer is sent: wait for it (the timeout only
			// turns a hang into a failure).
			waitSpan := func() {
				t.Helper()
				select {
				case <-ended:
				case <-time.After(10 * time.Second):
					t.Fatal("the call's span never ended")
				}
			}

			const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
			const secret = "trace-s3cr3t-canary"
			if _, err := controller.CreateVolume(ctx, &csi.CreateVolumeRequest{
				Name: "pvc-traced", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
				Secrets: map[string]string{"password": secret},
			}); err != nil {
				t.Fatal(err)
			}
			waitSpan()
			_, err = controller.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
				VolumeId: "vol-missing", NodeId: "node-1", VolumeCapability: mountCap(snw),
			})
			if status.Code(err) != codes.NotFound {
				t.Fatalf("publish of a missing volume: %v, want NOT_FOUND", err)
			}
			waitSpan()

			spans := map[string]tracetest.SpanStub{}
			for _, s := range exp.GetSpans() {
				spans[s.Name[strings.LastIndex(s.Name, "/")+1:]] = s
				for _, a := range s.Attributes {
					if strings.Contains(a.Value.Emit(), secret) {
						t.Errorf("span %s attribute %s leaks the secret", s.Name, a.Key)
					}
				}
			}
			create, ok := spans["CreateVolume"]
			if !ok {
				t.Fatalf("no CreateVolume span among %d", len(spans))
			}
			if create.SpanContext.TraceID().String() != traceID {
				t.Errorf("span trace %s, want the CO's %s", create.SpanContext.TraceID(), traceID)
			}
			if got := attr(create, "csi.name"); got != "pvc-traced" {
				t.Errorf("csi.name = %q, want pvc-traced (attributes %v)", got, create.Attributes)
			}
			if got := attr(create, "rpc.response.status_code"); got != "OK" {
				t.Errorf("CreateVolume status code %q, want OK", got)
			}
			publish, ok := spans["ControllerPublishVolume"]
			if !ok {
				t.Fatalf("no ControllerPublishVolume span among %d", len(spans))
			}
			if got := attr(publish, "rpc.response.status_code"); got != "NOT_FOUND" || publish.Status.Code != otelcodes.Unset {
				t.Errorf("refused publish: code %q status %v, want NOT_FOUND and Unset (a client's mistake)", got, publish.Status.Code)
			}
			if got := attr(publish, "csi.volume_id"); got != "vol-missing" {
				t.Errorf("csi.volume_id = %q, want vol-missing", got)
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
		})
	}
}

// attr is the value of the span attribute key, or "".
func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

// spanEnded signals every span that ends.
type spanEnded struct{ ended chan struct{} }

func (e spanEnded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e spanEnded) OnEnd(sdktrace.ReadOnlySpan)                     { e.ended <- struct{}{} }
func (e spanEnded) Shutdown(context.Context) error                  { return nil }
func (e spanEnded) ForceFlush(context.Context) error                { return nil }
