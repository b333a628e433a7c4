package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// serveInProcess runs the driver on a fresh state directory, logging at info level to a file as
// an operator would, and returns a controller client over its unix socket.
func serveInProcess(tb testing.TB) (csi.ControllerClient, func()) {
	tb.Helper()
	env := serveInProcessPlugin(tb, tb.TempDir())
	return env.ctrl, env.stop
}

// phase runs n calls with the given number of clients and records each call's latency in
// call order of completion.
func phase(tb testing.TB, n, clients int, call func(i int) error) (lat []time.Duration, total time.Duration) {
	tb.Helper()
	lat = make([]time.Duration, n)
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= n {
					return
				}
				t0 := time.Now()
				err := call(i)
				lat[i] = time.Since(t0)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
	return lat, time.Since(start)
}

func mean(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s / time.Duration(len(ds))
}

// BenchmarkScale creates and deletes 10,000 volumes over the unix socket, every operation
// committed to disk (bbolt fsync), sequentially and with 8 concurrent clients, and lists 10,000
// volumes in pages of 100. Run it once:
//
//	go test -run '^$' -bench BenchmarkScale -benchtime 1x ./examples/hostpath/
func BenchmarkScale(b *testing.B) {
	const n, window = 10000, 500
	caps := []*csi.VolumeCapability{mountCapability("")}
	for b.Loop() {
		for _, clients := range []int{1, 8} {
			ctrl, stop := serveInProcess(b)
			ctx := context.Background()
			ids := make([]string, n)
			createLat, createTotal := phase(b, n, clients, func(i int) error {
				resp, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: fmt.Sprintf("scale-%05d", i), VolumeCapabilities: caps})
				if err == nil {
					ids[i] = resp.GetVolume().GetVolumeId()
				}
				return err
			})
			if clients == 1 {
				listStart := time.Now()
				seen := map[string]int{}
				token, pages := "", 0
				for {
					resp, err := ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 100, StartingToken: token})
					if err != nil {
						b.Fatal(err)
					}
					pages++
					for _, e := range resp.GetEntries() {
						seen[e.GetVolume().GetVolumeId()]++
					}
					if token = resp.GetNextToken(); token == "" {
						break
					}
				}
				for _, id := range ids {
					if seen[id] != 1 {
						b.Fatalf("volume %s listed %d times", id, seen[id])
					}
				}
				if len(seen) != n {
					b.Fatalf("listed %d volumes, want %d", len(seen), n)
				}
				b.ReportMetric(float64(time.Since(listStart).Milliseconds()), "list-10k-ms")
				b.ReportMetric(float64(pages), "list-pages")
			}
			deleteLat, deleteTotal := phase(b, n, clients, func(i int) error {
				_, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[i]})
				return err
			})
			stop()
			tag := fmt.Sprintf("c%d", clients)
			report := func(op string, lat []time.Duration, total time.Duration) {
				first, last := mean(lat[:window]), mean(lat[n-window:])
				b.ReportMetric(float64(n)/total.Seconds(), tag+"-"+op+"-ops/s")
				b.ReportMetric(float64(last)/float64(first), tag+"-"+op+"-last/first")
				b.ReportMetric(float64(first.Microseconds()), tag+"-"+op+"-first500-us")
				b.ReportMetric(float64(last.Microseconds()), tag+"-"+op+"-last500-us")
				// At 10,000 volumes: throughput over the last 500 calls of the create phase (the
				// store then holds 9,500-10,000 volumes), clients in parallel.
				b.ReportMetric(float64(clients)/last.Seconds(), tag+"-"+op+"-ops/s-at-10k")
			}
			report("create", createLat, createTotal)
			report("delete", deleteLat, deleteTotal)
		}
	}
}
