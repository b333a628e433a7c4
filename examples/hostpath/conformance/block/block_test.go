// Package block runs the conformance suite against the hostpath driver with raw block volumes
// (image files on loop devices, published as device nodes). Ginkgo runs one suite per test
// binary, hence a package of its own beside the filesystem run.
package block

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

func TestConformanceBlock(t *testing.T) {
	dir := t.TempDir()
	p, err := hostpath.Open(hostpath.Config{
		StateDir:          filepath.Join(dir, "state"),
		NodeID:            "conformance-node",
		MaxVolumesPerNode: 32,
		MutableParameters: []string{"iops"},
	}, hostpath.ModeBoth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := p.Config()
	cfg.CheckResponses = true
	privileged := os.Geteuid() == 0
	if !privileged {
		t.Log("not root: the specs that attach loop devices and mount are skipped")
	}
	res := drivertest.CSI(t, cfg, drivertest.Options{
		Privileged:                  privileged,
		TestVolumeAccessType:        "block",
		TestVolumeSize:              64 << 20,
		TestVolumeExpandSize:        128 << 20,
		TestVolumeMutableParameters: map[string]string{"iops": "3000"},
		TestNodeVolumeAttachLimit:   true,
		IdempotentCount:             5,
	})
	t.Logf("specs: %d ran, %d passed, %d skipped, %d failed", res.Ran, res.Passed, res.Skipped, res.Failed)
	if res.Failed != 0 {
		t.Fatalf("%d specs failed", res.Failed)
	}
}
