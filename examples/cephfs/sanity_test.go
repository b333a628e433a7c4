package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/internal/cephtest"
	"github.com/csikit/csikit/internal/testenv"
)

// TestSanityScript runs sanity.sh, the upstream csi-sanity v5.6.0 binary against the built
// driver with real ceph-fuse mounts, on this test binary's cluster: it passes only with no failed
// spec, no mount or subvolume left behind, no key in the driver's debug log and a clean stop.
func TestSanityScript(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	testenv.Root(t, "csi-sanity's node specs mount CephFS with ceph-fuse")
	c := cephtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	script, err := filepath.Abs("sanity.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", script, c.Dir)
	out, err := cmd.CombinedOutput()
	t.Logf("sanity.sh:\n%s", out)
	if err != nil {
		t.Fatalf("sanity.sh: %v", err)
	}
	if !strings.Contains(string(out), "cephfs conforms") {
		t.Fatal("sanity.sh exited 0 without its verdict line")
	}
}
