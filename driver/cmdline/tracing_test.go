package cmdline

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/csikit/csikit/driver/plugin"
)

// clearOTEL leaves the test's environment without any of the variables Tracing reads.
func clearOTEL(t *testing.T) {
	t.Helper()
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_BSP_SCHEDULE_DELAY"} {
		t.Setenv(k, "")
	}
	// Nothing listens here; creating an exporter must not need a collector.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
}

func TestTracing(t *testing.T) {
	own := tracenoop.NewTracerProvider()
	tests := []struct {
		name    string
		env     map[string]string
		cfg     plugin.Config
		wantSDK bool // cfg.TracerProvider becomes an SDK provider
		wantOwn bool // cfg.TracerProvider stays the driver's own
		wantErr string
	}{
		{name: "off by default"},
		{name: "none is off", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "SDK disabled", env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, wantSDK: true},
		{name: "otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, wantSDK: true},
		{name: "the driver's own provider wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"},
			cfg: plugin.Config{TracerProvider: own}, wantOwn: true},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"},
			wantErr: `tracing from the OTEL_* variables: unsupported OTEL_TRACES_EXPORTER value "jaeger"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTEL(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg := tt.cfg
			flush, err := (&Settings{}).Tracing(t.Context(), &cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Tracing: %v, want an error starting %q", err, tt.wantErr)
				}
				if cfg.TracerProvider != nil {
					t.Errorf("cfg.TracerProvider = %T after an error, want it untouched", cfg.TracerProvider)
				}
				return
			}
			if err != nil {
				t.Fatalf("Tracing: %v", err)
			}
			defer flush()
			switch tp := cfg.TracerProvider.(type) {
			case nil:
				if tt.wantSDK || tt.wantOwn {
					t.Error("cfg.TracerProvider is nil")
				}
			case *sdktrace.TracerProvider:
				if !tt.wantSDK {
					t.Error("cfg.TracerProvider is an SDK provider, want tracing off")
				}
			default:
				if !tt.wantOwn || tp != own {
					t.Errorf("cfg.TracerProvider = %T", tp)
				}
			}
		})
	}
}

// TestTracingFlushSendsTheLastSpans: a span ended just before exit leaves through flush, not
// after the batch processor's 5-second schedule delay (which the process would not live to see).
func TestTracingFlushSendsTheLastSpans(t *testing.T) {
	clearOTEL(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // ten minutes: only a flush sends the span
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The console exporter takes os.Stdout when it is created.
	stdout := os.Stdout
	os.Stdout = w
	var cfg plugin.Config
	flush, err := (&Settings{}).Tracing(t.Context(), &cfg)
	os.Stdout = stdout
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r) // until w is closed below
		got <- string(b)
	}()
	_, span := cfg.TracerProvider.Tracer("test").Start(context.Background(), "csi.v1.Node/NodePublishVolume")
	span.End()
	flush()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-got:
		if !strings.Contains(out, "csi.v1.Node/NodePublishVolume") {
			t.Errorf("console exporter wrote %q, want the span", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the exporter's output never ended") // the timeout turns a hang into a failure
	}
}
