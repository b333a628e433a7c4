// Package httpserve is a plugin's diagnostics endpoint: one HTTP server answering
//
//	/metrics   the Prometheus registry (the path is configurable, as the sidecars' --metrics-path)
//	/healthz   the plugin's Probe, as the livenessprobe sidecar answers it
//	/livez     liveness that does not follow the storage: 500 only when the Probe fails
//	/readyz    readiness: 200 only while the plugin is serving
//
// It is what the CSI sidecars' --http-endpoint flag serves, so a plugin can be probed and scraped
// without a livenessprobe sidecar. /healthz calls the probe with a time bound and answers 200
// "ok", or 500 and a one-line reason when the probe fails or says not ready.
//
// /livez is for a kubelet livenessProbe on a plugin whose storage is on the network. There,
// "not ready" means the storage is unreachable, and a liveness check that fails on it restarts
// the plugin in a loop while the storage is away (the livenessprobe sidecar and /healthz both
// do), which cures nothing, delays recovery by the restart back-off, and on a node plugin
// kills the FUSE daemons of every mounted volume. /livez calls the same probe but answers 200
// whether it says ready or not, and 500 only when it returns an error: the plugin reports
// itself broken, which a restart may mend. /readyz answers
// from a [Readiness] that the plugin flips: not ready while starting, ready once it serves, not
// ready again as soon as SIGTERM arrives, so Kubernetes stops routing to it before the gRPC
// server drains.
package httpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/status"
)

// Paths served besides the metrics path.
const (
	HealthzPath = "/healthz"
	LivezPath   = "/livez"
	ReadyzPath  = "/readyz"
	// DefaultMetricsPath is the sidecars' --metrics-path default.
	DefaultMetricsPath = "/metrics"
)

// Defaults for the zero values of the Server's durations.
const (
	// DefaultProbeTimeout is the livenessprobe sidecar's --probe-timeout default.
	DefaultProbeTimeout = time.Second
	// DefaultShutdownTimeout bounds how long a stop waits for requests in flight (a scrape).
	DefaultShutdownTimeout = 5 * time.Second
)

// maxReason caps the reason /healthz writes: it ends up in kubelet events and probe logs, where
// one line is what fits.
const maxReason = 256

// ProbeFunc reports the plugin's health as the CSI Probe RPC does: an error when it cannot tell
// or is broken, ready=false while it is not (yet) able to serve. It must honour ctx.
type ProbeFunc func(ctx context.Context) (ready bool, err error)

// Readiness holds whether the plugin is ready to serve. The zero value is not ready, which is
// right for a plugin that is still starting. It is safe for concurrent use, and serves /readyz
// itself.
type Readiness struct {
	ready atomic.Bool
}

// SetReady records whether the plugin is serving. Set it true once the gRPC server listens, and
// false before draining on SIGTERM.
func (r *Readiness) SetReady(ready bool) { r.ready.Store(ready) }

// Ready reports the last value given to SetReady.
func (r *Readiness) Ready() bool { return r.ready.Load() }

// ServeHTTP answers 200 "ok" when ready and 503 otherwise, the status Kubernetes and load
// balancers read as "do not route here now".
func (r *Readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if !r.Ready() {
		writeText(w, http.StatusServiceUnavailable, "not ready")
		return
	}
	writeOK(w)
}

// Server serves the diagnostics endpoint. Set its fields before calling Handler or Serve and do
// not change them afterwards; the zero value serves /healthz, /livez and /readyz answering 200.
type Server struct {
	// Gatherer is served at MetricsPath, usually the prometheus.Registry the metrics middleware
	// registered with. Nil serves no metrics.
	Gatherer prometheus.Gatherer
	// MetricsPath is where metrics are served; empty means "/metrics". It must start with "/"
	// and must not be a probe's path.
	MetricsPath string
	// Probe answers /healthz and /livez. Nil answers 200 whenever the process answers HTTP.
	Probe ProbeFunc
	// ProbeTimeout bounds one Probe call; zero means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Readiness answers /readyz. Nil answers 200 whenever the process answers HTTP.
	Readiness *Readiness
	// ShutdownTimeout bounds how long Serve waits for requests in flight once ctx ends before it
	// closes their connections; zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// Handler returns the endpoint's routes. It fails only for an unusable MetricsPath.
func (s *Server) Handler() (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+HealthzPath, s.healthz)
	mux.HandleFunc("GET "+LivezPath, s.livez)
	if s.Readiness != nil {
		mux.Handle("GET "+ReadyzPath, s.Readiness)
	} else {
		mux.HandleFunc("GET "+ReadyzPath, func(w http.ResponseWriter, _ *http.Request) { writeOK(w) })
	}
	if s.Gatherer != nil {
		path := s.MetricsPath
		if path == "" {
			path = DefaultMetricsPath
		}
		if err := checkMetricsPath(path); err != nil {
			return nil, err
		}
		mux.Handle("GET "+path, promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{
			// A collector that fails should not hide every other metric.
			ErrorHandling: promhttp.ContinueOnError,
		}))
	}
	return mux, nil
}

