package plugin_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/idempotency"
)

// gate makes a backend method wait: each call announces itself on entered, then waits for
// release (or, when honour is set, for its context to end and returns the context's error).
type gate struct {
	hang    atomic.Bool // only calls made while set wait
	honour  bool
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func newGate(honour bool) *gate {
	g := &gate{honour: honour, entered: make(chan struct{}, 16), release: make(chan struct{})}
	g.hang.Store(true)
	return g
}

func (g *gate) wait(ctx context.Context) error {
	g.calls.Add(1)
	if !g.hang.Load() {
		return nil
	}
	g.entered <- struct{}{}
	if g.honour {
		<-ctx.Done()
		return fmt.Errorf("waiting for the storage: %w", ctx.Err())
	}
	<-g.release
	return nil
}

// gatedController is the in-memory driver with a CreateVolume that waits at a gate, or fails
// with err when set.
type gatedController struct {
	*memdriver.Driver
	g   *gate
	err error
}

func (c *gatedController) CreateVolume(ctx context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	if c.err != nil {
		return nil, c.err
	}
	if err := c.g.wait(ctx); err != nil {
		return nil, err
	}
	return c.Driver.CreateVolume(ctx, req)
}

// gatedBuckets is the in-memory bucket backend with create and grant that wait at a gate, or
// fail with err when set.
type gatedBuckets struct {
	*memdriver.Buckets
	g   *gate
	err error
}

func (b *gatedBuckets) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := b.g.wait(ctx); err != nil {
		return nil, err
	}
	return b.Buckets.CreateBucket(ctx, req)
}

func (b *gatedBuckets) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	if b.err != nil {
		return nil, b.err
	}
	if err := b.g.wait(ctx); err != nil {
		return nil, err
	}
	return b.Buckets.GrantBucketAccess(ctx, req)
}

// releaseLocker is the default lock table reporting each release.
type releaseLocker struct {
	idempotency.Locker
	released chan struct{}
}

func (l releaseLocker) Lock(ctx context.Context, keys ...idempotency.Key) (func(), error) {
	unlock, err := l.Locker.Lock(ctx, keys...)
	if err != nil {
		return nil, err
	}
	return func() {
		unlock()
		l.released <- struct{}{}
	}, nil
}

func newReleaseLocker() releaseLocker {
	return releaseLocker{Locker: idempotency.NewManager(), released: make(chan struct{}, 16)}
}

func createReq(name string) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}}
}

// TestBackendTimeoutAnswersUnavailableAndHoldsTheLock: a backend that ignores its context and
// hangs is answered UNAVAILABLE after Config.BackendTimeout; the volume's name stays locked
// until the backend returns, so a retry meanwhile is ABORTED, never a second create beside the
// first; after it returns, a retry completes and one volume exists.
func TestBackendTimeoutAnswersUnavailableAndHoldsTheLock(t *testing.T) {
	g := newGate(false)
	c := &gatedController{Driver: memdriver.New(memdriver.Options{}), g: g}
	locker := newReleaseLocker()
	lateLogged := logHook("a backend call returned after the CO had been answered")
	cfg := plugin.Config{Name: "slow.csikit.dev", VendorVersion: "1", Controller: c, Locker: locker,
		BackendTimeout: 20 * time.Millisecond, Logger: lateLogged.logger}
	srv := drivertest.NewServer(t, cfg)
	ctl := csi.NewControllerClient(srv.Conn)
	ctx := context.Background()
	defer func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	}()

	_, err := ctl.CreateVolume(ctx, createReq("v1"))
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "BackendTimeout") {
		t.Fatalf("CreateVolume on a hung backend: %v, want UNAVAILABLE naming Config.BackendTimeout", err)
	}
	<-g.entered
	if _, err := ctl.CreateVolume(ctx, createReq("v1")); status.Code(err) != codes.Aborted {
		t.Fatalf("retry while the first call is still in the backend: %v, want ABORTED", err)
	}
	g.hang.Store(false)
	close(g.release)
	<-locker.released // the first call's lock, released when its backend call returned
	vol, err := ctl.CreateVolume(ctx, createReq("v1"))
	if err != nil {
		t.Fatalf("retry after the backend returned: %v", err)
	}
	list, err := ctl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetVolume().GetVolumeId() != vol.GetVolume().GetVolumeId() {
		t.Fatalf("volumes after the retries: %v, %v; want exactly %s", list, err, vol.GetVolume().GetVolumeId())
	}
	<-lateLogged.seen // the late return of the first call is logged (else the test times out)
}

// hookedLogger is a logger that reports each entry whose message is msg on seen.
type hookedLogger struct {
	logger *zap.Logger
	seen   chan struct{}
}

