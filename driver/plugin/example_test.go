package plugin_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
)

// volumes is a tiny backend: it implements only the required Controller interface, so the
// plugin advertises CREATE_DELETE_VOLUME and nothing else.
type volumes struct{}

func (volumes) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	return &driver.Volume{ID: "vol-" + r.Name, CapacityBytes: r.Capacity.RequiredBytes}, nil
}

func (volumes) DeleteVolume(_ context.Context, r *driver.DeleteVolumeRequest) error {
	return fmt.Errorf("volume %q: %w", r.VolumeID, driver.ErrNotFound)
}

func (volumes) ValidateVolumeCapabilities(context.Context, *driver.ValidateVolumeCapabilitiesRequest) error {
	return nil
}

// A backend, a name and a version make a plugin; validation, error codes and capabilities come
// from the library.
func ExampleNew() {
	d, err := plugin.New(plugin.Config{Name: "example.csikit.dev", VendorVersion: "1.0.0", Controller: volumes{}})
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
	mount := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}

	resp, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{mount}})
	fmt.Println(resp.GetVolume().GetVolumeId(), err)

	// A request that breaks the spec never reaches the backend.
	_, err = ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-2"})
	fmt.Println(status.Code(err), status.Convert(err).Message())

	// ErrNotFound from DeleteVolume means "already deleted": the spec's answer is OK.
	_, err = ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "vol-gone"})
	fmt.Println(err)

	// An RPC the backend does not implement is UNIMPLEMENTED, and not advertised.
	_, err = ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	fmt.Println(status.Code(err))

	// Output:
	// vol-pvc-1 <nil>
	// InvalidArgument CreateVolume: volume_capabilities: required field is missing
	// <nil>
	// Unimplemented
}

// A plugin binary reads CSI_ENDPOINT, serves until SIGTERM or SIGINT, then stops gracefully and
// removes its socket.
func ExamplePlugin_Run() {
	d, err := plugin.New(plugin.Config{Name: "example.csikit.dev", VendorVersion: "1.0.0", Controller: volumes{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := d.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
