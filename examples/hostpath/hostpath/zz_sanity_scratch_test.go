package hostpath

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"go.uber.org/zap"

	"github.com/csikit/csikit/driver"
)

func TestScratchSanity(t *testing.T) {
	if os.Getenv("SCRATCH_SANITY") == "" {
		t.Skip("scratch")
	}
	dir := t.TempDir()
	p, err := Open(Config{StateDir: filepath.Join(dir, "state"), NodeID: "node-1", MaxVolumesPerNode: 16, MutableParameters: []string{"iops"}}, ModeBoth)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := p.Config()
	cfg.CheckResponses = true
	lg, _ := zap.NewDevelopment()
	if os.Getenv("SCRATCH_LOG") != "" {
		cfg.Logger = lg
	}
	d, err := driver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "csi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Serve(ctx, lis)
	sc := sanity.NewTestConfig()
	sc.Address = "unix://" + sock
	sc.TargetPath = filepath.Join(dir, "target")
	sc.StagingPath = filepath.Join(dir, "staging")
	sc.TestVolumeSize = 64 << 20
	sc.TestVolumeExpandSize = 128 << 20
	sc.TestVolumeMutableParameters = map[string]string{"iops": "100"}
	sc.TestNodeVolumeAttachLimit = true
	sc.IdempotentCount = 5
	sanity.Test(t, sc)
}
