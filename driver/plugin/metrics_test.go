package plugin_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/csikit/csikit/driver/memdriver"
)

// freeAddr returns a loopback address with a port nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestMetricsAndHealthOverHTTP: with Config.Metrics and Config.HTTPEndpoint set, real calls show
// up in /metrics under csi-lib-utils' names and labels, and /healthz and /readyz answer.
func TestMetricsAndHealthOverHTTP(t *testing.T) {
	reg := prometheus.NewRegistry()
	addr := freeAddr(t)
	cfg := fullConfig(memdriver.New(memdriver.Options{}))
	cfg.Metrics, cfg.HTTPEndpoint = reg, addr
	p := start(t, cfg)
	ctx := context.Background()
	createVolume(t, p, "pvc-metrics")
	if _, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "no-caps"}); err == nil {
		t.Fatal("CreateVolume without capabilities succeeded")
	}
	code, body := get(t, "http://"+addr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`csi_plugin_operations_seconds_count{driver_name="mem.csikit.dev",grpc_status_code="OK",method_name="/csi.v1.Controller/CreateVolume"} 1`,
		`csi_plugin_operations_seconds_count{driver_name="mem.csikit.dev",grpc_status_code="InvalidArgument",method_name="/csi.v1.Controller/CreateVolume"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if code, _ := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
	if code, _ := get(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz while serving: %d, want 200", code)
	}
}
