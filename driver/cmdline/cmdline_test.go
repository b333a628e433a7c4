package cmdline

import (
	"flag"
	"io"
	"testing"
)

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		args         []string
		defaults     Defaults
		wantEndpoint string
		wantLevel    string
	}{
		{"defaults", nil, nil, Defaults{Endpoint: "unix:///d.sock"}, "unix:///d.sock", "info"},
		{"env beats default", map[string]string{"CSI_ENDPOINT": "unix:///e.sock", "LOG_LEVEL": "debug"}, nil,
			Defaults{Endpoint: "unix:///d.sock"}, "unix:///e.sock", "debug"},
		{"flag beats env", map[string]string{"CSI_ENDPOINT": "unix:///e.sock", "LOG_LEVEL": "debug"},
			[]string{"--endpoint", "unix:///f.sock", "--log-level", "warn"}, Defaults{Endpoint: "unix:///d.sock"}, "unix:///f.sock", "warn"},
		{"COSI variable", map[string]string{"COSI_ENDPOINT": "unix:///cosi.sock", "CSI_ENDPOINT": "unix:///csi.sock"}, nil,
			Defaults{EndpointEnv: "COSI_ENDPOINT"}, "unix:///cosi.sock", "info"},
		{"empty env ignored", map[string]string{"CSI_ENDPOINT": ""}, nil, Defaults{Endpoint: "unix:///d.sock", LogLevel: "error"}, "unix:///d.sock", "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"CSI_ENDPOINT", "COSI_ENDPOINT", "LOG_LEVEL"} {
				t.Setenv(k, tt.env[k])
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			s := Register(fs, tt.defaults)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if s.Endpoint != tt.wantEndpoint || s.LogLevel != tt.wantLevel {
				t.Fatalf("got endpoint %q level %q, want %q %q", s.Endpoint, s.LogLevel, tt.wantEndpoint, tt.wantLevel)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	for _, tt := range []struct {
		level string
		ok    bool
	}{{"debug", true}, {"info", true}, {"warn", true}, {"error", true}, {"verbose", false}, {"fatal", false}, {"", true}} {
		_, err := (&Settings{LogLevel: tt.level}).Logger()
		if (err == nil) != tt.ok {
			t.Errorf("Logger(%q) error = %v, want ok=%v", tt.level, err, tt.ok)
		}
	}
}
