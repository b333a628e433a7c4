package hostpath

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/hostpath/internal/flushprobe"
)

// scaleServer is the controller served over a unix socket in dir, logging at info level to a
// file as an operator would. opened is how long Open took (opening the state and reconciling it
// with the disk).
type scaleServer struct {
	ctrl   csi.ControllerClient
	plugin *Plugin
	opened time.Duration
	stop   func()
}

func serveScale(tb testing.TB, dir string, fsync bool) *scaleServer {
	tb.Helper()
	logFile, err := os.OpenFile(filepath.Join(dir, "driver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(logFile), zapcore.InfoLevel))
	start := time.Now()
	p, err := Open(Config{StateDir: filepath.Join(dir, "state"), NodeID: "scale-node", CapacityBytes: 1 << 50, Logger: logger}, ModeController)
	if err != nil {
		tb.Fatal(err)
	}
	opened := time.Since(start)
	// The benchmark-only knob: bbolt's own NoSync, set before the first write.
	p.Controller.st.db.NoSync = !fsync
	cfg := p.Config()
	cfg.Logger = logger
	d, err := plugin.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "csi.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	return &scaleServer{ctrl: csi.NewControllerClient(conn), plugin: p, opened: opened, stop: func() {
		conn.Close()
		cancel()
		<-done
		p.Close()
		logFile.Close()
	}}
}

