package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// fsyncProbe measures the disk's flush latency the way a durable commit pays it: overwrite one
// 4 KiB block of a file that already has it, then fdatasync (the call bbolt makes), on the state
// directory's file system.
type fsyncProbe struct {
	f   *os.File
	buf []byte
}

func newFsyncProbe(tb testing.TB, dir string) *fsyncProbe {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "fsync-probe"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	p := &fsyncProbe{f: f, buf: make([]byte, 4096)}
	if _, err := f.WriteAt(p.buf, 0); err != nil {
		tb.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return p
}

// once writes and syncs one block and returns how long it took.
func (p *fsyncProbe) once(tb testing.TB) time.Duration {
	p.buf[0]++
	start := time.Now()
	if _, err := p.f.WriteAt(p.buf, 0); err != nil {
		tb.Fatal(err)
	}
	if err := unix.Fdatasync(int(p.f.Fd())); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}

// BenchmarkDurableOps measures, in one run and interleaved call by call, the disk's flush
// latency (fsyncProbe) and hostpath's sequential CreateVolume and DeleteVolume of directory
// volumes over the unix socket, each acknowledged only once durable (issue 12, target 4: <= 1.5x
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
