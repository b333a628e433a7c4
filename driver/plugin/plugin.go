package plugin

import (
	"context"
	"errors"
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
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/endpoint"
	"github.com/csikit/csikit/driver/httpserve"
	"github.com/csikit/csikit/driver/volumegroup"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/internal/pagetoken"
	"github.com/csikit/csikit/middleware/metrics"
	"github.com/csikit/csikit/middleware/validation"
	"github.com/csikit/csikit/secrets"
)

// Config assembles a plugin: its identity, its backends and a few operator settings. Only Name,
// VendorVersion and at least one backend are required.
type Config struct {
	// Name is the plugin name in domain-name form, at most 63 characters, e.g.
	// "hostpath.csikit.dev".
	Name string
	// VendorVersion is the plugin's version; required, opaque to the CO.
	VendorVersion string
	// Manifest is optional extra identity data returned by GetPluginInfo.
	Manifest map[string]string

	// Controller serves the CSI Controller service; nil in a node-only process. Optional
	// controller interfaces (ControllerPublisher, Snapshotter, ...) are found on the same value.
	Controller driver.Controller
	// Node serves the CSI Node service; nil in a controller-only process. Optional node
	// interfaces (NodeStager, NodeExpander, ...) are found on the same value.
	Node driver.Node
	// GroupController serves group snapshots (the GroupController service); nil when the plugin
	// has none. It is often the same value as Controller.
	GroupController driver.GroupController
	// SnapshotMetadata serves changed-block tracking (the SnapshotMetadata service); nil when
	// the plugin has none.
	SnapshotMetadata driver.SnapshotMetadata
	// VolumeGroups serves volume groups (the volumegroup.Controller service of
	// github.com/IBM/csi-volume-group) on the same socket; nil when the plugin has none. The
	// group RPCs it serves are listed in GetPluginInfo's manifest under ManifestVolumeGroupRPCs.
	VolumeGroups *VolumeGroupConfig
	// COSI serves object buckets over COSI (v1alpha1 and v1alpha2 on the same socket); nil when
	// the plugin has none. A plugin with COSI and no CSI backend serves no CSI service, and Run
	// listens on $COSI_ENDPOINT when Endpoint is empty.
	COSI *COSIConfig
	// Prober is an extra readiness check beside any Probe method of the backends.
	Prober driver.Prober

	// Features are the capabilities that cannot be derived from interfaces.
	Features driver.Features
	// Overrides replace the derived capability lists (checked at start-up).
	Overrides CapabilityOverrides

	// Logger receives one line per call (info) and redacted payloads (debug). Nil logs nothing.
	Logger *zap.Logger
	// RedactSecretLookingKeys also hides, in the CSI and volume-group calls, parameter and context
	// values whose keys look like secrets (password, token, ...; see secrets.LooksSecret), because
	// users do put secrets in StorageClass parameters. The fields those protos annotate as secret
	// are hidden either way.
	//
	// COSI calls always hide them, whatever this says, and nothing turns that off: COSI's protos
	// annotate no field as secret, so for a BucketClass or BucketAccessClass parameter such as
	// "password" the key is the only sign there is. The cost is a harmless value whose key merely
	// looks secret ("tokenBucketSize") shown as hidden in a debug line; the key itself is always
	// logged.
	RedactSecretLookingKeys bool
	// Locker serialises calls on one resource. Nil means an in-memory lock table.
	Locker idempotency.Locker
	// LockWait makes a conflicting call wait up to this long (never past its deadline) instead of
	// failing at once with ABORTED. Used only when Locker is nil.
	LockWait time.Duration
	// TokenKey signs pagination tokens. Empty means a random key per process (tokens then die with
	// the process, which the spec allows); set the same key on replicas that share listings.
	TokenKey []byte
	// CheckResponses validates every response against every rule of the spec (required fields,
	// names, topology keys, ...) and answers INTERNAL for one that breaks it. Meant for tests and
	// conformance runs. The size limits (a 128-byte ID, a 4 KiB map) are checked on every
	// response whatever this says, so an oversized value never reaches the CO
	// (validation.ResponseSizes).
	CheckResponses bool

	// Endpoint is where Run listens: unix:///abs/path.sock (COSI: a name ending in ".sock"), or
	// tcp://host:port with AllowTCP. Empty means $CSI_ENDPOINT; for a plugin whose only backend is
	// COSI it means $COSI_ENDPOINT, and for one with COSI and a CSI or volume-group backend,
	// whichever of $CSI_ENDPOINT and $COSI_ENDPOINT is set (Run refuses two different values). A
	// binary that takes its endpoint from a flag must put it here: cmdline.Settings.Apply does.
	Endpoint string
	// AllowTCP lets Endpoint be tcp://host:port (a debugging extension, never a default).
	AllowTCP bool
	// Socket sets the unix socket's mode and owner (default mode 0660).
	Socket endpoint.ListenOptions
	// ShutdownTimeout bounds how long in-flight calls may run after a stop is requested before the
	// server stops hard; zero means 30 seconds.
	ShutdownTimeout time.Duration
	// BackendTimeout bounds how long a unary call waits for its backend (every RPC but Probe,
	// which ProbeTimeout bounds, and the streaming SnapshotMetadata calls). When it passes, the
	// backend's context is cancelled and the CO gets UNAVAILABLE at once, whether or not the
	// backend honours the cancellation: a fault of the backend, never INTERNAL, so the CO retries
	// (DEADLINE_EXCEEDED instead when the CO's own deadline passed first). The call's locks stay
	// held until the backend method returns, so a retry meanwhile is ABORTED rather than a
	// second operation racing the first; a method that returns late is logged with its code, and
	// a stop of Serve or Run waits for it within ShutdownTimeout.
	// The bound covers the wait for a lock (LockWait), which should be shorter. Zero means no
	// bound but the CO's deadline: a CO that sets none (the COSI sidecar's reconcile context has
	// none) then waits as long as the backend hangs.
	BackendTimeout time.Duration
	// ProbeTimeout bounds how long the Probe RPC and the readiness watch (/readyz) wait for the
	// backends' Probe (/healthz waits at most httpserve.DefaultProbeTimeout, as the kubelet's
	// and the livenessprobe sidecar's own 1 s bounds would cut it anyway); a backend that has
	// not answered by then is not ready (ready=false, not an error), and at most one Probe per
	// backend runs at a time however often the plugin is probed. Zero means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration

	// UnaryInterceptors run inside the library's chain, just before the handler (after
	// validation and locking), so they only see valid requests on resources the call holds.
	UnaryInterceptors []grpc.UnaryServerInterceptor
	// StreamInterceptors are the streaming counterpart of UnaryInterceptors (SnapshotMetadata).
	StreamInterceptors []grpc.StreamServerInterceptor
	// ServerOptions are added to the grpc.Server that Serve and Run create.
	ServerOptions []grpc.ServerOption

	// Metrics, when set, records every call into this registerer as csi_plugin_operations_seconds
	// (the histogram csi-lib-utils defines, so the Kubernetes CSI dashboards work unchanged),
	// cosi_plugin_operations_seconds for COSI calls, in-flight gauges, lock conflicts by resource
	// kind, and the process and Go collectors. Nil records nothing and adds nothing to a call.
	Metrics prometheus.Registerer
	// HTTPEndpoint, when set, makes Run serve /healthz (the backends' Probe, as the
	// livenessprobe sidecar answers), /livez (200 unless the backends' Probe reports them
	// broken: the liveness check for storage on the network, which an outage must not turn
	// into restarts), /readyz (ready while serving and the backends' Probe passes; not while
	// starting, while the storage is unreachable, or while draining) and, when Metrics is also a
	// prometheus.Gatherer such as *prometheus.Registry, MetricsPath on this TCP address (e.g.
	// ":8080"), as the sidecars' --http-endpoint does. Empty serves no HTTP.
	HTTPEndpoint string
	// MetricsPath is where Run serves metrics; empty means /metrics.
	MetricsPath string
	// TracerProvider turns on OpenTelemetry tracing: a span per call (W3C trace context taken
	// from the CO's metadata), with the resource IDs of the request as attributes (never a
	// secret), and the trace ID in every log line of the call. Backends start child spans from
	// the call's context. Nil means off. The plugin links only the OpenTelemetry API: the SDK and
	// the exporters come with the provider, so a driver that wants the standard OTEL_* variables
	// (OTEL_TRACES_EXPORTER=otlp or console, ...) asks for them with cmdline.Settings.Tracing or
	// builds the provider with otelenv.NewProvider, and one that does neither links no exporter.
	TracerProvider trace.TracerProvider
}

