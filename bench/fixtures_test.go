package bench

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	gocsilogging "github.com/dell/gocsi/middleware/logging"
	gocsirequestid "github.com/dell/gocsi/middleware/requestid"
	"github.com/dell/gocsi/middleware/serialvolume"
	"github.com/dell/gocsi/middleware/specvalidator"
	gocsiutils "github.com/dell/gocsi/utils"
	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/locking"
	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/recovery"
	"github.com/csikit/csikit/middleware/sanitize"
	"github.com/csikit/csikit/middleware/validation"
	"github.com/csikit/csikit/secrets"
)

// Secret values used by every fixture; tests look for them in every output.
const (
	secretUser = "canary-user-4b7e"
	secretPass = "canary-pass-hunter2-s3cr3t"
)

// publishRequest is what every ControllerPublishVolume benchmark sends: a mount capability,
// two secrets and a two-entry volume context.
func publishRequest() *csi.ControllerPublishVolumeRequest {
	return &csi.ControllerPublishVolumeRequest{
		VolumeId: "vol-5f1c2a9e-8d1b-4c3e-9a7f-0b6d2e4c8a11",
		NodeId:   "node-worker-07",
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4"}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		},
		Readonly:      false,
		Secrets:       map[string]string{"username": secretUser, "password": secretPass},
		VolumeContext: map[string]string{"pool": "fast-ssd", "storage.example.com/lun": "7"},
	}
}

// createVolumeRequest has the shape of secrets' typicalCreateVolume: name, capacity range, two
// mount capabilities with mount flags, three parameters, two secrets, a snapshot source, and a
// topology requirement with two requisite segments and one preferred.
func createVolumeRequest() *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:          "pvc-5f1c2a9e-8d1b-4c3e-9a7f-0b6d2e4c8a11",
		CapacityRange: &csi.CapacityRange{RequiredBytes: 10 << 30, LimitBytes: 20 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{
			{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
					FsType: "ext4", MountFlags: []string{"noatime", "discard"},
				}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			},
			{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
					FsType: "xfs", MountFlags: []string{"nouuid"},
				}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER},
			},
		},
		Parameters: map[string]string{"pool": "fast-ssd", "replicas": "3", "encrypted": "true"},
		Secrets:    map[string]string{"username": secretUser, "password": secretPass},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "snap-0123456789"},
		}},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{
				{Segments: map[string]string{"topology.example.com/zone": "zone-a"}},
				{Segments: map[string]string{"topology.example.com/zone": "zone-b"}},
			},
			Preferred: []*csi.Topology{
				{Segments: map[string]string{"topology.example.com/zone": "zone-a"}},
			},
		},
	}
}

// publishContext is the trivial work every server does: a fresh one-entry map.
func publishContext() map[string]string { return map[string]string{"devicePath": "/dev/x"} }

// bareServer is the hand-written csi.ControllerServer a plugin without any library would have.
type bareServer struct {
	csi.UnimplementedControllerServer
}

func (bareServer) ControllerPublishVolume(context.Context, *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext()}, nil
}

// backend is the csikit backend doing the same work as bareServer.
type backend struct{}

var (
	_ driver.Controller          = backend{}
	_ driver.ControllerPublisher = backend{}
)

func (backend) CreateVolume(context.Context, *driver.CreateVolumeRequest) (*driver.Volume, error) {
	return nil, driver.ErrUnsupported
}
func (backend) DeleteVolume(context.Context, *driver.DeleteVolumeRequest) error { return nil }
func (backend) ValidateVolumeCapabilities(context.Context, *driver.ValidateVolumeCapabilitiesRequest) error {
	return nil
}
func (backend) ControllerPublishVolume(context.Context, *driver.ControllerPublishVolumeRequest) (map[string]string, error) {
	return publishContext(), nil
}
func (backend) ControllerUnpublishVolume(context.Context, *driver.ControllerUnpublishVolumeRequest) error {
	return nil
}

// zapJSON returns a zap logger with the production JSON encoder writing to w at level, without
// sampling or caller annotation (so every call really writes its line).
func zapJSON(w io.Writer, level zapcore.Level) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), level))
}

// logFile creates a log file in dir, closed when the test ends.
func logFile(tb testing.TB, dir, name string) *os.File {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	return f
}