// listEvery pages through ListVolumes (max_entries pageSize) and fails unless every volume of
// want is listed exactly once and nothing else. It returns the number of pages.
func listEvery(tb testing.TB, ctrl csi.ControllerClient, pageSize int32, want []string) int {
	tb.Helper()
	seen := make(map[string]int, len(want))
	token, pages := "", 0
	for {
		resp, err := ctrl.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: pageSize, StartingToken: token})
		if err != nil {
			tb.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if len(resp.GetEntries()) > int(pageSize) {
			tb.Fatalf("page %d has %d entries, more than max_entries=%d", pages, len(resp.GetEntries()), pageSize)
		}
		for _, e := range resp.GetEntries() {
			seen[e.GetVolume().GetVolumeId()]++
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			tb.Fatalf("volume %s listed %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		tb.Fatalf("listed %d distinct volumes, want %d", len(seen), len(want))
	}
	return pages
}

// sequential runs n calls one after the other and returns each one's latency. With a probe,
// every probeEvery-th call is preceded by a timed flush of the disk (probe[i/probeEvery]).
func sequential(tb testing.TB, n int, probe *flushProbe, call func(i int) error) (lat, flushes []time.Duration) {
	tb.Helper()
	lat = make([]time.Duration, n)
	for i := range n {
		if probe != nil && i%probeEvery == 0 {
			flushes = append(flushes, probe.once(tb))
		}
		start := time.Now()
		if err := call(i); err != nil {
			tb.Fatalf("call %d: %v", i, err)
		}
		lat[i] = time.Since(start)
	}
	return lat, flushes
}

// probeEvery spaces the flush probes of a durable run: often enough to follow the disk, whose
// flush time on a shared host moves by a factor of two within minutes, rarely enough not to
// change the run.
const probeEvery = 10

// newFlushProbe opens a flush probe on dir's file system, closed when the test ends.
func newFlushProbe(tb testing.TB, dir string) *flushProbe {
	tb.Helper()
	p, err := flushprobe.New(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return &flushProbe{p}
}

// flushProbe is a flushprobe.Probe that fails the test instead of returning errors.
type flushProbe struct{ p *flushprobe.Probe }

func (p *flushProbe) once(tb testing.TB) time.Duration {
	d, err := p.p.Once()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func meanOf(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

// vmRSS is the process's resident memory in bytes, from /proc/self/status.
func vmRSS(tb testing.TB) int64 {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkScale100k measures a driver holding 100,000 volumes. Directory volumes are created one
// after the other over the unix socket, listed in pages of 100 (every volume exactly once, twice:
// the first pass decodes every record, the second finds the listing cache warm), the driver is
// restarted on that state (start-up reconciliation), and all are deleted one after the other. It
// reports the mean latency of the last 5% of the calls of each phase (5,000 of 100,000) against the
// first 5%, the listing time, the state database's bytes per volume, the process's resident memory
// and Go heap with every volume created (driver and benchmark client share the process), and the
// start-up time.  With fsync=on every change is durable before it is acknowledged, as the driver
// runs; on this machine's disk that makes 100,000 creates and deletes take tens of minutes, so the
// full count is also run with fsync=off (bbolt's NoSync, set only here) and the durable run is made
// at 20,000 volumes. A durable run also times a flush of the disk before every tenth call and
// reports its mean in the first and last windows: on a shared host the flush time moves by a factor
// of two or three within minutes, which the ratio then measures as much as the driver. One
// iteration is a whole run: use -benchtime 1x.  go test -run '^$' -bench
// 'BenchmarkScale100k/volumes=100000/fsync=off' -benchtime 1x -count 3 -timeout 90m
// ./examples/hostpath/hostpath/ go test -run '^$' -bench
// 'BenchmarkScale100k/volumes=20000/fsync=on' -benchtime 1x -count 3 -timeout 90m
// ./examples/hostpath/hostpath/
func BenchmarkScale100k(b *testing.B) {
	for _, bc := range []struct {
		n     int
		fsync bool
	}{{100_000, false}, {20_000, true}, {100_000, true}} {
		b.Run(fmt.Sprintf("volumes=%d/fsync=%s", bc.n, map[bool]string{true: "on", false: "off"}[bc.fsync]), func(b *testing.B) {
			for b.Loop() {
				scaleRun(b, bc.n, bc.fsync)
			}
		})
	}
}

func scaleRun(b *testing.B, n int, fsync bool) {
	const pageSize = 100
	window := n / 20
	ctx := context.Background()
	dir := b.TempDir()
	srv := serveScale(b, dir, fsync)
	if _, err := srv.ctrl.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{}); err != nil {
		b.Fatal(err) // the connection is up before the first timed call
	}
	caps := []*csi.VolumeCapability{{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}}
	var probe *flushProbe
	if fsync {
		probe = newFlushProbe(b, dir)
	}
	ids := make([]string, n)
	start := time.Now()
	createLat, createFlush := sequential(b, n, probe, func(i int) error {
		resp, err := srv.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "scale-" + strconv.Itoa(i), VolumeCapabilities: caps})
		ids[i] = resp.GetVolume().GetVolumeId()
		return err
	})
	createTotal := time.Since(start)

	start = time.Now()
	pages := listEvery(b, srv.ctrl, pageSize, ids)
	listCold := time.Since(start)
	start = time.Now()
	listEvery(b, srv.ctrl, pageSize, ids)
	listWarm := time.Since(start)

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss := vmRSS(b)
	fi, err := os.Stat(filepath.Join(dir, "state", "controller.db"))
	if err != nil {
		b.Fatal(err)
	}
	var used int64
	if err := srv.plugin.Controller.st.view(func(tx *bolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		b.Fatal(err)
	}
	srv.stop()

	srv = serveScale(b, dir, fsync) // restart on the same state: reconciliation of every volume
	startup := srv.opened
	listEvery(b, srv.ctrl, pageSize, ids) // the restart kept every volume
	start = time.Now()
	deleteLat, deleteFlush := sequential(b, n, probe, func(i int) error {
		_, err := srv.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[i]})
		return err
	})
	deleteTotal := time.Since(start)
	listEvery(b, srv.ctrl, pageSize, nil) // nothing is left
	srv.stop()

	ratio := func(lat []time.Duration) float64 {
		return float64(meanOf(lat[n-window:])) / float64(meanOf(lat[:window]))
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	if fsync {
		// The disk's flush time in the first and last windows of each phase: when it moved, the
		// raw ratio measures the host as much as the driver.
		w := window / probeEvery
		b.ReportMetric(us(meanOf(createFlush[:w])), "create-first-flush-us")
		b.ReportMetric(us(meanOf(createFlush[len(createFlush)-w:])), "create-last-flush-us")
		b.ReportMetric(us(meanOf(deleteFlush[:w])), "delete-first-flush-us")
		b.ReportMetric(us(meanOf(deleteFlush[len(deleteFlush)-w:])), "delete-last-flush-us")
	}
	b.ReportMetric(ratio(createLat), "create-last/first")
	b.ReportMetric(us(meanOf(createLat[:window])), "create-first-us")
	b.ReportMetric(us(meanOf(createLat[n-window:])), "create-last-us")
	b.ReportMetric(float64(n)/createTotal.Seconds(), "create-ops/s")
	b.ReportMetric(ratio(deleteLat), "delete-last/first")
	b.ReportMetric(us(meanOf(deleteLat[:window])), "delete-first-us")
	b.ReportMetric(us(meanOf(deleteLat[n-window:])), "delete-last-us")
	b.ReportMetric(float64(n)/deleteTotal.Seconds(), "delete-ops/s")
	b.ReportMetric(listCold.Seconds(), "list-cold-s")
	b.ReportMetric(listWarm.Seconds(), "list-s")
	b.ReportMetric(float64(pages), "list-pages")
	b.ReportMetric(float64(fi.Size())/float64(n), "db-file-bytes/vol")
	b.ReportMetric(float64(used)/float64(n), "db-used-bytes/vol")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
	b.ReportMetric(startup.Seconds(), "startup-s")
}