// VolumeGroupConfig is a volume-group backend. It exists only in a plugin that serves volume
// groups, which keeps a CSI-only Config free of them, and is where settings of that service go.
type VolumeGroupConfig struct {
	// Controller is the volume-group backend; required. Its optional interfaces
	// (volumegroup.Getter, volumegroup.Lister or volumegroup.PageLister) are found on the same
	// value, which is often the CSI Controller too.
	Controller volumegroup.Controller
}

// COSIConfig is a bucket backend and what the COSI sidecar asks of a driver beside it. It exists
// only in a plugin that serves buckets, which keeps a CSI-only Config free of COSI settings.
type COSIConfig struct {
	// Provisioner is the bucket backend; required. Its optional interfaces (bucket.Getter,
	// bucket.AccessGranter) are found on the same value.
	Provisioner bucket.Provisioner
	// Protocols are the object protocols the backend serves, reported by DriverGetInfo;
	// required, at least one. A v1alpha1 grant, which names no protocol, is for the first one.
	Protocols []bucket.Protocol
	// Versions are the COSI wire versions served; nil means every version this library knows
	// (v1alpha1 and v1alpha2).
	Versions []bucket.Version
	// MultiBucketAccess says one account can be granted several buckets. Without it a grant that
	// names more than one bucket is answered OUT_OF_RANGE before the backend is called, which is
	// the code COSI reserves for exactly that.
	MultiBucketAccess bool
}

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
	if err := registerRequiredFields(); err != nil {
		return nil, err
	}
	if err := validation.PluginName(cfg.Name); err != nil {
		return nil, fmt.Errorf("Config.Name %q: %w", cfg.Name, err)
	}
	if cfg.VendorVersion == "" {
		return nil, errors.New("plugin vendor version is required")
	}
	if cfg.Controller == nil && cfg.Node == nil && cfg.GroupController == nil && cfg.SnapshotMetadata == nil && cfg.VolumeGroups == nil && cfg.COSI == nil {
		return nil, errors.New("no backend configured: set at least one of Controller, Node, GroupController, SnapshotMetadata, VolumeGroups, COSI")
	}
	if cfg.VolumeGroups != nil && cfg.VolumeGroups.Controller == nil {
		return nil, errors.New("Config.VolumeGroups.Controller: a volume-group configuration needs a volume-group backend")
	}
	if err := checkCOSIConfig(&cfg); err != nil {
		return nil, err
	}
	if err := checkNearMisses(&cfg); err != nil {
		return nil, err
	}
	d := &Plugin{cfg: cfg, b: discover(&cfg), log: cfg.Logger,
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
		if _, taken := cfg.Manifest[ManifestVolumeGroupRPCs]; taken {
			return nil, fmt.Errorf("Config.Manifest: the key %q is the library's (the volume-group RPCs served)", ManifestVolumeGroupRPCs)
		}
		d.pluginInfo.Manifest = maps.Clone(cfg.Manifest)
		if d.pluginInfo.Manifest == nil {
			d.pluginInfo.Manifest = map[string]string{}
		}
		d.pluginInfo.Manifest[ManifestVolumeGroupRPCs] = d.servedVolumeGroupRPCs()
	}
	if err := validation.Response(d.pluginInfo); err != nil {
		return nil, fmt.Errorf("plugin identity: %w", err)
	}
	d.pluginCaps = caps.pluginResponse()
	d.controllerCaps = caps.controllerResponse()
	d.nodeCaps = caps.nodeResponse()
	d.groupCaps = caps.groupResponse()
	d.tokens = pagetoken.New(cfg.TokenKey)
	d.locker = cfg.Locker
	if d.locker == nil {
		d.locker = idempotency.NewManager(idempotency.WithWait(cfg.LockWait))
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