// middlewareChain is the interceptors csikit's driver runs around every method, assembled from
// the middleware packages alone (the driver registers them inside its methods, so there is no
// public list to take them from): the cost of the chain without the driver's handler. As in the
// driver, recovery attaches the request ID. Composed by the benchmarks as grpc-go composes a chain
// (a closure per interceptor and call), where the driver walks its own chain without allocating.
func middlewareChain(logger *zap.Logger) []grpc.UnaryServerInterceptor {
	if logger == nil {
		logger = zap.NewNop()
	}
	redactor := secrets.NewRedactor()
	return []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(recovery.WithLogger(logger), recovery.WithScrubber(redactor.ScrubAny)),
		logging.UnaryServerInterceptor(logger, logging.WithRedactor(redactor)),
		sanitize.UnaryServerInterceptor(sanitize.WithScrubber(redactor.ScrubAny)),
		validation.UnaryServerInterceptor(),
		locking.UnaryServerInterceptor(idempotency.NewManager(), publishKeys),
	}
}

// publishKeys is the lock the driver takes for ControllerPublishVolume: the volume, exclusively.
func publishKeys(req any) []idempotency.Key {
	if r, ok := req.(*csi.ControllerPublishVolumeRequest); ok {
		return []idempotency.Key{{Kind: "volume", ID: r.GetVolumeId()}}
	}
	return nil
}

