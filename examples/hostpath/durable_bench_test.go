package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/examples/hostpath/internal/flushprobe"
)

// newFsyncProbe opens a flush probe on dir's file system, closed when the test ends.
func newFsyncProbe(tb testing.TB, dir string) *fsyncProbe {
	tb.Helper()
	p, err := flushprobe.New(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return &fsyncProbe{p}
}

// fsyncProbe is a flushprobe.Probe that fails the test instead of returning errors.
type fsyncProbe struct{ p *flushprobe.Probe }

func (p *fsyncProbe) once(tb testing.TB) time.Duration {
	d, err := p.p.Once()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// BenchmarkDurableOps measures, in one run and interleaved call by call, the disk's flush
// latency (fsyncProbe) and hostpath's sequential CreateVolume and DeleteVolume of directory
// volumes over the unix socket, each acknowledged only once durable (target: <= 1.5x
// one flush per operation). It reports the p50 of each and the ratios.
//
//	go test -run '^$' -bench 'BenchmarkDurableOps$' -benchtime 2000x ./examples/hostpath/
//
// b.N is the number of volumes created and then deleted.
func BenchmarkDurableOps(b *testing.B) {
	dir := b.TempDir()
	env := serveInProcessPlugin(b, dir)
	defer env.stop()
	probe := newFsyncProbe(b, env.stateDir)
	ctx := context.Background()
	caps := []*csi.VolumeCapability{mountCapability("")}
	var fsyncs, creates, deletes []time.Duration
	var ids []string
	i := 0
	for b.Loop() {
		fsyncs = append(fsyncs, probe.once(b))
		start := time.Now()
		resp, err := env.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: fmt.Sprintf("durable-%06d", i), VolumeCapabilities: caps})
		if err != nil {
			b.Fatal(err)
		}
		creates = append(creates, time.Since(start))
		ids = append(ids, resp.GetVolume().GetVolumeId())
		i++
	}
	for _, id := range ids {
		fsyncs = append(fsyncs, probe.once(b))
		start := time.Now()
		if _, err := env.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			b.Fatal(err)
		}
		deletes = append(deletes, time.Since(start))
	}
	f50, c50, d50 := percentile(fsyncs, 0.5), percentile(creates, 0.5), percentile(deletes, 0.5)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(f50), "fsync-p50-us")
	b.ReportMetric(us(percentile(fsyncs, 0.9)), "fsync-p90-us")
	b.ReportMetric(us(c50), "create-p50-us")
	b.ReportMetric(us(d50), "delete-p50-us")
	b.ReportMetric(float64(c50)/float64(f50), "create/fsync")
	b.ReportMetric(float64(d50)/float64(f50), "delete/fsync")
	b.ReportMetric(float64(mean(creates))/float64(mean(fsyncs)), "create/fsync-mean")
	b.ReportMetric(float64(mean(deletes))/float64(mean(fsyncs)), "delete/fsync-mean")
}
