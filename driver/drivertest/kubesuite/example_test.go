package kubesuite_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/drivertest/kubesuite"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// Kubernetes' storage e2e suite (e2e.test -storage.testdriver=FILE -ginkgo.focus=External.Storage)
// learns what to test from a definition file. Describe writes it from what the
// driver advertises, plus what CSI cannot tell (block volumes, fs types, sizes, StorageClass
// parameters); point it at the deployed driver's socket, or serve your Config as here.
func ExampleDescribe() {
	TestWriteKubernetesDefinition := func(t *testing.T) {
		srv := drivertest.NewServer(t, plugin.Config{
			Name: "mem.csikit.dev", VendorVersion: "1",
			Controller: memdriver.New(memdriver.Options{}), Node: memdriver.New(memdriver.Options{}),
		})
		def, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{
			Block:                  true,
			FSTypes:                []string{"ext4", "xfs"},
			StorageClassParameters: map[string]string{"kind": "file"},
		})
		if err != nil {
			t.Fatal(err)
		}
		path, err := def.WriteFiles("/tmp/e2e-mem")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run: e2e.test -storage.testdriver=%s -ginkgo.focus='External.Storage'", path)
	}
	_ = TestWriteKubernetesDefinition
}

// A driver deployed as Kubernetes deploys most, its controller in a StatefulSet and its node
// plugin in a DaemonSet, is described from both sockets: the controller's answers for what the
// sidecars read, the node's for what kubelet reads.
func ExampleDescribeSplit() {
	describe := func(ctx context.Context, controller, node grpc.ClientConnInterface) (string, error) {
		def, err := kubesuite.DescribeSplit(ctx, controller, node, kubesuite.Options{
			// A VolumeAttributesClass the driver accepts turns on the volume-modify specs.
			ModifyParameters: map[string]string{"iops": "3000"},
		})
		if err != nil {
			return "", err
		}
		return def.WriteFiles("/tmp/e2e-split")
	}
	_ = describe
}
