package plugin_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/memdriver"
)

// gatedNode holds the first NodePublishVolume of each gated target path inside the backend until
// its gate closes, telling the test through entered that it got there. Later calls for the same
// target pass straight through, so a call that wrongly got past the lock returns instead of
// hanging the test.
type gatedNode struct {
	*memdriver.Driver
	entered chan string
	mu      sync.Mutex
	gates   map[string]chan struct{}
}

func (g *gatedNode) NodePublishVolume(ctx context.Context, r *driver.NodePublishVolumeRequest) error {
	g.mu.Lock()
	gate, ok := g.gates[r.TargetPath]
	delete(g.gates, r.TargetPath)
	g.mu.Unlock()
	if ok {
		g.entered <- r.TargetPath
		<-gate
	}
	return g.Driver.NodePublishVolume(ctx, r)
}

// TestNodePublishLocksPerTarget: two pods on one node using one multi-pod volume are two
// NodePublishVolume calls with one volume ID and one staging path but two target paths. Both
// must be inside the backend at once; a second call for a target already in flight, and a stage
// or unstage of the staging path the publishes bind-mount from, must still be ABORTED.
func TestNodePublishLocksPerTarget(t *testing.T) {
	dir := t.TempDir()
	staging := filepath.Join(dir, "staging")
	targets := []string{filepath.Join(dir, "pod-a"), filepath.Join(dir, "pod-b")}
	g := &gatedNode{
		Driver:  memdriver.New(memdriver.Options{}),
		entered: make(chan string, len(targets)),
		gates:   map[string]chan struct{}{},
	}
	release := make(chan struct{})
	for _, target := range targets {
		g.gates[target] = release
	}
	cfg := fullConfig(g.Driver)
	cfg.Node = g
	p := start(t, cfg)
	// Registered after start, so it runs before the server stops: a failure below must not
	// leave a publish parked in the backend.
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)

	ctx := context.Background()
	mnmw := mountCap(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	vol := createVolume(t, p, "shared").GetVolumeId()
	if _, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
		VolumeCapability: mnmw}); err != nil {
		t.Fatal(err)
	}
	publish := func(target string) error {
		_, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol, StagingTargetPath: staging,
			TargetPath: target, VolumeCapability: mnmw})
		return err
	}

	results := make(chan error, len(targets))
	for _, target := range targets {
		go func() { results <- publish(target) }()
	}
	inside := map[string]bool{}
	for len(inside) < len(targets) {
		select {
		case target := <-g.entered:
			inside[target] = true
		case err := <-results:
			t.Fatalf("a publish to another target of the volume returned while the first was in flight: %v, want both in the backend at once", err)
		}
	}

	aborted := []struct {
		name string
		call func() error
		want string // the resource the ABORTED message names
	}{
		{"same target again", func() error { return publish(targets[0]) }, targets[0]},
		{"stage of the staging path published from", func() error {
			_, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: mnmw})
			return err
		}, staging},
		{"unstage of the staging path published from", func() error {
			_, err := p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging})
			return err
		}, staging},
		{"unpublish of a target in flight", func() error {
			_, err := p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: targets[1]})
			return err
		}, targets[1]},
	}
	for _, tt := range aborted {
		err := tt.call()
		if msg := status.Convert(err).Message(); status.Code(err) != codes.Aborted || !strings.Contains(msg, tt.want) {
			t.Errorf("%s while both publishes are in flight: %v, want ABORTED naming %s", tt.name, err, tt.want)
		}
	}

	open()
	for range targets {
		if err := <-results; err != nil {
			t.Errorf("concurrent publish: %v", err)
		}
	}
	// The locks are gone: a retry of either publish is the idempotent success.
	for _, target := range targets {
		if err := publish(target); err != nil {
			t.Errorf("publish %s again after both returned: %v", target, err)
		}
	}
}
