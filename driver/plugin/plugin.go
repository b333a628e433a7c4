package plugin

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver/endpoint"
	"github.com/csikit/csikit/driver/httpserve"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/internal/pagetoken"
	"github.com/csikit/csikit/middleware/metrics"
	"github.com/csikit/csikit/middleware/validation"
	"github.com/csikit/csikit/secrets"
)

// Plugin is an assembled plugin, ready to serve: Run, Serve, NewServer or Register it.
type Plugin struct {
	cfg    Config
	b      backendSet
	caps   capSet
	tokens *pagetoken.Codec
	log    *zap.Logger
	locker idempotency.Locker
	// redactor hides secrets in the logs of CSI and volume-group calls and scrubs them from their
	// error messages and panic reports, with the same rules everywhere (including the
	// secret-looking-key heuristic when Config.RedactSecretLookingKeys is on).
	redactor *secrets.Redactor
	// cosiRedactor does the same for every COSI call, with the heuristic always on: COSI marks no
	// field secret, so a parameter's key is all there is to go by (see redactorFor).
	cosiRedactor *secrets.Redactor
	// rules are what validation checks every request and response against (rules.go).
	rules *validation.Rules

	metrics *metrics.Metrics
	// backendCalls counts the backend calls running under Config.BackendTimeout, which may
	// outlive their RPC.
	backendCalls callCount
	// probers are the backends' Probe methods, each run at most once at a time.
	probers []*sharedProber
	// ready is the readiness /readyz serves: the last probe's answer while serving.
	ready    httpserve.Readiness
	readyMu  sync.Mutex
	draining bool // set by drain; readiness then stays false

	pluginInfo     *csi.GetPluginInfoResponse
	pluginCaps     *csi.GetPluginCapabilitiesResponse
	controllerCaps *csi.ControllerGetCapabilitiesResponse
	nodeCaps       *csi.NodeGetCapabilitiesResponse
	groupCaps      *csi.GroupControllerGetCapabilitiesResponse
}

// New checks the configuration and returns a plugin. It refuses an invalid plugin name or
// inconsistent capabilities, so a misconfigured plugin fails at start-up, not in production.
func New(cfg Config) (*Plugin, error) {
	rules, err := newRules()
	if err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	d := &Plugin{cfg: cfg, b: discover(&cfg), log: cfg.Logger, rules: rules,
		redactor:     secrets.NewRedactor(secrets.WithHeuristic(cfg.RedactSecretLookingKeys)),
		cosiRedactor: secrets.NewRedactor(secrets.WithHeuristic(true))}
	if d.log == nil {
		d.log = zap.NewNop()
	}
	for _, p := range d.b.probers {
		d.probers = append(d.probers, &sharedProber{p: p})
	}
	caps, err := deriveCapabilities(&d.b, cfg.Features, cfg.Overrides)
	if err != nil {
		return nil, err
	}
	d.caps = caps
	d.pluginInfo = &csi.GetPluginInfoResponse{Name: cfg.Name, VendorVersion: cfg.VendorVersion, Manifest: cfg.Manifest}
	if d.b.volumeGroups != nil {
		d.pluginInfo.Manifest = maps.Clone(cfg.Manifest)
		if d.pluginInfo.Manifest == nil {
			d.pluginInfo.Manifest = map[string]string{}
		}
		d.pluginInfo.Manifest[ManifestVolumeGroupRPCs] = d.servedVolumeGroupRPCs()
	}
	if err := d.rules.Response(d.pluginInfo); err != nil {
		return nil, fmt.Errorf("plugin identity: %w", err)
	}
	d.pluginCaps = caps.pluginResponse()
	d.controllerCaps = caps.controllerResponse()
	d.nodeCaps = caps.nodeResponse()
	d.groupCaps = caps.groupResponse()
	d.tokens = pagetoken.New(cfg.TokenKey)
	d.locker = cfg.Locker
	if d.locker == nil {
		d.locker = idempotency.NewManager()
	}
	if cfg.Metrics != nil {
		if d.metrics, err = metrics.New(cfg.Metrics, cfg.Name, metrics.WithProcessAndGoCollectors()); err != nil {
			return nil, fmt.Errorf("Config.Metrics: %w", err)
		}
		d.locker = d.metrics.Locker(d.locker)
	}
	return d, nil
}

// NewServer returns a gRPC server with the plugin's services registered (see Register for the
// interceptor chain every method runs). Config.ServerOptions and opts are added to it.
func (d *Plugin) NewServer(opts ...grpc.ServerOption) *grpc.Server {
	all := []grpc.ServerOption{
		ServerCodec(),
		// Reused worker goroutines keep the stack a call through the interceptor chain needs;
		// a fresh goroutine per call (grpc-go's default) grows a new stack every time. A busy
		// pool still spawns a goroutine, so a slow call never blocks the others.
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
	}
	all = append(all, d.cfg.ServerOptions...)
	all = append(all, opts...)
	s := grpc.NewServer(all...)
	d.Register(s)
	return s
}

