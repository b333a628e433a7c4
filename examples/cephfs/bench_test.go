package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ceph/go-ceph/cephfs/admin"
	"github.com/ceph/go-ceph/rados"
	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/cephfs/cephfs"
)

// BenchmarkCreateDelete measures one CreateVolume plus one DeleteVolume through the driver's
// gRPC socket against the same `ceph fs subvolume` work done directly with go-ceph on a
// connection of the same user, in the same run:
//
//   - direct: `subvolume create` + `subvolume rm`, the least a volume costs;
//   - direct-same-ops: the mgr commands the driver sends, in its order (info, create, info,
//     metadata set; info, snapshot ls, rm): what idempotency by name and the crash-safe record
//     cost, without csikit;
//   - driver: the CSI calls, through csikit's plugin.
//
// Each iteration runs all three, taking turns; the p50 of each is reported (ns/op is the sum of
// the three). Run it with
//
//	cd examples/cephfs && go test -run XXX -bench CreateDelete -benchtime 150x -count 2 .
func BenchmarkCreateDelete(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	conn, err := rados.NewConnWithUser(testUser)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range [][2]string{{"mon_host", e.c.MonHost}, {"key", e.key()}} {
		if err := conn.SetConfigOption(o[0], o[1]); err != nil {
			b.Fatal(err)
		}
	}
	if err := conn.Connect(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Shutdown)
	fsa := admin.NewFromConn(conn)
	fs, group := e.c.CephFS.Name, "bench"
	if err := fsa.CreateSubVolumeGroup(fs, group, nil); err != nil {
		b.Fatal(err)
	}
	opts := &admin.SubVolumeOptions{Size: 1 << 20, Mode: 0o777}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}

	direct := func(name string) {
		must(fsa.CreateSubVolume(fs, group, name, opts))
		must(fsa.RemoveSubVolume(fs, group, name))
	}
	sameOps := func(name string) {
		if _, err := fsa.SubVolumeInfo(fs, group, name); err == nil {
			b.Fatal("exists already")
		}
		must(fsa.CreateSubVolume(fs, group, name, opts))
		_, err := fsa.SubVolumeInfo(fs, group, name)
		must(err)
		must(fsa.SetMetadata(fs, group, name, "csikit.volume", `{"name":"`+name+`","fingerprint":"0123456789abcdefghijkl"}`))
		_, err = fsa.SubVolumeInfo(fs, group, name)
		must(err)
		_, err = fsa.ListSubVolumeSnapshots(fs, group, name)
		must(err)
		must(fsa.RemoveSubVolumeWithFlags(fs, group, name, admin.SubVolRmFlags{Force: true}))
	}
	// bounded runs one Ceph call as the driver does (cephfs.call): in a goroutine of its own,
	// raced against a timer, so that the hop's cost can be told from csikit's.
	bounded := func(f func() error) {
		done := make(chan error, 1)
		timer := time.NewTimer(time.Minute)
		defer timer.Stop()
		go func() { done <- f() }()
		select {
		case err := <-done:
			must(err)
		case <-timer.C:
			b.Fatal("a Ceph call took a minute")
		}
	}
	infoErr := func(name string, wantErr bool) func() error {
		return func() error {
			_, err := fsa.SubVolumeInfo(fs, group, name)
			if (err != nil) != wantErr {
				return fmt.Errorf("subvolume info %s: %v", name, err)
			}
			return nil
		}
	}
	sameOpsBounded := func(name string) {
		bounded(infoErr(name, true))
		bounded(func() error { return fsa.CreateSubVolume(fs, group, name, opts) })
		bounded(infoErr(name, false))
		bounded(func() error {
			return fsa.SetMetadata(fs, group, name, "csikit.volume", `{"name":"`+name+`","fingerprint":"0123456789abcdefghijkl"}`)
		})
		bounded(infoErr(name, false))
		bounded(func() error { _, err := fsa.ListSubVolumeSnapshots(fs, group, name); return err })
		bounded(func() error { return fsa.RemoveSubVolumeWithFlags(fs, group, name, admin.SubVolRmFlags{Force: true}) })
	}
	cfg, _, err := config(cephfs.Config{Monitors: e.c.MonHost, FSName: fs, Group: group, NodeID: "bench", Timeout: 10 * time.Second}, "controller")
	if err != nil {
		b.Fatal(err)
	}
	srv := drivertest.NewServer(b, cfg)
	ctrl := csi.NewControllerClient(srv.Conn)
	caps := []*csi.VolumeCapability{mountCap()}
	viaDriver := func(name string) {
		v, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
			VolumeCapabilities: caps, Secrets: e.secrets})
		must(err)
		_, err = ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.Volume.VolumeId, Secrets: e.secrets})
		must(err)
	}
	// The four take turns, in a rotating order, so that the cluster's background work (the
	// purge of removed subvolumes) and the machine's load fall on each alike.
	ways := []struct {
		name  string
		cycle func(string)
		times []time.Duration
	}{{"direct", direct, nil}, {"direct-same-ops", sameOps, nil}, {"direct-same-ops-bounded", sameOpsBounded, nil}, {"driver", viaDriver, nil}}
	b.ResetTimer()
	for i := range b.N {
		for k := range ways {
			w := &ways[(i+k)%len(ways)]
			start := time.Now()
			w.cycle(fmt.Sprintf("bench-%s-%d", w.name, i))
			w.times = append(w.times, time.Since(start))
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	for _, w := range ways {
		slices.Sort(w.times)
		p50[w.name] = float64(w.times[len(w.times)/2].Microseconds()) / 1000
		b.ReportMetric(p50[w.name], w.name+"-p50-ms")
	}
	// The targets' ratios: the driver against the same Ceph calls made directly, and against
	// the same calls each bounded as the driver bounds them.
	b.ReportMetric(p50["driver"]/p50["direct-same-ops"], "driver/same-ops")
	b.ReportMetric(p50["driver"]/p50["direct-same-ops-bounded"], "driver/same-ops-bounded")
}
