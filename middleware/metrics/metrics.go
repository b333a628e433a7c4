package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Names and labels. The CSI ones equal csi-lib-utils v0.25.0's (TestMatchesCSILibUtils checks
// them against its source), which is what lets existing dashboards read our metrics.
const (
	// SubsystemCSI prefixes the CSI family; csi-lib-utils calls it SubsystemPlugin.
	SubsystemCSI = "csi_plugin"
	// SubsystemCOSI prefixes the COSI family, a name of our own with the CSI family's shape.
	SubsystemCOSI = "cosi_plugin"

	// OperationsName is the latency histogram's name within its subsystem.
	OperationsName = "operations_seconds"
	// OperationsHelp is the histogram's help text, csi-lib-utils' word for word.
	OperationsHelp = "Container Storage Interface operation duration with gRPC error code status total"
	// InFlightName is the gauge of calls running now.
	InFlightName = "operations_in_flight"
	// LockConflictsName is the counter of calls turned away by a held resource lock.
	LockConflictsName = "lock_conflicts_total"

	// LabelDriverName carries the plugin name given to [New].
	LabelDriverName = "driver_name"
	// LabelMethodName carries the full gRPC method, e.g. "/csi.v1.Node/NodeStageVolume".
	LabelMethodName = "method_name"
	// LabelStatusCode carries the answer's gRPC code name, e.g. "OK", "Aborted".
	LabelStatusCode = "grpc_status_code"
	// LabelKind carries the resource kind of a lock conflict, e.g. "volume".
	LabelKind = "kind"

	// UnknownDriverName is the driver_name recorded when [New] gets an empty name, as in
	// csi-lib-utils.
	UnknownDriverName = "unknown-driver"
)

// buckets are csi-lib-utils' upper bounds in seconds: CSI operations range from milliseconds
// (probes) to minutes (provisioning, formatting), hence the long tail.
var buckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}

// Buckets returns the histogram's bucket upper bounds in seconds (a copy).
func Buckets() []float64 { return slices.Clone(buckets) }

// Option configures [New].
type Option func(*options)

type options struct {
	runtime bool
}

// WithProcessAndGoCollectors also registers the process collector (CPU, memory, file
// descriptors, start time) and the Go runtime collector. A registry that has them already, such
// as prometheus.DefaultRegisterer, keeps its own and New does not fail.
func WithProcessAndGoCollectors() Option { return func(o *options) { o.runtime = true } }

// Metrics records calls. It is safe for concurrent use; one value serves every service of a
// process. Build it with [New].
type Metrics struct {
	csi, cosi family

	// methods maps a full method name (string) to its *method. The set is small and fixed once
	// every RPC has been called, which is the read-mostly case sync.Map is built for: a call
	// looks its series up without a lock and without allocating.
	methods sync.Map
}

// family is one metric family's collectors, curried with the driver name.
type family struct {
	ops       prometheus.ObserverVec
	inFlight  *prometheus.GaugeVec
	conflicts *prometheus.CounterVec
}

// method is one RPC's series. The histogram series per status code are created on first use,
// so a scrape shows only codes that happened, as with csi-lib-utils.
type method struct {
	name     string
	fam      *family
	inFlight prometheus.Gauge
	byCode   [numCodes]atomic.Pointer[observer]
}

// numCodes covers the codes gRPC defines (OK through Unauthenticated); others are looked up per
// call.
const numCodes = int(codes.Unauthenticated) + 1

// observer boxes an Observer so that it can live in an atomic.Pointer.
type observer struct{ prometheus.Observer }

// New creates the collectors for driverName, registers them with reg and returns the recorder
// whose interceptors feed them. Several Metrics (for several drivers in one process) may share
// one registry: the collectors are registered once and each Metrics records under its own
// driver_name.
func New(reg prometheus.Registerer, driverName string, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil prometheus.Registerer")
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if driverName == "" {
		driverName = UnknownDriverName
	}
	m := &Metrics{}
	var err error
	if m.csi, err = newFamily(reg, SubsystemCSI, driverName); err != nil {
		return nil, err
	}
	if m.cosi, err = newFamily(reg, SubsystemCOSI, driverName); err != nil {
		return nil, err
	}
	if o.runtime {
		for _, c := range []prometheus.Collector{
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
			collectors.NewGoCollector(),
		} {
			if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
				return nil, fmt.Errorf("metrics: register runtime collector: %w", err)
			}
		}
	}
	return m, nil
}

