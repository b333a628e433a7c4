package recovery_test

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/middleware/recovery"
	"github.com/csikit/csikit/middleware/requestid"
)

func Example() {
	logger := zap.NewNop() // the plugin's logger
	srv := grpc.NewServer(
		// Recovery first, so that it also catches panics in the interceptors
		// after it.
		grpc.ChainUnaryInterceptor(
			recovery.UnaryServerInterceptor(recovery.WithLogger(logger)),
			requestid.UnaryServerInterceptor(),
		),
		grpc.ChainStreamInterceptor(
			recovery.StreamServerInterceptor(recovery.WithLogger(logger)),
			requestid.StreamServerInterceptor(),
		),
	)
	defer srv.Stop()

	// What the server does with a handler that panics.
	icpt := recovery.UnaryServerInterceptor(
		recovery.WithLogger(logger),
		recovery.WithRequestID(func(ctx context.Context) (context.Context, string) { return ctx, "req-7" }),
	)
	_, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"},
		func(ctx context.Context, req any) (any, error) {
			var m map[string]int
			m["boom"]++ // assignment to entry in nil map
			return nil, nil
		})
	fmt.Println(err)
	// Output: rpc error: code = Internal desc = CreateVolume: internal error (panic); see the plugin log, request ID req-7
}
