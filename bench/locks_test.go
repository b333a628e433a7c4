package bench

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/dell/gocsi/middleware/serialvolume"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/idempotency"
)

// distinctIDs is how many volume IDs each locker sees once.
const distinctIDs = 1_000_000

// lockCycle locks and unlocks n distinct volume IDs, one after the other.
type lockCycle func(n int) error

// csikitCycle drives csikit's in-memory lock table (what the locking middleware uses).
func csikitCycle(m *idempotency.Manager) lockCycle {
	return func(n int) error {
		ctx := context.Background()
		for i := range n {
			unlock, err := m.Lock(ctx, idempotency.Key{Kind: "volume", ID: volumeID(i)})
			if err != nil {
				return err
			}
			unlock()
		}
		return nil
	}
}

// gocsiCycle drives gocsi's serial volume interceptor with its default in-memory lock
// provider (unexported, so it is reached through the interceptor, as a gocsi plugin reaches it)
// with a ControllerPublishVolume per ID.
func gocsiCycle(i grpc.UnaryServerInterceptor) lockCycle {
	info := &grpc.UnaryServerInfo{FullMethod: csi.Controller_ControllerPublishVolume_FullMethodName}
	noop := func(context.Context, any) (any, error) { return nil, nil }
	return func(n int) error {
		ctx := context.Background()
		for k := range n {
			if _, err := i(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: volumeID(k)}, info, noop); err != nil {
				return err
			}
		}
		return nil
	}
}

// volumeID is a fresh string per call, so that only the lock table can keep it alive.
func volumeID(i int) string { return "pvc-" + strconv.Itoa(1_000_000_000+i) }

// liveHeap returns the live heap after a full collection.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// retained runs build (which creates a locker) and then its cycle over n IDs, and returns the
// live heap the locker holds afterwards, its construction included, and how long the cycle took.
func retained(n int, build func() (lockCycle, any)) (bytes int64, took time.Duration, err error) {
	before := liveHeap()
	cycle, keep := build()
	start := time.Now()
	err = cycle(n)
	took = time.Since(start)
	after := liveHeap()
	runtime.KeepAlive(keep)
	return int64(after) - int64(before), took, err
}

var lockers = []struct {
	name  string
	build func() (lockCycle, any)
}{
	{"csikit", func() (lockCycle, any) { m := idempotency.NewManager(); return csikitCycle(m), m }},
	{"gocsi", func() (lockCycle, any) { i := serialvolume.New(); return gocsiCycle(i), i }},
}

// TestLockRetainedHeap prints the heap each lock table keeps after 1,000,000 distinct volume IDs
// were locked and unlocked once, and holds csikit to its target of at most 1 MiB.
func TestLockRetainedHeap(t *testing.T) {
	for _, l := range lockers {
		bytes, took, err := retained(distinctIDs, l.build)
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		t.Logf("%s: %d distinct IDs in %v, retained %d bytes (%.1f B per ID)",
			l.name, distinctIDs, took.Round(time.Millisecond), bytes, float64(bytes)/distinctIDs)
		if l.name == "csikit" && bytes > 1<<20 {
			t.Errorf("csikit retained %d bytes after %d distinct IDs, the target is <= 1 MiB", bytes, distinctIDs)
		}
	}
}

// BenchmarkLockRetainedHeap is TestLockRetainedHeap as a benchmark: one op is a fresh lock table
// taking and releasing 1,000,000 distinct volume IDs.
func BenchmarkLockRetainedHeap(b *testing.B) {
	for _, l := range lockers {
		b.Run(l.name, func(b *testing.B) {
			var total int64
			var took time.Duration
			for i := 0; i < b.N; i++ {
				bytes, d, err := retained(distinctIDs, l.build)
				if err != nil {
					b.Fatal(err)
				}
				total += bytes
				took += d
			}
			b.ReportMetric(float64(total)/float64(b.N), "retained-bytes")
			b.ReportMetric(float64(total)/float64(b.N)/distinctIDs, "retained-B/ID")
			b.ReportMetric(float64(took.Nanoseconds())/float64(b.N)/distinctIDs, "ns/lock")
		})
	}
}