func logHook(msg string) hookedLogger {
	h := hookedLogger{seen: make(chan struct{}, 16)}
	h.logger = zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zap.DebugLevel),
		zap.Hooks(func(e zapcore.Entry) error {
			if strings.HasPrefix(e.Message, msg) {
				h.seen <- struct{}{}
			}
			return nil
		}))
	return h
}

// TestBackendTimeoutCancelsTheBackend: a backend that honours its context sees it end at the
// bound and returns the context's error; the CO gets UNAVAILABLE (the backend's fault), not
// DEADLINE_EXCEEDED (the CO's deadline has not passed) and not INTERNAL.
func TestBackendTimeoutCancelsTheBackend(t *testing.T) {
	g := newGate(true)
	c := &gatedController{Driver: memdriver.New(memdriver.Options{}), g: g}
	srv := drivertest.NewServer(t, plugin.Config{Name: "slow.csikit.dev", VendorVersion: "1", Controller: c,
		BackendTimeout: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := csi.NewControllerClient(srv.Conn).CreateVolume(ctx, createReq("v1"))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("CreateVolume whose backend timed out: %v, want UNAVAILABLE", err)
	}
}

// TestWithoutBackendTimeoutTheLockWaitsForTheBackend: with no bound, a CO that stops waiting
// (its deadline passed, or it gave up) gets its answer, and the plugin still holds the name until
// the backend returns. The CO gives up once the call is in the backend: a deadline short enough
// for a test can pass on a busy machine before the call gets there, and the backend is never
// entered.
func TestWithoutBackendTimeoutTheLockWaitsForTheBackend(t *testing.T) {
	g := newGate(false)
	c := &gatedController{Driver: memdriver.New(memdriver.Options{}), g: g}
	locker := newReleaseLocker()
	srv := drivertest.NewServer(t, plugin.Config{Name: "slow.csikit.dev", VendorVersion: "1", Controller: c, Locker: locker})
	ctl := csi.NewControllerClient(srv.Conn)
	first := make(chan error, 1)
	ctx, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	go func() {
		_, err := ctl.CreateVolume(ctx, createReq("v1"))
		first <- err
	}()
	<-g.entered
	giveUp()
	if err := <-first; status.Code(err) != codes.Canceled {
		t.Fatalf("CreateVolume the CO gave up on: %v, want CANCELLED", err)
	}
	if _, err := ctl.CreateVolume(context.Background(), createReq("v1")); status.Code(err) != codes.Aborted {
		t.Fatalf("retry while the first call is still in the backend: %v, want ABORTED", err)
	}
	g.hang.Store(false)
	close(g.release)
	<-locker.released
	if _, err := ctl.CreateVolume(context.Background(), createReq("v1")); err != nil {
		t.Fatalf("retry after the backend returned: %v", err)
	}
}

// cosiCalls are the COSI calls whose answers the sidecars judge, in both wire versions, each on
// names of its own so that none waits for another's lock.
func cosiCalls(p *cosiPlugin) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"v1alpha1 DriverCreateBucket": func(ctx context.Context) error {
			_, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "bc-2"})
			return err
		},
		"v1alpha2 DriverCreateBucket": func(ctx context.Context) error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "bc-1", Protocols: []*cosi2.ObjectProtocol{s3Proto()}})
			return err
		},
		"v1alpha1 DriverGrantBucketAccess": func(ctx context.Context) error {
			_, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: "bc-1", Name: "ba-2",
				AuthenticationType: cosi1.AuthenticationType_Key})
			return err
		},
		"v1alpha2 DriverGrantBucketAccess": func(ctx context.Context) error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-1", Protocol: s3Proto(),
				AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("bc-1")}})
			return err
		},
	}
}

// TestBackendTimeoutOnCOSI: a hung bucket backend is UNAVAILABLE in both wire versions, never a
// code the sidecar takes as final.
func TestBackendTimeoutOnCOSI(t *testing.T) {
	g := newGate(false)
	b := &gatedBuckets{Buckets: memdriver.NewBuckets("http://s3.example", "us-east-1"), g: g}
	cfg := bucketConfig(b)
	cfg.BackendTimeout = 20 * time.Millisecond
	p := startCOSI(t, cfg)
	defer close(g.release)
	for name, call := range cosiCalls(p) {
		if err := call(context.Background()); status.Code(err) != codes.Unavailable {
			t.Errorf("%s on a hung backend: %v, want UNAVAILABLE", name, err)
		}
		<-g.entered
	}
}

