package otelenv_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/csikit/csikit/middleware/tracing/otelenv"
)

func TestNewProvider(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantSDK bool
		wantErr bool
	}{
		{name: "off by default", env: nil},
		{name: "none is off", env: map[string]string{otelenv.EnvTracesExporter: "none"}},
		{name: "SDK disabled wins over an exporter", env: map[string]string{
			otelenv.EnvTracesExporter: "console", otelenv.EnvSDKDisabled: "true"}},
		{name: "console", env: map[string]string{otelenv.EnvTracesExporter: "console"}, wantSDK: true},
		{name: "otlp defaults to http/protobuf", env: map[string]string{otelenv.EnvTracesExporter: "otlp"}, wantSDK: true},
		{name: "otlp over grpc", env: map[string]string{
			otelenv.EnvTracesExporter: "otlp", otelenv.EnvOTLPProtocol: "grpc"}, wantSDK: true},
		{name: "trace protocol wins over the general one", env: map[string]string{
			otelenv.EnvTracesExporter: "otlp", otelenv.EnvOTLPProtocol: "http/json",
			otelenv.EnvOTLPTracesProtocol: "grpc"}, wantSDK: true},
		{name: "list with none and duplicates", env: map[string]string{
			otelenv.EnvTracesExporter: " OTLP, none ,otlp,console"}, wantSDK: true},
		{name: "unknown exporter is an error, not silence", env: map[string]string{
			otelenv.EnvTracesExporter: "jaeger"}, wantErr: true},
		{name: "unknown exporter after a good one", env: map[string]string{
			otelenv.EnvTracesExporter: "console,zipkin"}, wantErr: true},
		{name: "unsupported protocol", env: map[string]string{
			otelenv.EnvTracesExporter: "otlp", otelenv.EnvOTLPProtocol: "http/json"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{otelenv.EnvTracesExporter, otelenv.EnvSDKDisabled,
				otelenv.EnvOTLPProtocol, otelenv.EnvOTLPTracesProtocol} {
				t.Setenv(k, "")
			}
			// Nothing listens here; creating an exporter must not need a
			// collector.
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tp, shutdown, err := otelenv.NewProvider(t.Context())
			if tt.wantErr {
				if err == nil {
					t.Fatalf("want an error, got provider %T", tp)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewProvider: %v", err)
			}
			defer func() {
				if err := shutdown(context.Background()); err != nil {
					t.Errorf("shutdown: %v", err)
				}
			}()
			switch tp.(type) {
			case *sdktrace.TracerProvider:
				if !tt.wantSDK {
					t.Errorf("got an SDK provider, want tracing off")
				}
			case tracenoop.TracerProvider:
				if tt.wantSDK {
					t.Errorf("got a no-op provider, want an SDK provider")
				}
			default:
				t.Errorf("unexpected provider %T", tp)
			}
		})
	}
}

// TestNewProviderHonoursBSP: spans leave through a batch span processor set from the
// OTEL_BSP_* variables. With OTEL_BSP_SCHEDULE_DELAY at 1 ms, an ended span reaches the console
// exporter with no flush, long before the 5 s default delay would have sent it.
func TestNewProviderHonoursBSP(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Close()
		_ = r.Close() // unblocks the reader below if it is still waiting
	})
	t.Setenv(otelenv.EnvSDKDisabled, "")
	t.Setenv(otelenv.EnvTracesExporter, "console")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "1")
	// The console exporter takes os.Stdout when it is created.
	stdout := os.Stdout
	os.Stdout = w
	tp, shutdown, err := otelenv.NewProvider(t.Context())
	os.Stdout = stdout
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	defer func() {
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()

	got := make(chan string, 1)
	go func() {
		b := make([]byte, 64<<10)
		n, _ := r.Read(b)
		got <- string(b[:n])
	}()
	_, span := tp.Tracer("test").Start(t.Context(), "csi.v1.Controller/CreateVolume")
	span.End()
	select {
	case out := <-got:
		if !strings.Contains(out, "csi.v1.Controller/CreateVolume") {
			t.Errorf("console exporter wrote %q, want the span", out)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("span not exported within 2 s although OTEL_BSP_SCHEDULE_DELAY is 1 ms")
	}
}
