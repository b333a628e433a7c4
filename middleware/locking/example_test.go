package locking_test

import (
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/locking"
)

// The interceptor is usable on any gRPC server; the in-memory manager answers a conflict with
// ABORTED at once.
func ExampleUnaryServerInterceptor() {
	server := grpc.NewServer(grpc.ChainUnaryInterceptor(
		locking.UnaryServerInterceptor(idempotency.NewManager(), func(req any) []idempotency.Key {
			if r, ok := req.(*csi.DeleteVolumeRequest); ok {
				return []idempotency.Key{{Kind: "volume", ID: r.GetVolumeId()}}
			}
			return nil
		}),
	))
	defer server.Stop()
	fmt.Println("serving with per-resource locks")
	// Output: serving with per-resource locks
}
