package httpserve_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/httpserve"
)

// serve runs s on a real localhost listener until the test ends and returns its base URL.
func serve(t *testing.T, s *httpserve.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ctx, lis) }()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	})
	return "http://" + lis.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestHealthzAnswersFromTheProbe(t *testing.T) {
	withDetails, err := status.New(codes.Unavailable, "backend down").
		WithDetails(&errdetails.ErrorInfo{Reason: "SECRET-DETAIL"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		probe    httpserve.ProbeFunc
		wantCode int
		wantBody string // substring
		notBody  string
	}{
		{"no probe: alive while HTTP answers", nil, http.StatusOK, "ok", ""},
		{"ready is 200 ok", func(context.Context) (bool, error) { return true, nil }, http.StatusOK, "ok", ""},
		{"not ready is 500, as the livenessprobe sidecar answers",
			func(context.Context) (bool, error) { return false, nil }, http.StatusInternalServerError, "not ready", ""},
		{"an error is 500 with the reason",
			func(context.Context) (bool, error) { return true, errors.New("disk gone") }, http.StatusInternalServerError, "probe failed: disk gone", ""},
		{"a gRPC status shows its code and message, never its details",
			func(context.Context) (bool, error) { return true, withDetails.Err() }, http.StatusInternalServerError, "Unavailable: backend down", "SECRET-DETAIL"},
		{"a long reason is cut to one short line",
			func(context.Context) (bool, error) {
				return true, errors.New(strings.Repeat("é", 500) + "\nSECOND-LINE")
			},
			http.StatusInternalServerError, "...", "SECOND-LINE"},
		{"a probe gets a bounded context",
			func(ctx context.Context) (bool, error) {
				if _, ok := ctx.Deadline(); !ok {
					return false, errors.New("no deadline")
				}
				<-ctx.Done()
				return false, ctx.Err()
			}, http.StatusInternalServerError, "deadline exceeded", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, &httpserve.Server{Probe: tc.probe, ProbeTimeout: 50 * time.Millisecond})
			code, body := get(t, base+httpserve.HealthzPath)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET /healthz = %d %q, want %d containing %q", code, body, tc.wantCode, tc.wantBody)
			}
			if tc.notBody != "" && strings.Contains(body, tc.notBody) {
				t.Errorf("GET /healthz body %q contains %q", body, tc.notBody)
			}
			if len(body) > 300 {
				t.Errorf("reason is %d bytes long", len(body))
			}
		})
	}
}

