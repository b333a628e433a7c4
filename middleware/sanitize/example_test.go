package sanitize_test

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/csikit/csikit/middleware/sanitize"
)

func Example() {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(sanitize.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(sanitize.StreamServerInterceptor()),
	)
	defer srv.Stop()

	// What the client sees for errors a backend might return.
	icpt := sanitize.UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	withDetails, _ := status.New(codes.NotFound, "").WithDetails(wrapperspb.String("debug"))
	for _, backendErr := range []error{
		errors.New("mkfs exited with status 1"),
		withDetails.Err(),
		context.DeadlineExceeded,
	} {
		_, err := icpt(context.Background(), nil, info, func(context.Context, any) (any, error) { return nil, backendErr })
		s := status.Convert(err)
		fmt.Printf("%v: %s (%d details)\n", s.Code(), s.Message(), len(s.Details()))
	}
	// Output:
	// Internal: CreateVolume: mkfs exited with status 1 (0 details)
	// NotFound: CreateVolume: failed with NotFound and no message (0 details)
	// DeadlineExceeded: CreateVolume: context deadline exceeded (0 details)
}
