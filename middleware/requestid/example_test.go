package requestid_test

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/csikit/csikit/middleware/requestid"
)

func Example() {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(requestid.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(requestid.StreamServerInterceptor()),
	)
	defer srv.Stop()

	// What the server does for a call whose client sent x-request-id.
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-request-id", "provisioner-7"))
	handler := func(ctx context.Context, req any) (any, error) {
		fmt.Println("handling request", requestid.FromContext(ctx))
		return nil, nil
	}
	_, _ = requestid.UnaryServerInterceptor()(ctx, nil, &grpc.UnaryServerInfo{}, handler)
	// Output: handling request provisioner-7
}
