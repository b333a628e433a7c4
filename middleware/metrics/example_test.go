package metrics_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/metrics"
)

// Install the interceptors on a gRPC server and wrap the lock table, so that lock conflicts are
// counted by resource kind. Every call then shows in csi_plugin_operations_seconds.
func Example() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, "hostpath.csikit.dev", metrics.WithProcessAndGoCollectors())
	if err != nil {
		panic(err)
	}
	locker := m.Locker(idempotency.NewManager()) // hand this to the locking middleware
	_ = locker
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(m.StreamServerInterceptor()),
	)
	defer srv.Stop()

	// What the server does for a DeleteVolume call that its handler answers NOT_FOUND.
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/DeleteVolume"}
	_, _ = m.UnaryServerInterceptor()(context.Background(), nil, info, func(context.Context, any) (any, error) {
		return nil, status.Error(codes.NotFound, "no such volume")
	})

	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		if f.GetName() != "csi_plugin_operations_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				fmt.Printf("%s=%s ", l.GetName(), l.GetValue())
			}
			fmt.Println("count", s.GetHistogram().GetSampleCount())
		}
	}
	// Output: driver_name=hostpath.csikit.dev grpc_status_code=NotFound method_name=/csi.v1.Controller/DeleteVolume count 1
}
