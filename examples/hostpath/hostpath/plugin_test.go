package hostpath

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver/drivertest"
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
			srv := drivertest.NewServer(t, p.Config())
			defer srv.Close() // before p.Close: stop serving, then close the state
			resp, err := csi.NewIdentityClient(srv.Conn).GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
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