// TestLivezFailsOnlyOnAProbeError: /livez is 200 whether the probe says ready or not, so a
// liveness check on it survives a storage outage, and 500 with the reason when the probe fails.
func TestLivezFailsOnlyOnAProbeError(t *testing.T) {
	for _, tc := range []struct {
		name     string
		probe    httpserve.ProbeFunc
		wantCode int
		wantBody string // substring
	}{
		{"no probe: alive while HTTP answers", nil, http.StatusOK, "ok"},
		{"ready", func(context.Context) (bool, error) { return true, nil }, http.StatusOK, "ok"},
		{"not ready: the storage is away, the process is alive", func(context.Context) (bool, error) { return false, nil }, http.StatusOK, "ok"},
		{"an error: the plugin says it is broken",
			func(context.Context) (bool, error) {
				return false, status.Error(codes.FailedPrecondition, "plugin not healthy")
			},
			http.StatusInternalServerError, "probe failed: FailedPrecondition: plugin not healthy"},
		{"a probe that outlives its bound",
			func(ctx context.Context) (bool, error) { <-ctx.Done(); return false, ctx.Err() },
			http.StatusInternalServerError, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, &httpserve.Server{Probe: tc.probe, ProbeTimeout: 50 * time.Millisecond})
			code, body := get(t, base+httpserve.LivezPath)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET /livez = %d %q, want %d containing %q", code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestReadyzFollowsReadiness(t *testing.T) {
	var r httpserve.Readiness
	base := serve(t, &httpserve.Server{Readiness: &r})
	for _, tc := range []struct {
		name  string
		set   *bool
		want  int
		ready bool
	}{
		{"starting: not ready until the plugin says so", nil, http.StatusServiceUnavailable, false},
		{"serving", ptr(true), http.StatusOK, true},
		{"draining after SIGTERM", ptr(false), http.StatusServiceUnavailable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.set != nil {
				r.SetReady(*tc.set)
			}
			if code, body := get(t, base+httpserve.ReadyzPath); code != tc.want {
				t.Errorf("GET /readyz = %d %q, want %d", code, body, tc.want)
			}
			if r.Ready() != tc.ready {
				t.Errorf("Ready() = %v", r.Ready())
			}
		})
	}
	t.Run("without a Readiness, ready while HTTP answers", func(t *testing.T) {
		if code, _ := get(t, serve(t, &httpserve.Server{})+httpserve.ReadyzPath); code != http.StatusOK {
			t.Errorf("GET /readyz = %d", code)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func TestMetricsAreScraped(t *testing.T) {
	reg := prometheus.NewRegistry()
	calls := prometheus.NewCounter(prometheus.CounterOpts{Name: "csi_plugin_test_total", Help: "test"})
	reg.MustRegister(calls)
	calls.Add(3)
	for _, tc := range []struct {
		name, path, scrape string
		absent             string
	}{
		{"default path", "", "/metrics", ""},
		{"the operator's --metrics-path", "/custom/metrics", "/custom/metrics", "/metrics"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, &httpserve.Server{Gatherer: reg, MetricsPath: tc.path})
			code, body := get(t, base+tc.scrape)
			if code != http.StatusOK {
				t.Fatalf("GET %s = %d %q", tc.scrape, code, body)
			}
			p := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := p.TextToMetricFamilies(strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if got := fams["csi_plugin_test_total"].GetMetric()[0].GetCounter().GetValue(); got != 3 {
				t.Errorf("csi_plugin_test_total = %v, want 3", got)
			}
			if tc.absent != "" {
				if code, _ := get(t, base+tc.absent); code != http.StatusNotFound {
					t.Errorf("GET %s = %d, want 404", tc.absent, code)
				}
			}
		})
	}
	t.Run("no gatherer, no metrics", func(t *testing.T) {
		if code, _ := get(t, serve(t, &httpserve.Server{})+"/metrics"); code != http.StatusNotFound {
			t.Errorf("GET /metrics = %d, want 404", code)
		}
	})
}

func TestBadMetricsPathIsRefused(t *testing.T) {
	for _, path := range []string{"metrics", "/healthz", "/livez", "/readyz", "/{x}", "/a b"} {
		t.Run(path, func(t *testing.T) {
			s := &httpserve.Server{Gatherer: prometheus.NewRegistry(), MetricsPath: path}
			if _, err := s.Handler(); err == nil {
				t.Fatalf("Handler accepted metrics path %q", path)
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.ServeListener(t.Context(), lis); err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("ServeListener: %v, want an error naming %q", err, path)
			}
			if _, err := net.Dial("tcp", lis.Addr().String()); err == nil {
				t.Error("the listener was left open")
			}
		})
	}
}

func TestServeStopsWhenTheContextEnds(t *testing.T) {
	t.Run("an idle server stops and closes its port", func(t *testing.T) {
		// Find a free port, then let Serve listen on it by address.
		probe, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := probe.Addr().String()
		_ = probe.Close()
		ctx, cancel := context.WithCancel(context.Background())
		entered := make(chan struct{}, 1)
		served := make(chan error, 1)
		s := &httpserve.Server{Probe: func(context.Context) (bool, error) {
			entered <- struct{}{}
			return true, nil
		}}
		go func() { served <- s.Serve(ctx, addr) }()
		// Wait until it answers (the listener is open once a probe reaches the handler).
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		for {
			resp, err := client.Get("http://" + addr + httpserve.HealthzPath)
			if err == nil {
				_ = resp.Body.Close()
				break
			}
			select {
			case err := <-served:
				t.Fatalf("Serve returned before answering: %v", err)
			default:
			}
		}
		<-entered
		cancel()
		if err := <-served; err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
		if _, err := net.Dial("tcp", addr); err == nil {
			t.Error("the port still accepts connections after Serve returned")
		}
	})
	t.Run("a request in flight finishes before Serve returns", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		s := &httpserve.Server{ProbeTimeout: time.Hour, ShutdownTimeout: time.Hour,
			Probe: func(context.Context) (bool, error) {
				close(entered)
				<-release
				return true, nil
			}}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- s.ServeListener(ctx, lis) }()
		answered := make(chan int, 1)
		go func() {
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Get("http://" + lis.Addr().String() + httpserve.HealthzPath)
			if err != nil {
				answered <- 0
				return
			}
			_ = resp.Body.Close()
			answered <- resp.StatusCode
		}()
		<-entered
		cancel()
		close(release)
		if code := <-answered; code != http.StatusOK {
			t.Errorf("in-flight probe got %d, want 200", code)
		}
		if err := <-served; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	})
	t.Run("a bad address is an error naming it", func(t *testing.T) {
		err := (&httpserve.Server{}).Serve(t.Context(), "127.0.0.1:not-a-port")
		if err == nil || !strings.Contains(err.Error(), "127.0.0.1:not-a-port") {
			t.Fatalf("Serve: %v", err)
		}
	})
}
