package hostpath

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver/plugin"
)

// TestEveryModeReportsTheSamePluginCapabilities: the spec says every instance of a plugin SHALL
// report the same plugin capabilities whatever RPCs it serves, so --mode node and --mode
// controller answer GetPluginCapabilities as --mode both does.
func TestEveryModeReportsTheSamePluginCapabilities(t *testing.T) {
	var want string
	for _, mode := range []string{ModeBoth, ModeController, ModeNode} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			p, err := Open(Config{StateDir: filepath.Join(dir, "state"), NodeID: "node-1", CapacityBytes: 1 << 30}, mode)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			d, err := plugin.New(p.Config())
			if err != nil {
				t.Fatalf("plugin.New in mode %s: %v", mode, err)
			}
			sock := filepath.Join(dir, "csi.sock")
			lis, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Serve(ctx, lis) }()
			defer func() {
				cancel()
				<-done
			}()
			conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			resp, err := csi.NewIdentityClient(conn).GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(resp.GetCapabilities())
			if want == "" {
				want = got
				return
			}
			if got != want {
				t.Errorf("mode %s reports %s, mode both %s", mode, got, want)
			}
		})
	}
}