// TestTransientFaultsAgreeOnTheWire is the end-to-end differential check: the same backend
// error reaches the CO with the same code through CSI and through both COSI versions' create and
// grant (whose adapters rewrite some codes), and a transient one is never a code a sidecar takes
// as final.
func TestTransientFaultsAgreeOnTheWire(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	faults := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"connection refused", fmt.Errorf("mgr: %w", refused), codes.Unavailable},
		{"connection reset", os.NewSyscallError("read", syscall.ECONNRESET), codes.Unavailable},
		{"cut mid-message", fmt.Errorf("read answer: %w", io.ErrUnexpectedEOF), codes.Unavailable},
		{"the backend's own timeout", fmt.Errorf("admin ops: %w", context.DeadlineExceeded), codes.Unavailable},
		{"not a fault: a body over the limit", &http.MaxBytesError{Limit: 1}, codes.Internal},
		{"the sentinel", fmt.Errorf("rgw: %w", driver.ErrUnavailable), codes.Unavailable},
		{"an operation still running", fmt.Errorf("clone: %w", driver.ErrPending), codes.Aborted},
	}
	ctl := &gatedController{Driver: memdriver.New(memdriver.Options{}), g: newGate(false)}
	csiSrv := drivertest.NewServer(t, plugin.Config{Name: "faulty.csikit.dev", VendorVersion: "1", Controller: ctl})
	buckets := &gatedBuckets{Buckets: memdriver.NewBuckets("http://s3.example", "us-east-1"), g: newGate(false)}
	p := startCOSI(t, bucketConfig(buckets))
	terminal := map[codes.Code]bool{codes.InvalidArgument: true, codes.AlreadyExists: true, codes.OutOfRange: true, codes.Unimplemented: true}
	for _, f := range faults {
		ctl.err, buckets.err = f.err, f.err
		_, err := csi.NewControllerClient(csiSrv.Conn).CreateVolume(context.Background(), createReq("v1"))
		if status.Code(err) != f.want {
			t.Errorf("%s: CSI CreateVolume answers %v, want %v", f.name, status.Code(err), f.want)
		}
		for name, call := range cosiCalls(p) {
			got := status.Code(call(context.Background()))
			if got != status.Code(err) {
				t.Errorf("%s: %s answers %v, CSI CreateVolume %v", f.name, name, got, status.Code(err))
			}
			if f.want != codes.Internal && terminal[got] {
				t.Errorf("%s: %s answers %v, final for the COSI sidecar", f.name, name, got)
			}
		}
	}
}

// switchProber is a backend's Probe whose storage is up or down, or hangs at a gate.
type switchProber struct {
	down atomic.Bool
	g    *gate // nil: never hangs
}