// Serve serves on lis until ctx is done, then stops gracefully: it stops accepting, lets in-flight
// calls finish for up to Config.ShutdownTimeout, then stops hard. It returns nil after a stop
// requested through ctx, and the server's error otherwise. Closing lis removes a unix socket.
func (d *Plugin) Serve(ctx context.Context, lis net.Listener) error {
	stopHTTP, err := d.serveHTTP(ctx)
	if err != nil {
		return err
	}
	defer stopHTTP()
	srv := d.NewServer()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	d.drain(false)
	readyCtx, stopReady := context.WithCancel(ctx)
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		d.watchReadiness(readyCtx)
	}()
	// Not ready from the moment a stop is asked for: the CO stops sending new calls while the
	// ones in flight drain, and no probe answered meanwhile (a Probe call, /healthz) flips
	// readiness back.
	notReady := func() {
		stopReady()
		<-readyDone
		d.drain(true)
	}
	defer notReady()
	d.log.Info("serving", zap.String("plugin", d.cfg.Name), zap.String("version", d.cfg.VendorVersion),
		zap.String("address", lis.Addr().String()))
	select {
	case err := <-served:
		// The listener failed: close the connections and calls still open, so nothing keeps
		// running behind a Serve that has returned.
		srv.Stop()
		if err != nil {
			return fmt.Errorf("serve %s: %w", lis.Addr(), err)
		}
		return nil
	case <-ctx.Done():
	}
	timeout := d.cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	notReady()
	d.log.Info("stopping: waiting for in-flight calls", zap.Duration("timeout", timeout))
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), timeout)
	defer cancelDrain()
	select {
	case <-stopped:
	case <-drainCtx.Done():
		d.log.Warn("stopping: in-flight calls did not finish in time, stopping hard")
		srv.Stop()
		<-stopped
	}
	<-served
	// Calls answered at Config.BackendTimeout may still be in their backend: give them what is
	// left of the same bound, so that a stop does not cut an operation the CO will retry.
	if n := d.backendCalls.running(); n > 0 {
		d.log.Info("stopping: waiting for backend calls that outlived Config.BackendTimeout", zap.Int("calls", n))
		if n := d.backendCalls.wait(drainCtx); n > 0 {
			d.log.Warn("stopping: backend calls still running", zap.Int("calls", n))
		}
	}
	d.log.Info("stopped")
	return nil
}

// Run listens on Config.Endpoint (when empty, $CSI_ENDPOINT or $COSI_ENDPOINT, as Config.Endpoint
// says) and serves until ctx is done or the process gets SIGTERM or SIGINT, then shuts down
// gracefully and removes the socket.
func (d *Plugin) Run(ctx context.Context) error {
	ep, err := d.endpoint()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	lis, err := endpoint.Listen(ctx, ep, d.cfg.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", ep, err)
	}
	return d.Serve(ctx, lis)
}

// How often the readiness watch asks the backends: soon and then less often while they are not
// ready, steadily once they are, so that readiness follows the storage both ways.
// A few seconds keeps /readyz within a Kubernetes readiness period of the storage; a Probe is
// meant to be cheap.
const (
	probeFirstGap = time.Second
	probeMaxGap   = 3 * time.Second
	probeReadyGap = 3 * time.Second
)

