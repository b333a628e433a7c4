package locking_test

import (
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/locking"
)

// A clone holds its new name exclusively and its source shared, so clones of one volume run in
// parallel while a delete of that volume waits or is ABORTED.
func ExampleCSIKeys() {
	clone := &csi.CreateVolumeRequest{Name: "pvc-7", VolumeContentSource: &csi.VolumeContentSource{
		Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "vol-1"}}}}
	for _, k := range locking.CSIKeys(clone) {
		fmt.Printf("%s %q shared=%v\n", k.Kind, k.ID, k.Shared)
	}
	// Output:
	// volume name "pvc-7" shared=false
	// volume "vol-1" shared=true
}

// The interceptor is usable on any gRPC server; the in-memory manager answers a conflict with
// ABORTED at once.
func ExampleUnaryServerInterceptor() {
	server := grpc.NewServer(grpc.ChainUnaryInterceptor(
		locking.UnaryServerInterceptor(idempotency.NewManager(), locking.CSIKeys),
	))
	defer server.Stop()
	fmt.Println("serving with per-resource locks")
	// Output: serving with per-resource locks
}
