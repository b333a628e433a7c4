package plugin

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/endpoint"
	"github.com/csikit/csikit/driver/volumegroup"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/validation"
)

// Config assembles a plugin. Only Name, VendorVersion and at least one backend are required.
//
// Its fields come in six groups, each headed by a comment: identity, backends, capabilities,
// serving, serving by Run, and observing.
type Config struct {
	// Identity.

	// Name is the plugin name in domain-name form, at most 63 characters, e.g.
	// "hostpath.csikit.dev".
	Name string
	// VendorVersion is the plugin's version; required, opaque to the CO.
	VendorVersion string
	// Manifest is optional extra identity data returned by GetPluginInfo.
	Manifest map[string]string

	// Backends.

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

	// Capabilities. Those of RPCs are derived from the interfaces the backends implement.

	// Features are the promises no interface shows: clone, read-only publish, topology,
	// expansion mode and a few more. They are stated here and nowhere else.
	Features driver.Features
	// Overrides narrow the derived RPC capabilities and declare the services of a split plugin.
	// New checks them.
	Overrides CapabilityOverrides

	// Serving. Every server uses these.

	// Locker serialises calls on one resource. Nil means an in-memory table that answers a
	// conflicting call ABORTED at once. To make such a call wait instead, up to d but never past
	// its deadline, set idempotency.NewManager(idempotency.WithWait(d)).
	Locker idempotency.Locker
	// TokenKey signs pagination tokens. Empty means a random key per process; tokens then die
	// with the process, which the spec allows. Replicas that share listings set the same key.
	TokenKey []byte
	// BackendTimeout bounds how long a unary call waits for its backend (every RPC but Probe,
	// which ProbeTimeout bounds, and the streaming SnapshotMetadata calls). When it passes, the
	// backend's context is cancelled and the CO gets UNAVAILABLE at once. That is a fault of the
	// backend, never INTERNAL, so the CO retries; it gets DEADLINE_EXCEEDED instead when its own
	// deadline passed first. The call's locks stay held until the backend method returns. So a
	// retry meanwhile is ABORTED rather than a second operation racing the first. A method that
	// returns late is logged with its code, and a stop of Serve or Run waits for it within
	// ShutdownTimeout. The bound covers the wait for a lock (idempotency.WithWait on Locker), which
	// should be shorter. Zero means
	// no bound but the CO's deadline: a CO that sets none (the COSI sidecar's reconcile context
	// has none) then waits as long as the backend hangs.
	BackendTimeout time.Duration
	// ProbeTimeout bounds how long the Probe RPC and the readiness watch (/readyz) wait for the
	// backends' Probe. A backend that has not answered by then is not ready (ready=false, not
	// an error). At most one Probe per backend runs at a time, however often the plugin is
	// probed. /healthz waits at most httpserve.DefaultProbeTimeout: the kubelet's and the
	// livenessprobe sidecar's own 1 s bounds would cut it anyway. Zero means
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// CheckResponses validates every response against every rule of the spec (required fields,
	// names, topology keys, ...) and answers INTERNAL for one that breaks it. It is meant for
	// tests and conformance runs. The size limits (a 128-byte ID, a 4 KiB map) are checked on
	// every response whatever this says, so an oversized value never reaches the CO.
	CheckResponses bool
	// UnaryInterceptors run inside the library's chain, just before the handler (after
	// validation and locking). So they only see valid requests on resources the call holds.
	UnaryInterceptors []grpc.UnaryServerInterceptor
	// StreamInterceptors are the streaming counterpart of UnaryInterceptors (SnapshotMetadata).
	StreamInterceptors []grpc.StreamServerInterceptor
	// ServerOptions are added to the grpc.Server that NewServer, Serve and Run create.
	ServerOptions []grpc.ServerOption
	// ShutdownTimeout bounds how long in-flight calls may run after Serve or Run is asked to
	// stop, before the server stops hard. Zero means 30 seconds.
	ShutdownTimeout time.Duration

	// Serving by Run. Only Run reads these: Serve takes a listener, Register a server.

	// Endpoint is where Run listens: unix:///abs/path.sock (COSI: a name ending in ".sock"), or
	// tcp://host:port with AllowTCP. Empty means $CSI_ENDPOINT. For a plugin whose only backend
	// is COSI it means $COSI_ENDPOINT. For one with COSI and a CSI or volume-group backend, it
	// means whichever of $CSI_ENDPOINT and $COSI_ENDPOINT is set; Run refuses two different
	// values. A binary that takes its endpoint from a flag puts it here, as
	// cmdline.Settings.Apply does.
	Endpoint string
	// AllowTCP lets Endpoint be tcp://host:port: a debugging extension, never a default.
	AllowTCP bool
	// Socket sets the unix socket's mode and owner (default mode 0660).
	Socket endpoint.ListenOptions
	// HTTPEndpoint, when set, is a TCP address (e.g. ":8080") where Run serves, as the sidecars'
	// --http-endpoint does:
	//   - /healthz: the backends' Probe, as the livenessprobe sidecar answers;
	//   - /livez: 200 unless the backends' Probe reports them broken. It is the liveness check
	//     for storage on the network, which an outage must not turn into restarts;
	//   - /readyz: ready while serving and the backends' Probe passes; not while starting, while
	//     the storage is unreachable, or while draining;
	//   - MetricsPath, when Metrics is also a prometheus.Gatherer such as *prometheus.Registry.
	// Empty serves no HTTP.
	HTTPEndpoint string
	// MetricsPath is where Run serves metrics; empty means /metrics.
	MetricsPath string

	// Observing.

	// Logger receives one line per call (info) and redacted payloads (debug). Nil logs nothing.
	Logger *zap.Logger
	// RedactSecretLookingKeys also hides, in the CSI and volume-group calls, parameter and
	// context values whose keys look like secrets (password, token, ...; see
	// secrets.LooksSecret). Users do put secrets in StorageClass parameters. The fields those
	// protos annotate as secret are hidden either way.
	//
	// COSI calls always hide them, and nothing turns that off. COSI's protos annotate no field
	// as secret, so for a BucketClass parameter such as "password" the key is the only sign
	// there is. The cost is a harmless value whose key merely looks secret ("tokenBucketSize")
	// shown as hidden in a debug line. The key itself is always logged.
	RedactSecretLookingKeys bool
	// Metrics, when set, records every call into this registerer. CSI calls go to
	// csi_plugin_operations_seconds, the histogram csi-lib-utils defines, so the Kubernetes CSI
	// dashboards work unchanged; COSI calls go to cosi_plugin_operations_seconds. It also
	// records in-flight gauges, lock conflicts by resource kind, and the process and Go
	// collectors. Nil records nothing and adds nothing to a call.
	Metrics prometheus.Registerer
	// TracerProvider turns on OpenTelemetry tracing: a span per call, with the W3C trace context
	// taken from the CO's metadata. The request's resource IDs become attributes (never a
	// secret), and the trace ID is in every log line of the call. Backends start child spans
	// from the call's context. Nil means off. The plugin links only the OpenTelemetry API; the
	// SDK and the exporters come with the provider. A driver that wants the standard OTEL_*
	// variables asks for them with cmdline.Settings.Tracing, or builds the provider with
	// otelenv.NewProvider. One that does neither links no exporter.
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

// check refuses, at start-up, a configuration the plugin could not serve or a CO would refuse
// later: New calls it before anything else reads cfg. The capabilities are checked apart, by
// deriveCapabilities, since they depend on which interfaces the backends implement.
func (cfg *Config) check() error {
	if err := validation.PluginName(cfg.Name); err != nil {
		return fmt.Errorf("Config.Name %q: %w", cfg.Name, err)
	}
	if cfg.VendorVersion == "" {
		return errors.New("plugin vendor version is required")
	}
	if cfg.Controller == nil && cfg.Node == nil && cfg.GroupController == nil && cfg.SnapshotMetadata == nil && cfg.VolumeGroups == nil && cfg.COSI == nil {
		return errors.New("no backend configured: set at least one of Controller, Node, GroupController, SnapshotMetadata, VolumeGroups, COSI")
	}
	if cfg.VolumeGroups != nil {
		if cfg.VolumeGroups.Controller == nil {
			return errors.New("Config.VolumeGroups.Controller: a volume-group configuration needs a volume-group backend")
		}
		if _, taken := cfg.Manifest[ManifestVolumeGroupRPCs]; taken {
			return fmt.Errorf("Config.Manifest: the key %q is the library's (the volume-group RPCs served)", ManifestVolumeGroupRPCs)
		}
	}
	if err := checkCOSIConfig(cfg); err != nil {
		return err
	}
	return checkNearMisses(cfg)
}

// checkCOSIConfig refuses, at start-up, a bucket configuration the sidecars would refuse later.
func checkCOSIConfig(cfg *Config) error {
	c := cfg.COSI
	if c == nil {
		return nil
	}
	if c.Provisioner == nil {
		return errors.New("Config.COSI.Provisioner: a COSI configuration needs a bucket backend")
	}
	if err := validation.COSIDriverName(cfg.Name); err != nil {
		return fmt.Errorf("Config.Name %q: %w", cfg.Name, err)
	}
	if len(c.Protocols) == 0 {
		return errors.New("Config.COSI.Protocols: a bucket backend must name at least one object protocol (the COSI sidecar refuses a driver with none)")
	}
	for i, p := range c.Protocols {
		if p < bucket.S3 || p > bucket.GCS {
			return fmt.Errorf("Config.COSI.Protocols[%d]: unknown protocol %v", i, p)
		}
		if slices.Contains(c.Protocols[:i], p) {
			return fmt.Errorf("Config.COSI.Protocols[%d]: %v is listed twice", i, p)
		}
	}
	for i, v := range c.Versions {
		if v != bucket.V1Alpha1 && v != bucket.V1Alpha2 {
			return fmt.Errorf("Config.COSI.Versions[%d]: unknown COSI version %q (known: %s, %s)", i, v, bucket.V1Alpha1, bucket.V1Alpha2)
		}
	}
	return nil
}
