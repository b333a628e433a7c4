package cmdline

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// TestApplyEndpointByServices: without --endpoint, the endpoint comes from the variable of the
// services the plugin serves. A plugin that serves only COSI listens on $COSI_ENDPOINT whatever
// Defaults say; when two variables it reads name different sockets (CSI and COSI on one socket,
// or a variable of the driver's own beside $COSI_ENDPOINT), or a COSI-only plugin finds only
// $CSI_ENDPOINT, Apply fails naming them instead of picking one in silence. --endpoint always
// wins.
func TestApplyEndpointByServices(t *testing.T) {
	const (
		def  = "unix:///default/csi.sock"
		csi  = "unix:///from-csi-endpoint/csi.sock"
		cosi = "unix:///from-cosi-endpoint/cosi.sock"
		flg  = "unix:///from-flag/plugin.sock"
		mine = "unix:///from-my-endpoint/plugin.sock"
	)
	mem := memdriver.New(memdriver.Options{})
	buckets := &plugin.COSIConfig{Provisioner: memdriver.NewBuckets("http://s3.example", "us-east-1"), Protocols: []bucket.Protocol{bucket.S3}}
	configs := map[string]plugin.Config{
		"CSI only":     {Controller: mem, Node: mem},
		"COSI only":    {COSI: buckets},
		"CSI and COSI": {Controller: mem, COSI: buckets},
	}
	tests := []struct {
		services string
		defaults Defaults
		env      map[string]string
		args     []string
		want     string
		wantErr  []string // what the error must name
	}{
		{services: "CSI only", defaults: Defaults{Endpoint: def}, want: def},
		{services: "CSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi}, want: csi},
		{services: "CSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"COSI_ENDPOINT": cosi}, want: def},
		{services: "CSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi}, args: []string{"--endpoint", flg}, want: flg},

		{services: "COSI only", defaults: Defaults{Endpoint: def}, want: def},
		{services: "COSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"COSI_ENDPOINT": cosi}, want: cosi},
		{services: "COSI only", defaults: Defaults{}, env: map[string]string{"COSI_ENDPOINT": cosi}, want: cosi},
		{services: "COSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi},
			wantErr: []string{"$CSI_ENDPOINT", "$COSI_ENDPOINT", "only COSI", "--endpoint"}},
		{services: "COSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi, "COSI_ENDPOINT": cosi}, want: cosi},
		{services: "COSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": cosi, "COSI_ENDPOINT": cosi}, want: cosi},
		{services: "COSI only", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi, "COSI_ENDPOINT": cosi}, args: []string{"--endpoint", flg}, want: flg},
		{services: "COSI only", defaults: Defaults{Endpoint: def, EndpointEnv: "COSI_ENDPOINT"}, env: map[string]string{"COSI_ENDPOINT": cosi}, want: cosi},
		{services: "COSI only", defaults: Defaults{Endpoint: def, EndpointEnv: "COSI_ENDPOINT"}, env: map[string]string{"CSI_ENDPOINT": csi}, want: def},
		{services: "COSI only", defaults: Defaults{Endpoint: def, EndpointEnv: "MY_ENDPOINT"}, env: map[string]string{"MY_ENDPOINT": mine}, want: mine},
		{services: "COSI only", defaults: Defaults{Endpoint: def, EndpointEnv: "MY_ENDPOINT"}, env: map[string]string{"MY_ENDPOINT": mine, "COSI_ENDPOINT": cosi},
			wantErr: []string{"$MY_ENDPOINT", "$COSI_ENDPOINT"}},

		{services: "CSI and COSI", defaults: Defaults{Endpoint: def}, want: def},
		{services: "CSI and COSI", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi}, want: csi},
		{services: "CSI and COSI", defaults: Defaults{Endpoint: def}, env: map[string]string{"COSI_ENDPOINT": cosi}, want: cosi},
		{services: "CSI and COSI", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi, "COSI_ENDPOINT": cosi},
			wantErr: []string{"$CSI_ENDPOINT", "$COSI_ENDPOINT", "one socket", "--endpoint"}},
		{services: "CSI and COSI", defaults: Defaults{Endpoint: def}, env: map[string]string{"CSI_ENDPOINT": csi, "COSI_ENDPOINT": cosi}, args: []string{"--endpoint", flg}, want: flg},
	}
	for _, tt := range tests {
		var env []string
		for k, v := range tt.env {
			env = append(env, k+"="+v)
		}
		name := tt.services + " " + strings.Join(env, " ") + " " + strings.Join(tt.args, " ")
		if tt.defaults.EndpointEnv != "" {
			name += " EndpointEnv=" + tt.defaults.EndpointEnv
		}
		t.Run(name, func(t *testing.T) {
			clearOTEL(t)
			for _, k := range []string{"CSI_ENDPOINT", "COSI_ENDPOINT", "MY_ENDPOINT"} {
				t.Setenv(k, tt.env[k])
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			s := Register(fs, tt.defaults)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg := configs[tt.services]
			cfg.Logger = zap.NewNop()
			flush, err := s.Apply(context.Background(), &cfg)
			if err == nil {
				defer flush()
			}
			if tt.wantErr != nil {
				for _, w := range tt.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("Apply = %v (endpoint %q); want an error naming %q", err, cfg.Endpoint, w)
					}
				}
				if err != nil && cfg.Endpoint != "" {
					t.Errorf("a failed Apply set Endpoint %q", cfg.Endpoint)
				}
				return
			}
			if err != nil || cfg.Endpoint != tt.want {
				t.Errorf("Apply = %v, Endpoint %q; want %q", err, cfg.Endpoint, tt.want)
			}
		})
	}
}
