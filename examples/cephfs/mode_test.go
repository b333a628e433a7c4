package main

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/cephfs/cephfs"
)

// TestModes: each --mode gives a configuration plugin.New accepts (the node-only one failed at
// start-up with "Features.CloneVolume is a controller capability but no Controller backend is
// configured", as the node plugin of deploy/kubernetes/cephfs did), serving what the mode names,
// and every mode reports the same plugin capabilities, as the spec wants of one plugin's
// processes. No Ceph is needed: the driver contacts no one until a call brings a key.
func TestModes(t *testing.T) {
	var first []string
	for _, tc := range []struct {
		mode             string
		controller, node bool
	}{
		{"both", true, true},
		{"controller", true, false},
		{"node", false, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg, d, err := config(cephfs.Config{Monitors: "127.0.0.1:1", NodeID: "n1"}, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Close)
			if _, err := plugin.New(cfg); err != nil {
				t.Fatalf("plugin.New: %v", err)
			}
			srv := drivertest.NewServer(t, cfg)
			ctx := context.Background()
			pc, err := csi.NewIdentityClient(srv.Conn).GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range pc.GetCapabilities() {
				got = append(got, c.String())
			}
			slices.Sort(got)
			if first == nil {
				first = got
			} else if !slices.Equal(got, first) {
				t.Errorf("plugin capabilities %v, mode both reports %v", got, first)
			}
			_, cerr := csi.NewControllerClient(srv.Conn).ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
			_, nerr := csi.NewNodeClient(srv.Conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
			if (cerr == nil) != tc.controller || (nerr == nil) != tc.node {
				t.Errorf("controller served: %v (%v), node served: %v (%v); want %v and %v", cerr == nil, cerr, nerr == nil, nerr, tc.controller, tc.node)
			}
		})
	}
	if _, _, err := config(cephfs.Config{Monitors: "127.0.0.1:1"}, "all"); err == nil {
		t.Error("mode \"all\" accepted")
	}
}