// newCsikit assembles the csikit driver the benchmarks serve.
func newCsikit(tb testing.TB, logger *zap.Logger) *plugin.Plugin {
	tb.Helper()
	d, err := plugin.New(plugin.Config{
		Name: "bench.csikit.dev", VendorVersion: "1", Controller: backend{}, Logger: logger,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// logrusLines adapts a logrus logger to the io.Writer gocsi's logging interceptor writes to: one
// Write per line, logged at info, as gocsi's own server does through logrus.Infof.
type logrusLines struct{ l *logrus.Logger }

func (w logrusLines) Write(p []byte) (int, error) {
	w.l.Info(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// newLogrus returns a logrus logger at info with gocsi's default (text) formatter writing to w.
func newLogrus(w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	l.SetLevel(logrus.InfoLevel)
	l.SetFormatter(&logrus.TextFormatter{DisableColors: true})
	return l
}

// gocsiInterceptors is what gocsi's StoragePlugin chains with X_CSI_REQ_LOGGING,
// X_CSI_REP_LOGGING, X_CSI_SPEC_REQ_VALIDATION and X_CSI_SERIAL_VOL_ACCESS set, in its order
// (middleware.go initInterceptors): request ID, logging, spec validation, serial volume access.
// gocsi's first interceptor (injecting its env lookup into the context) is unexported and does
// nothing these interceptors need, so it is left out. Response validation is off, as csikit's is
// by default.
func gocsiInterceptors(w io.Writer) []grpc.UnaryServerInterceptor {
	return []grpc.UnaryServerInterceptor{
		gocsirequestid.NewServerRequestIDInjector(),
		gocsilogging.NewServerLogger(gocsilogging.WithRequestLogging(w), gocsilogging.WithResponseLogging(w)),
		specvalidator.NewServerSpecValidator(specvalidator.WithRequestValidation()),
		serialvolume.New(),
	}
}

// target is one server under test and a client connected to it over its unix socket.
type target struct {
	name   string
	client csi.ControllerClient
}

// serveUnix listens on a fresh unix socket in dir and serves with serve until the test ends.
// serve must return once ctx is done or the listener is closed.
func serveUnix(tb testing.TB, dir, name string, serve func(ctx context.Context, lis net.Listener) error) target {
	tb.Helper()
	path := filepath.Join(dir, name+".sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("%s: serve: %v", name, err)
		}
	})
	return target{name: name, client: csi.NewControllerClient(conn)}
}

// serveGRPC serves s on lis until ctx is done.
func serveGRPC(s *grpc.Server) func(ctx context.Context, lis net.Listener) error {
	return func(ctx context.Context, lis net.Listener) error {
		go func() {
			<-ctx.Done()
			s.Stop()
		}()
		return s.Serve(lis)
	}
}

func startBare(tb testing.TB, dir string) target {
	s := grpc.NewServer()
	csi.RegisterControllerServer(s, bareServer{})
	return serveUnix(tb, dir, "bare", serveGRPC(s))
}

// startCsikit serves the csikit driver with a zap JSON logger at level writing to a file in dir.
func startCsikit(tb testing.TB, dir, name string, level zapcore.Level) target {
	d := newCsikit(tb, zapJSON(logFile(tb, dir, name+".log"), level))
	return serveUnix(tb, dir, name, d.Serve)
}

// startGocsi chains gocsi's interceptors the way gocsi's server does (utils.ChainUnaryServer in
// grpc.UnaryInterceptor) around the bare server, logging through logrus to a file in dir.
func startGocsi(tb testing.TB, dir string) target {
	w := logrusLines{newLogrus(logFile(tb, dir, "gocsi.log"))}
	s := grpc.NewServer(grpc.UnaryInterceptor(gocsiutils.ChainUnaryServer(gocsiInterceptors(w)...)))
	csi.RegisterControllerServer(s, bareServer{})
	return serveUnix(tb, dir, "gocsi", serveGRPC(s))
}

// checkPublish makes one call and checks the answer.
func checkPublish(tb testing.TB, t target, req *csi.ControllerPublishVolumeRequest) {
	tb.Helper()
	resp, err := t.client.ControllerPublishVolume(context.Background(), req)
	if err != nil {
		tb.Fatalf("%s: ControllerPublishVolume: %v", t.name, err)
	}
	if got := resp.GetPublishContext()["devicePath"]; got != "/dev/x" {
		tb.Fatalf("%s: publish context %v, want devicePath=/dev/x", t.name, resp.GetPublishContext())
	}
}

// interleave calls every target once per iteration, rotating which goes first so that no target
// always follows the same one, and reports each target's p50 and p90 and the ratios of the other
// targets' to the first's (the baseline). ns/op is the time of one round (one call to each target).
func interleave(b *testing.B, targets []target) {
	req := publishRequest()
	for _, t := range targets {
		checkPublish(b, t, req) // warm up connections and per-type caches
	}
	lat := make([][]time.Duration, len(targets))
	for i := range lat {
		lat[i] = make([]time.Duration, 0, b.N)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range targets {
			k := (i + j) % len(targets)
			start := time.Now()
			_, err := targets[k].client.ControllerPublishVolume(ctx, req)
			lat[k] = append(lat[k], time.Since(start))
			if err != nil {
				b.Fatalf("%s: %v", targets[k].name, err)
			}
		}
	}
	b.StopTimer()
	base50, base90 := percentiles(lat[0])
	for k, t := range targets {
		p50, p90 := percentiles(lat[k])
		b.ReportMetric(p50, t.name+"-p50-ns")
		b.ReportMetric(p90, t.name+"-p90-ns")
		if k == 0 {
			continue
		}
		// With two targets the ratio is simply "ratio-p50"; with more, it names the target.
		prefix := t.name + "-"
		if len(targets) == 2 {
			prefix = ""
		}
		b.ReportMetric(p50/base50, prefix+"ratio-p50")
		b.ReportMetric(p90/base90, prefix+"ratio-p90")
		b.ReportMetric(p50-base50, t.name+"-added-p50-ns")
	}
}

// solo measures one target alone and reports its p50 and p90.
func solo(b *testing.B, t target) {
	req := publishRequest()
	checkPublish(b, t, req)
	lat := make([]time.Duration, 0, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		_, err := t.client.ControllerPublishVolume(ctx, req)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatalf("%s: %v", t.name, err)
		}
	}
	b.StopTimer()
	p50, p90 := percentiles(lat)
	b.ReportMetric(p50, "p50-ns/op")
	b.ReportMetric(p90, "p90-ns/op")
}

// percentiles returns the median and the 90th percentile of d in nanoseconds.
func percentiles(d []time.Duration) (p50, p90 float64) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]), float64(s[len(s)*9/10])
}

// namedFunc is one way of doing the work an interleaved micro-benchmark compares.
type namedFunc struct {
	name string
	f    func()
}

// funcBlock is how many calls interleaveFuncs times as one sample: enough that the timer's cost
// vanishes, few enough that the ways alternate often.
const funcBlock = 8

// interleaveFuncs runs every way funcBlock times per iteration, rotating which goes first, and
// reports each way's mean time per call ("<name>-ns"), which it also returns in order. ns/op is
// one round. The mean, not a median, because the garbage collection an allocating way causes
// lands in a minority of its samples, and a median would leave it out. The ways share one heap,
// so some of that collection is paid while another way runs; this favours the allocating ways.
func interleaveFuncs(b *testing.B, ways []namedFunc) []float64 {
	total := make([]time.Duration, len(ways))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range ways {
			k := (i + j) % len(ways)
			f := ways[k].f
			start := time.Now()
			for range funcBlock {
				f()
			}
			total[k] += time.Since(start)
		}
	}
	b.StopTimer()
	per := make([]float64, len(ways))
	for k, w := range ways {
		per[k] = float64(total[k]) / float64(b.N*funcBlock)
		b.ReportMetric(per[k], w.name+"-ns")
	}
	return per
}
