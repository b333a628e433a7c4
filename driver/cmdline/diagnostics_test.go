package cmdline

import (
	"flag"
	"strings"
	"testing"

	"github.com/csikit/csikit/driver/plugin"
)

func TestDiagnostics(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantAddr string
		wantPath string
		wantErr  string
	}{
		{"off by default", nil, "", "", ""},
		{"http endpoint", []string{"--http-endpoint", ":8080"}, ":8080", "/metrics", ""},
		{"deprecated metrics address", []string{"--metrics-address", ":9090", "--metrics-path", "/m"}, ":9090", "/m", ""},
		{"both address flags", []string{"--metrics-address", ":9090", "--http-endpoint", ":8080"}, "", "", "only one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			s := Register(fs, Defaults{Endpoint: "unix:///tmp/x.sock"})
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			var cfg plugin.Config
			err := s.Diagnostics(&cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Diagnostics: %v, want an error mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.HTTPEndpoint != tt.wantAddr || cfg.MetricsPath != tt.wantPath || (cfg.Metrics != nil) != (tt.wantAddr != "") {
				t.Errorf("cfg = {HTTPEndpoint: %q, MetricsPath: %q, Metrics set: %v}", cfg.HTTPEndpoint, cfg.MetricsPath, cfg.Metrics != nil)
			}
		})
	}
}
