package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// epoch is the memdriver clock, so snapshot creation times in golden files never change.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testPlugin is the in-memory driver served on a real unix socket for one test.
type testPlugin struct {
	t       *testing.T
	mem     *memdriver.Driver
	buckets *memdriver.Buckets // COSI plugins only
	sock    string
	env     map[string]string

	mu       sync.Mutex
	requests []any // every unary request the handler saw, for the secrets tests
}

func startPlugin(t *testing.T) *testPlugin {
	t.Helper()
	p := &testPlugin{t: t}
	p.mem = memdriver.New(memdriver.Options{
		NodeID:            "node-1",
		Topology:          driver.Topology{"topology.mem.csikit.dev/zone": "a"},
		MaxVolumesPerNode: 16,
		MutableParameters: []string{"iops"},
		Now:               func() time.Time { return epoch },
	})
	p.serve(plugin.Config{
		Name:             "mem.csikit.dev",
		VendorVersion:    "1.0.0",
		Manifest:         map[string]string{"build": "test"},
		Controller:       p.mem,
		Node:             p.mem,
		GroupController:  p.mem,
		SnapshotMetadata: p.mem,
		VolumeGroups:     &plugin.VolumeGroupConfig{Controller: p.mem},
		Features: driver.Features{
			CloneVolume:                    true,
			PublishReadonly:                true,
			ListVolumesPublishedNodes:      true,
			SingleNodeMultiWriter:          true,
			VolumeAccessibilityConstraints: true,
		},
	})
	p.env = map[string]string{envEndpoint: "unix://" + p.sock}
	return p
}

// serve serves cfg, with every unary request recorded in p.requests, on a fresh unix socket until
// the test ends.
func (p *testPlugin) serve(cfg plugin.Config) {
	t := p.t
	t.Helper()
	cfg.CheckResponses = true
	cfg.Logger = zap.NewNop()
	cfg.UnaryInterceptors = []grpc.UnaryServerInterceptor{
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			p.mu.Lock()
			p.requests = append(p.requests, req)
			p.mu.Unlock()
			return h(ctx, req)
		},
	}
	p.sock = drivertest.NewServer(t, cfg).Socket
}

// reached returns how many unary requests the plugin has seen, to check that a bad command line
// never reaches it.
func (p *testPlugin) reached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.requests)
}

// result is what one csictl invocation produced.
type result struct {
	stdout, stderr string
	code           int
}

// run executes csictl with args against the plugin, the way main would.
func (p *testPlugin) run(args ...string) result {
	p.t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut, func(k string) string { return p.env[k] })
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// ok runs args and fails the test unless they succeed.
func (p *testPlugin) ok(args ...string) string {
	p.t.Helper()
	r := p.run(args...)
	if r.code != exitOK {
		p.t.Fatalf("csictl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// golden compares got with testdata/name.golden, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