func newFamily(reg prometheus.Registerer, subsystem, driverName string) (family, error) {
	ops, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: subsystem,
		Name:      OperationsName,
		Help:      OperationsHelp,
		Buckets:   Buckets(),
	}, []string{LabelDriverName, LabelMethodName, LabelStatusCode}))
	if err != nil {
		return family{}, err
	}
	inFlight, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: subsystem,
		Name:      InFlightName,
		Help:      "Container Storage Interface operations running now.",
	}, []string{LabelDriverName, LabelMethodName}))
	if err != nil {
		return family{}, err
	}
	conflicts, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: subsystem,
		Name:      LockConflictsName,
		Help:      "Container Storage Interface operations answered ABORTED because another operation held a lock on the resource, by resource kind.",
	}, []string{LabelDriverName, LabelKind}))
	if err != nil {
		return family{}, err
	}
	// Currying fixes driver_name once, so a call resolves only the labels that vary.
	driver := prometheus.Labels{LabelDriverName: driverName}
	return family{
		ops:       ops.MustCurryWith(driver),
		inFlight:  inFlight.MustCurryWith(driver),
		conflicts: conflicts.MustCurryWith(driver),
	}, nil
}

// register registers c, or returns the equal collector already registered (another driver in
// the same process), so that New can be called once per driver on one registry.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("metrics: register collector: %w", err)
}

// UnaryServerInterceptor records each unary call: its duration and status code in the
// histogram, and the call in the in-flight gauge while it runs.
func (m *Metrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		mm := m.method(info.FullMethod)
		mm.inFlight.Inc()
		start := time.Now()
		panicked := true
		defer func() { mm.done(panicked, err, start) }()
		resp, err = handler(ctx, req)
		panicked = false
		return resp, err
	}
}

// StreamServerInterceptor records each streaming call as UnaryServerInterceptor does; the
// duration is the stream's whole life.
func (m *Metrics) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		mm := m.method(info.FullMethod)
		mm.inFlight.Inc()
		start := time.Now()
		panicked := true
		defer func() { mm.done(panicked, err, start) }()
		err = handler(srv, ss)
		panicked = false
		return err
	}
}

// done ends a call's recording. A panic is recorded as INTERNAL, the answer the recovery
// interceptor outside gives, and is left to propagate.
func (mm *method) done(panicked bool, err error, start time.Time) {
	c := codes.Internal
	if !panicked {
		c = codeOf(err)
	}
	mm.observer(c).Observe(time.Since(start).Seconds())
	mm.inFlight.Dec()
}

// codeOf is the code the client receives for err: a status keeps its code, a context error
// becomes CANCELED or DEADLINE_EXCEEDED and anything else UNKNOWN, as the gRPC server converts
// them. (csi-lib-utils records on the client side, where every error is a status already.)
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return status.FromContextError(err).Code()
}

// observer returns the histogram series for code c, creating it on first use.
func (mm *method) observer(c codes.Code) prometheus.Observer {
	if int(c) >= numCodes {
		return mm.fam.ops.WithLabelValues(mm.name, c.String())
	}
	if o := mm.byCode[c].Load(); o != nil {
		return o.Observer
	}
	// Two first calls may race here; WithLabelValues returns the same series to both.
	o := &observer{mm.fam.ops.WithLabelValues(mm.name, c.String())}
	mm.byCode[c].Store(o)
	return o.Observer
}

// method returns fullMethod's series, creating them on its first call.
func (m *Metrics) method(fullMethod string) *method {
	if mm, ok := m.methods.Load(fullMethod); ok {
		return mm.(*method)
	}
	fam := m.familyOf(fullMethod)
	// A racing first call may build a second method value; LoadOrStore keeps one, and both
	// resolved the same gauge series.
	mm, _ := m.methods.LoadOrStore(fullMethod, &method{name: fullMethod, fam: fam, inFlight: fam.inFlight.WithLabelValues(fullMethod)})
	return mm.(*method)
}

// familyOf picks the COSI family for a method of a service whose proto package has a "cosi"
// component ("/cosi.v1alpha1.Provisioner/...", "/sigs.k8s.io.cosi.v1alpha2.Provisioner/..."),
// and the CSI family for everything else.
func (m *Metrics) familyOf(fullMethod string) *family {
	if isCOSI(fullMethod) {
		return &m.cosi
	}
	return &m.csi
}

func isCOSI(fullMethod string) bool {
	svc := strings.TrimPrefix(fullMethod, "/")
	if i := strings.IndexByte(svc, '/'); i >= 0 {
		svc = svc[:i]
	}
	i := strings.LastIndexByte(svc, '.')
	if i < 0 {
		return false // no package
	}
	for part := range strings.SplitSeq(svc[:i], ".") {
		if part == "cosi" {
			return true
		}
	}
	return false
}

// RecordAborted counts one call turned away because another operation held a lock on a
// resource of the given kind ("volume", "bucket", ...). The family (CSI or COSI) is taken from
// the gRPC method in ctx; without one the CSI family is used. Use it for conflicts detected
// outside the Locker that [Metrics.Locker] wraps. Kinds should come from a small fixed set:
// each one is a series.
func (m *Metrics) RecordAborted(ctx context.Context, kind string) {
	if kind == "" {
		kind = "resource" // the word idempotency.BusyError uses for a key without a kind
	}
	fam := &m.csi
	if name, ok := grpc.Method(ctx); ok {
		fam = m.familyOf(name)
	}
	fam.conflicts.WithLabelValues(kind).Inc()
}
