package validation_test

import (
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/middleware/validation"
)

func ExampleRequest() {
	req := &csi.CreateVolumeRequest{
		Name: "pvc-1",
		VolumeCapabilities: []*csi.VolumeCapability{
			{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			},
			{
				AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
				AccessMode: &csi.VolumeCapability_AccessMode{},
			},
		},
		Secrets: map[string]string{"password": "hunter2"},
	}
	err := validation.Request(req)
	st := status.Convert(err)
	fmt.Println(st.Code())
	fmt.Println(st.Message())
	// Output:
	// InvalidArgument
	// CreateVolume: volume_capabilities[1].access_mode.mode: required field is missing
}

func ExampleResponse() {
	err := validation.Response(&csi.CreateVolumeResponse{Volume: &csi.Volume{CapacityBytes: 1 << 30}})
	fmt.Println(err)
	// Output:
	// rpc error: code = Internal desc = CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_id: required field is missing
}

func ExamplePluginName() {
	fmt.Println(validation.PluginName("hostpath.csi.k8s.io"))
	fmt.Println(validation.PluginName("my_driver"))
	// Output:
	// <nil>
	// plugin name: must follow domain name notation: alphanumerics, '-' and '.', every dot-separated label beginning and ending with an alphanumeric
}

func ExampleUnaryServerInterceptor() {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(validation.UnaryServerInterceptor(validation.WithResponseChecks(true))),
		grpc.ChainStreamInterceptor(validation.StreamServerInterceptor(validation.WithResponseChecks(true))),
	)
	defer srv.Stop()
	// csi.RegisterIdentityServer(srv, ...); srv.Serve(listener)
	fmt.Println("ok")
	// Output: ok
}