func (s *switchProber) Probe(ctx context.Context) (bool, error) {
	if s.g != nil {
		if err := s.g.wait(ctx); err != nil {
			return false, err
		}
	}
	if s.down.Load() {
		return false, fmt.Errorf("monitor at 127.0.0.1:3300: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	}
	return true, nil
}

// TestReadinessFollowsTheBackend: while the backend's storage is unreachable, Probe answers
// ready=false (not an error code), /healthz fails and /readyz is 503 while /livez stays 200 (a
// kubelet liveness check on it does not restart the plugin for an outage); once it is back, all
// are ready again, with no restart.
func TestReadinessFollowsTheBackend(t *testing.T) {
	pr := &switchProber{}
	cfg := plugin.Config{Name: "flaky.csikit.dev", VendorVersion: "1", Node: minimal{}, Prober: pr, HTTPEndpoint: freeAddr(t)}
	id := csi.NewIdentityClient(drivertest.NewServer(t, cfg).Conn)
	check := func(want bool) {
		t.Helper()
		wantHTTP := map[bool]int{true: 200, false: 500}[want]
		wantReadyz := map[bool]int{true: 200, false: 503}[want]
		// The readiness watch probes too; a probe of its own that began before the switch may
		// land after ours, so ask until the answers agree (they must, at the latest, on the
		// next ask).
		for i := 0; ; i++ {
			resp, err := id.Probe(context.Background(), &csi.ProbeRequest{})
			if err != nil || resp.GetReady() == nil || resp.GetReady().GetValue() != want {
				t.Fatalf("Probe with the storage up=%v: %v, %v; want ready=%v and no error", want, resp, err, want)
			}
			healthz, _ := get(t, "http://"+cfg.HTTPEndpoint+"/healthz")
			readyz, _ := get(t, "http://"+cfg.HTTPEndpoint+"/readyz")
			if livez, body := get(t, "http://"+cfg.HTTPEndpoint+"/livez"); livez != 200 {
				t.Fatalf("storage up=%v: /livez %d %q, want 200 either way", want, livez, body)
			}
			if healthz == wantHTTP && readyz == wantReadyz {
				return
			}
			if i == 100 {
				t.Fatalf("storage up=%v: /healthz %d, /readyz %d; want %d, %d", want, healthz, readyz, wantHTTP, wantReadyz)
			}
		}
	}
	check(true)
	pr.down.Store(true)
	check(false)
	pr.down.Store(false)
	check(true)
}

// TestHungProbeIsNotReady: a backend whose Probe hangs, ignoring its context, makes Probe answer
// ready=false within Config.ProbeTimeout, runs one Probe however often the plugin is probed,
// does not hold /healthz, and the plugin is ready again once the backend answers.
func TestHungProbeIsNotReady(t *testing.T) {
	g := newGate(false)
	pr := &switchProber{g: g}
	cfg := plugin.Config{Name: "hung.csikit.dev", VendorVersion: "1", Node: minimal{}, Prober: pr,
		HTTPEndpoint: freeAddr(t), ProbeTimeout: 20 * time.Millisecond}
	id := csi.NewIdentityClient(drivertest.NewServer(t, cfg).Conn)
	released := false
	defer func() {
		if !released {
			close(g.release)
		}
	}()
	for range 3 {
		resp, err := id.Probe(context.Background(), &csi.ProbeRequest{})
		if err != nil || resp.GetReady() == nil || resp.GetReady().GetValue() {
			t.Fatalf("Probe while the backend's Probe hangs: %v, %v; want ready=false and no error", resp, err)
		}
	}
	if code, _ := get(t, "http://"+cfg.HTTPEndpoint+"/healthz"); code != 500 {
		t.Errorf("/healthz while the backend's Probe hangs: %d, want 500", code)
	}
	if n := pr.g.calls.Load(); n != 1 {
		t.Errorf("the hung Probe was called %d times, want once (one at a time)", n)
	}
	g.hang.Store(false)
	close(g.release)
	released = true
	for i := 0; ; i++ {
		resp, err := id.Probe(context.Background(), &csi.ProbeRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetReady().GetValue() {
			break
		}
		if i == 100 {
			t.Fatal("not ready after the backend's Probe returned")
		}
	}
}

// TestServeStopsWhileAProbeHangs: stopping the plugin does not wait for a backend's Probe that
// never returns.
func TestServeStopsWhileAProbeHangs(t *testing.T) {
	g := newGate(false)
	defer close(g.release)
	srv := drivertest.NewServer(t, plugin.Config{Name: "hung.csikit.dev", VendorVersion: "1", Node: minimal{},
		Prober: &switchProber{g: g}, ProbeTimeout: time.Hour})
	<-g.entered // the readiness watch is inside the hung Probe
	stopped := make(chan struct{})
	go func() {
		srv.Close()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not stop while a Probe hangs")
	}
}

// TestSingleBucketGrantIsNeverOutOfRange: COSI reserves OUT_OF_RANGE for several buckets behind
// one access, and the sidecar takes it as final; a backend that answers it, as a sentinel or as a
// status of its own, to a grant of one bucket is a plugin bug (INTERNAL), in both versions.
func TestSingleBucketGrantIsNeverOutOfRange(t *testing.T) {
	for _, backendErr := range []error{
		fmt.Errorf("quota: %w", driver.ErrOutOfRange),
		status.Error(codes.OutOfRange, "quota"),
	} {
		b := &gatedBuckets{Buckets: memdriver.NewBuckets("http://s3.example", "us-east-1"), g: newGate(false), err: backendErr}
		calls := cosiCalls(startCOSI(t, bucketConfig(b)))
		for _, name := range []string{"v1alpha1 DriverGrantBucketAccess", "v1alpha2 DriverGrantBucketAccess"} {
			if err := calls[name](context.Background()); status.Code(err) != codes.Internal {
				t.Errorf("%s answered by the backend with %v: %v, want INTERNAL", name, backendErr, err)
			}
		}
	}
}

// TestStopWaitsForBackendCallsPastTheirBound: a call answered at Config.BackendTimeout is still
// in its backend; stopping the plugin waits for it (within Config.ShutdownTimeout) rather than
// returning, and letting the process exit, in the middle of an operation the CO will retry.
func TestStopWaitsForBackendCallsPastTheirBound(t *testing.T) {
	g := newGate(false)
	c := &gatedController{Driver: memdriver.New(memdriver.Options{}), g: g}
	waiting := logHook("stopping: waiting for backend calls")
	srv := drivertest.NewServer(t, plugin.Config{Name: "slow.csikit.dev", VendorVersion: "1", Controller: c,
		BackendTimeout: 20 * time.Millisecond, Logger: waiting.logger})
	if _, err := csi.NewControllerClient(srv.Conn).CreateVolume(context.Background(), createReq("v1")); status.Code(err) != codes.Unavailable {
		t.Fatalf("CreateVolume on a hung backend: %v, want UNAVAILABLE", err)
	}
	<-g.entered
	closed := make(chan struct{})
	go func() {
		srv.Close()
		close(closed)
	}()
	select {
	case <-waiting.seen:
	case <-closed:
		close(g.release)
		t.Fatal("Serve returned while a backend call was still running")
	}
	close(g.release)
	<-closed
}
