package idempotency

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
)

func BenchmarkLockUnlockUncontended(b *testing.B) {
	m := NewManager()
	ctx := context.Background()
	k := Key{Kind: "volume", ID: "pvc-6f1c2a7e-0d1b-4c55-9a39-3b8e1f2d4c10"}
	b.ReportAllocs()
	for b.Loop() {
		unlock, err := m.Lock(ctx, k)
		if err != nil {
			b.Fatal(err)
		}
		unlock()
	}
}

func BenchmarkLockUnlockParallel(b *testing.B) {
	m := NewManager()
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		k := Key{Kind: "volume", ID: "pvc-" + strconv.FormatInt(next.Add(1), 10)}
		for pb.Next() {
			unlock, err := m.Lock(ctx, k)
			if err != nil {
				b.Error(err)
				return
			}
			unlock()
		}
	})
}

func BenchmarkLockUnlockThreeKeys(b *testing.B) {
	m := NewManager()
	ctx := context.Background()
	keys := []Key{
		{Kind: "snapshot-name", ID: "snap-2024-11-22"},
		{Kind: "volume", ID: "pvc-6f1c2a7e-0d1b-4c55-9a39-3b8e1f2d4c10", Shared: true},
		{Kind: "snapshot", ID: "snap-9"},
	}
	b.ReportAllocs()
	for b.Loop() {
		unlock, err := m.Lock(ctx, keys...)
		if err != nil {
			b.Fatal(err)
		}
		unlock()
	}
}

func BenchmarkFingerprintCreateVolume(b *testing.B) {
	req := baseCreate()
	b.ReportAllocs()
	for b.Loop() {
		_ = Fingerprint(req, "name")
	}
}
