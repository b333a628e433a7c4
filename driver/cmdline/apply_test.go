package cmdline

import (
	"bytes"
	"context"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// TestHelpStatesEachDefaultOnce: -h shows one default per flag, and for the two with a variable
// it names the variable and the value used without it, whatever the environment holds now.
func TestHelpStatesEachDefaultOnce(t *testing.T) {
	t.Setenv("CSI_ENDPOINT", "unix:///from/env.sock")
	t.Setenv("LOG_LEVEL", "debug")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	Register(fs, Defaults{Endpoint: "unix:///built/in.sock"})
	fs.PrintDefaults()
	usage := map[string]string{} // flag name -> its lines of help
	name := ""
	for _, line := range strings.Split(help.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			name, _, _ = strings.Cut(rest, " ")
		}
		usage[name] += line + "\n"
	}
	want := map[string][]string{
		"endpoint":        {`(default $CSI_ENDPOINT ($COSI_ENDPOINT for a plugin that serves only COSI), else "unix:///built/in.sock")`},
		"log-level":       {"(default $LOG_LEVEL, else info)"},
		"http-endpoint":   {"(default none: no HTTP server)"},
		"metrics-address": {"deprecated"},
		"metrics-path":    {`(default "/metrics")`},
	}
	for flagName, parts := range want {
		u, ok := usage[flagName]
		if !ok {
			t.Errorf("no help for --%s in:\n%s", flagName, help.String())
			continue
		}
		if n := strings.Count(u, "default"); n > 1 {
			t.Errorf("--%s states %d defaults:\n%s", flagName, n, u)
		}
		for _, p := range parts {
			if !strings.Contains(u, p) {
				t.Errorf("--%s help %q does not say %q", flagName, u, p)
			}
		}
		if strings.Contains(u, "/from/env.sock") {
			t.Errorf("--%s help shows the environment's value as if it were the default:\n%s", flagName, u)
		}
	}
	for flagName := range usage {
		if _, ok := want[flagName]; !ok {
			t.Errorf("Register added --%s, which this test does not check", flagName)
		}
	}
}

