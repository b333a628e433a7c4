package metrics

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// BenchmarkUnaryInterceptor measures what the interceptor adds to a call: "bare" calls the
// handler directly, the others go through the interceptor after the method's series exist.
func BenchmarkUnaryInterceptor(b *testing.B) {
	m, err := New(prometheus.NewRegistry(), "bench.csikit.dev")
	if err != nil {
		b.Fatal(err)
	}
	ic := m.UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	fail := status.Error(codes.NotFound, "x")
	ok := func(context.Context, any) (any, error) { return nil, nil }
	notFound := func(context.Context, any) (any, error) { return nil, fail }
	ctx := context.Background()

	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ok(ctx, nil)
		}
	})
	b.Run("ok", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ic(ctx, nil, info, ok)
		}
	})
	b.Run("error", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ic(ctx, nil, info, notFound)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_, _ = ic(ctx, nil, info, ok)
			}
		})
	})
}