// watchReadiness keeps the plugin's readiness (/readyz) in step with the backends' Probe until
// ctx ends: ready once they pass (at once when no backend has one), not ready while they report
// a transient fault or do not answer, ready again when they recover. A backend that cannot reach
// its storage thus leaves the plugin serving and not ready, which Kubernetes shows and waits out,
// instead of a process that exits and restarts in a crash loop. probe bounds every ask, so a
// hung backend never holds the watch (nor the shutdown that waits for it).
func (d *Plugin) watchReadiness(ctx context.Context) {
	gap, was := probeFirstGap, false
	for i := 0; ; i++ {
		ready, err := d.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			d.log.Warn("not ready: the backend's probe failed; retrying", zap.Duration("in", gap), zap.Error(err))
		case !ready && (was || i == 0):
			d.log.Warn("not ready: the backend is not ready or not reachable; probing again", zap.Duration("in", gap))
		case ready && !was:
			d.log.Info("ready: the backends' probe passed")
		}
		was = ready && err == nil
		wait := gap
		if was {
			wait, gap = probeReadyGap, probeFirstGap
		} else {
			gap = min(2*gap, probeMaxGap)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// setReady records a probe's answer as the plugin's readiness, unless the plugin is draining:
// then it stays not ready whatever a late probe says.
func (d *Plugin) setReady(ready bool) {
	d.readyMu.Lock()
	defer d.readyMu.Unlock()
	if !d.draining {
		d.ready.SetReady(ready)
	}
}

// drain makes the plugin not ready for good (until Serve starts again).
func (d *Plugin) drain(draining bool) {
	d.readyMu.Lock()
	defer d.readyMu.Unlock()
	d.draining = draining
	d.ready.SetReady(false)
}

// endpoint is where Run listens: Config.Endpoint, else $CSI_ENDPOINT, else (for a plugin that
// serves COSI) $COSI_ENDPOINT. An endpoint that serves COSI follows COSI's rules: a unix socket
// whose path ends in ".sock", never TCP, since the COSI sidecar connects to nothing else.
//
// Its errors say where Run looked, and nothing about flags: Run never sees them, and the usual
// cause of a missing endpoint is a binary that parsed one and did not put it in Config.Endpoint.
func (d *Plugin) endpoint() (endpoint.Endpoint, error) {
	var vars []string // the variables Run reads, in order, when Config.Endpoint is empty
	if d.b.servesCSI() {
		vars = append(vars, "CSI_ENDPOINT")
	}
	if d.b.buckets != nil {
		vars = append(vars, "COSI_ENDPOINT")
	}
	raw, from := d.cfg.Endpoint, "Config.Endpoint"
	if raw == "" && len(vars) == 2 {
		// One socket serves both: two variables naming two sockets leave no right choice.
		if a, b := os.Getenv(vars[0]), os.Getenv(vars[1]); a != "" && b != "" && a != b {
			return endpoint.Endpoint{}, fmt.Errorf("no endpoint to listen on: Config.Endpoint is empty, and $%s (%s) and $%s (%s) name different sockets "+
				"while the plugin serves CSI and COSI on one socket: unset one, or set Config.Endpoint", vars[0], a, vars[1], b)
		}
	}
	for _, v := range vars {
		if raw != "" {
			break
		}
		raw, from = os.Getenv(v), v+" (read because Config.Endpoint is empty)"
	}
	if raw == "" {
		unset := "$" + vars[0] + " is not set; set either"
		if len(vars) == 2 {
			unset = "neither $" + vars[0] + " nor $" + vars[1] + " is set; set one of them"
		}
		example := "unix:///csi/csi.sock"
		if !d.b.servesCSI() {
			example = "unix:///var/lib/cosi/cosi.sock"
		}
		return endpoint.Endpoint{}, fmt.Errorf("no endpoint to listen on: Config.Endpoint is empty and %s (e.g. %s); "+
			"a binary that takes the endpoint on its command line must put it in Config.Endpoint (cmdline.Settings.Apply does)",
			unset, example)
	}
	opts := endpoint.ParseOptions{AllowTCP: d.cfg.AllowTCP}
	if d.b.buckets != nil {
		opts = endpoint.ParseOptions{RequireSuffix: ".sock"}
	}
	ep, err := endpoint.Parse(raw, opts)
	if err != nil {
		return endpoint.Endpoint{}, fmt.Errorf("%s: %w", from, err)
	}
	return ep, nil
}

// serveHTTP starts the diagnostics endpoint when Config.HTTPEndpoint is set. It listens before
// returning, so a taken port fails Serve at once; the returned stop ends it and waits for it. It
// keeps answering while gRPC drains, so /readyz reports the drain.
func (d *Plugin) serveHTTP(ctx context.Context) (stop func(), err error) {
	if d.cfg.HTTPEndpoint == "" {
		return func() {}, nil
	}
	hs := &httpserve.Server{MetricsPath: d.cfg.MetricsPath, Probe: d.probe, Readiness: &d.ready}
	if g, ok := d.cfg.Metrics.(prometheus.Gatherer); ok {
		hs.Gatherer = g
	}
	if _, err := hs.Handler(); err != nil {
		return nil, fmt.Errorf("Config.MetricsPath: %w", err)
	}
	lis, err := net.Listen("tcp", d.cfg.HTTPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("http endpoint %s: %w", d.cfg.HTTPEndpoint, err)
	}
	httpCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- hs.ServeListener(httpCtx, lis) }()
	d.log.Info("serving diagnostics", zap.String("address", lis.Addr().String()))
	return func() {
		cancel()
		if err := <-done; err != nil {
			d.log.Warn("diagnostics endpoint stopped with an error", zap.Error(err))
		}
	}, nil
}