func TestApply(t *testing.T) {
	own := zap.NewNop()
	ownRegistry := prometheus.NewRegistry()
	tests := []struct {
		name     string
		args     []string
		defaults Defaults
		env      map[string]string
		cfg      plugin.Config
		check    func(t *testing.T, cfg plugin.Config)
		wantErr  string
	}{
		{name: "the flag's endpoint and a logger at its level", args: []string{"--endpoint", "unix:///f.sock", "--log-level", "warn"},
			defaults: Defaults{Endpoint: "unix:///d.sock"},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Endpoint != "unix:///f.sock" {
					t.Errorf("Endpoint = %q", cfg.Endpoint)
				}
				if cfg.Logger == nil || cfg.Logger.Core().Enabled(zap.InfoLevel) || !cfg.Logger.Core().Enabled(zap.WarnLevel) {
					t.Errorf("Logger = %v, want one at warn", cfg.Logger)
				}
				if cfg.Metrics != nil || cfg.HTTPEndpoint != "" || cfg.TracerProvider != nil {
					t.Errorf("diagnostics or tracing on without being asked: %+v", cfg)
				}
			}},
		{name: "the default endpoint", defaults: Defaults{Endpoint: "unix:///d.sock"},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Endpoint != "unix:///d.sock" {
					t.Errorf("Endpoint = %q", cfg.Endpoint)
				}
			}},
		{name: "the COSI variable", defaults: Defaults{EndpointEnv: "COSI_ENDPOINT"}, env: map[string]string{"COSI_ENDPOINT": "unix:///c.sock"},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Endpoint != "unix:///c.sock" {
					t.Errorf("Endpoint = %q", cfg.Endpoint)
				}
			}},
		{name: "settings win over the driver's endpoint", defaults: Defaults{Endpoint: "unix:///d.sock"}, cfg: plugin.Config{Endpoint: "unix:///own.sock"},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Endpoint != "unix:///d.sock" {
					t.Errorf("Endpoint = %q", cfg.Endpoint)
				}
			}},
		{name: "no endpoint anywhere keeps the driver's", cfg: plugin.Config{Endpoint: "unix:///own.sock"},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Endpoint != "unix:///own.sock" {
					t.Errorf("Endpoint = %q", cfg.Endpoint)
				}
			}},
		{name: "the driver's logger and registry are kept", args: []string{"--http-endpoint", ":8080"},
			cfg: plugin.Config{Logger: own, Metrics: ownRegistry},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Logger != own || cfg.Metrics != ownRegistry {
					t.Errorf("Logger %p, Metrics %p: the driver's were replaced", cfg.Logger, cfg.Metrics)
				}
				if cfg.HTTPEndpoint != ":8080" || cfg.MetricsPath != "/metrics" {
					t.Errorf("HTTPEndpoint %q, MetricsPath %q", cfg.HTTPEndpoint, cfg.MetricsPath)
				}
			}},
		{name: "diagnostics", args: []string{"--metrics-address", ":9090", "--metrics-path", "/m"},
			check: func(t *testing.T, cfg plugin.Config) {
				if cfg.Metrics == nil || cfg.HTTPEndpoint != ":9090" || cfg.MetricsPath != "/m" {
					t.Errorf("Metrics %v, HTTPEndpoint %q, MetricsPath %q", cfg.Metrics, cfg.HTTPEndpoint, cfg.MetricsPath)
				}
			}},
		{name: "tracing", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			check: func(t *testing.T, cfg plugin.Config) {
				if _, ok := cfg.TracerProvider.(*sdktrace.TracerProvider); !ok {
					t.Errorf("TracerProvider = %T, want the SDK's", cfg.TracerProvider)
				}
			}},
		{name: "a bad log level changes nothing", args: []string{"--endpoint", "unix:///f.sock", "--log-level", "loud"},
			wantErr: `log level "loud"`},
		{name: "both HTTP flags change nothing", args: []string{"--endpoint", "unix:///f.sock", "--http-endpoint", ":1", "--metrics-address", ":2"},
			wantErr: "only one of --metrics-address and --http-endpoint"},
		{name: "a bad exporter changes nothing", args: []string{"--endpoint", "unix:///f.sock", "--http-endpoint", ":1"},
			env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, wantErr: "OTEL_TRACES_EXPORTER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTEL(t)
			for _, k := range []string{"CSI_ENDPOINT", "COSI_ENDPOINT", "LOG_LEVEL"} {
				t.Setenv(k, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			s := Register(fs, tt.defaults)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg := tt.cfg
			flush, err := s.Apply(t.Context(), &cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Apply: %v, want an error mentioning %q", err, tt.wantErr)
				}
				if cfg.Endpoint != tt.cfg.Endpoint || cfg.Logger != nil || cfg.Metrics != nil || cfg.HTTPEndpoint != "" ||
					cfg.MetricsPath != "" || cfg.TracerProvider != nil {
					t.Errorf("Apply failed and still changed cfg: %+v", cfg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			defer flush()
			tt.check(t, cfg)
		})
	}
}

// TestApplyPutsTheFlagsEndpointWhereRunListens is the whole path of a binary: the endpoint given
// on the command line is where Run listens, with no line of the driver's copying it.
func TestApplyPutsTheFlagsEndpointWhereRunListens(t *testing.T) {
	clearOTEL(t)
	t.Setenv("CSI_ENDPOINT", "")
	dir := t.TempDir()
	sock := filepath.Join(dir, "flag.sock")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	s := Register(fs, Defaults{Endpoint: "unix://" + filepath.Join(dir, "default.sock")})
	if err := fs.Parse([]string{"--endpoint", "unix://" + sock, "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	mem := memdriver.New(memdriver.Options{})
	cfg := plugin.Config{Name: "apply.csikit.dev", VendorVersion: "1", Controller: mem, Node: mem}
	flush, err := s.Apply(t.Context(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer flush()
	p, err := plugin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(cctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("GetPluginInfo at the flag's endpoint: %v", err)
	}
	if info.GetName() != "apply.csikit.dev" {
		t.Errorf("name %q", info.GetName())
	}
}