// checkMetricsPath refuses paths the mux would read as a pattern or that shadow a probe.
func checkMetricsPath(path string) error {
	switch {
	case !strings.HasPrefix(path, "/"):
		return fmt.Errorf("metrics path %q: must start with /", path)
	case strings.ContainsAny(path, "{} \t\r\n"):
		return fmt.Errorf("metrics path %q: braces and white space are not allowed", path)
	case path == HealthzPath || path == LivezPath || path == ReadyzPath:
		return fmt.Errorf("metrics path %q: taken by a probe", path)
	}
	return nil
}

// healthz answers as the livenessprobe sidecar does: 200 "ok" when the probe says ready, 500 and
// the reason otherwise.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if s.Probe == nil {
		writeOK(w)
		return
	}
	ready, err := s.probe(r.Context())
	switch {
	case err != nil:
		writeText(w, http.StatusInternalServerError, "probe failed: "+reason(err))
	case !ready:
		writeText(w, http.StatusInternalServerError, "driver responded but is not ready")
	default:
		writeOK(w)
	}
}

// livez answers 200 "ok" whenever the probe returns without an error, ready or not, and 500
// with the reason when it returns one.
func (s *Server) livez(w http.ResponseWriter, r *http.Request) {
	if s.Probe == nil {
		writeOK(w)
		return
	}
	if _, err := s.probe(r.Context()); err != nil {
		writeText(w, http.StatusInternalServerError, "probe failed: "+reason(err))
		return
	}
	writeOK(w)
}

// probe calls Probe bounded by ProbeTimeout.
func (s *Server) probe(ctx context.Context) (bool, error) {
	timeout := s.ProbeTimeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.Probe(ctx)
}

// reason is err as one short line: a gRPC status shows its code and message only (never its
// details), and the text is cut at maxReason bytes on a rune boundary.
func reason(err error) string {
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Code().String() + ": " + st.Message()
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > maxReason {
		cut := maxReason
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return msg
}

func writeOK(w http.ResponseWriter) { writeText(w, http.StatusOK, "ok") }

// writeText answers with a short plain-text body, as livenessprobe does ("ok", or the reason).
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// Serve listens on addr ("host:port", ":8080") and serves until ctx ends, then shuts the server
// down: it stops accepting, waits up to ShutdownTimeout for requests in flight, and closes what
// remains. It returns nil after a stop through ctx and the error otherwise. When Serve returns,
// the listener is closed and no goroutine it started is left, except a handler still inside a
// Probe that ignored the bound: net/http does not wait for handlers of closed connections, which
// is why Probe must honour its context (ProbeTimeout).
func (s *Server) Serve(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return fmt.Errorf("http endpoint: listen on %s: %w", addr, err)
	}
	return s.ServeListener(ctx, lis)
}

// ServeListener is Serve on a listener the caller opened (a test's 127.0.0.1:0, or an inherited
// socket). It closes lis.
func (s *Server) ServeListener(ctx context.Context, lis net.Listener) error {
	h, err := s.Handler()
	if err != nil {
		_ = lis.Close()
		return fmt.Errorf("http endpoint: %w", err)
	}
	srv := &http.Server{
		Handler: h,
		// Bounds keep a slow or idle client from holding a connection forever; the probes and a
		// scrape are small and quick.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	timeout := s.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	// The shutdown runs in its own goroutine when ctx ends (srv.Serve returns as soon as the
	// listener closes, before in-flight requests finish); waiting for it below is what leaves
	// nothing running after Serve returns.
	shutdown := make(chan error, 1)
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if err != nil {
			// Requests outlived the bound: drop their connections.
			_ = srv.Close()
		}
		shutdown <- err
	})
	serveErr := srv.Serve(lis)
	if stop() {
		// ctx has not ended: the listener failed on its own.
		_ = srv.Close()
		return fmt.Errorf("http endpoint: serve on %s: %w", lis.Addr(), serveErr)
	}
	if err := <-shutdown; err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("http endpoint: shut down: %w", err)
	}
	return nil
}
