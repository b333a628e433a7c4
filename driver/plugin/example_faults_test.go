package plugin_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
)

// stuckArray is a backend whose storage hangs on "pvc-stuck", ignoring the call's context until
// unstuck closes, and refuses connections on "pvc-down".
type stuckArray struct {
	volumes
	unstuck chan struct{}
}

func (a stuckArray) CreateVolume(ctx context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	switch r.Name {
	case "pvc-stuck":
		<-a.unstuck
	case "pvc-down":
		return nil, fmt.Errorf("create on the array: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	}
	return a.volumes.CreateVolume(ctx, r)
}

// Config.BackendTimeout bounds how long a call waits for its backend: the CO gets UNAVAILABLE,
// which it retries, while the backend call goes on holding the volume's name, so a retry before
// the backend returns is ABORTED rather than a second create beside the first. A refused
// connection is UNAVAILABLE too, not INTERNAL.
func ExampleConfig_backendTimeout() {
	array := stuckArray{unstuck: make(chan struct{})}
	d, err := plugin.New(plugin.Config{Name: "example.csikit.dev", VendorVersion: "1.0.0", Controller: array,
		BackendTimeout: 50 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "csikit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "csi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx, lis) }()
	defer func() { cancel(); <-served }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	ctrl := csi.NewControllerClient(conn)
	create := func(name string) {
		_, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}}})
		fmt.Println(name, status.Code(err))
	}

	create("pvc-stuck") // the array hangs: answered after 50ms
	create("pvc-stuck") // the first call is still in the array
	create("pvc-down")
	close(array.unstuck)

	// Output:
	// pvc-stuck Unavailable
	// pvc-stuck Aborted
	// pvc-down Unavailable
}
