package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/internal/testenv"
)

// TestUnstageReapsCephFuse: in a container the driver is PID 1, so each ceph-fuse daemon, whose
// launcher exits once the mount is made, is adopted by the driver, and when NodeUnstageVolume
// ends it nobody but the driver can reap it: without reaping, every unstage left a zombie in the
// node plugin's container (seen in the pods of deploy/kubernetes/cephfs), until the container
// ran out of PIDs. The test process stands in for PID 1 by becoming a child subreaper; after
// stage and unstage, no ceph-fuse zombie may be its child.
func TestUnstageReapsCephFuse(t *testing.T) {
	testenv.Root(t, "NodeStageVolume mounts CephFS with ceph-fuse")
	e := newEnv(t)
	cl := serve(t, e, time.Minute)
	ctx := context.Background()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("become a child subreaper: %v", err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })

	v, err := cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "reap", VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.Volume.VolumeId, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	})
	staging := filepath.Join(t.TempDir(), "staging")
	for i := range 2 {
		if _, err := cl.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging,
			VolumeCapability: mountCap(), VolumeContext: v.Volume.VolumeContext, Secrets: e.secrets}); err != nil {
			t.Fatalf("NodeStageVolume %d: %v", i+1, err)
		}
		if daemons := cephFuseChildren(t, false); len(daemons) != 1 {
			t.Fatalf("stage %d: %d ceph-fuse daemons adopted by this process (%v), want 1", i+1, len(daemons), daemons)
		}
		if _, err := cl.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging}); err != nil {
			t.Fatalf("NodeUnstageVolume %d: %v", i+1, err)
		}
		if zombies := cephFuseChildren(t, true); len(zombies) > 0 {
			t.Fatalf("unstage %d left ceph-fuse zombies %v as children of the driver's process", i+1, zombies)
		}
	}
}

// cephFuseChildren lists the ceph-fuse processes whose parent is this process: the zombies
// among them, or the live ones.
func cephFuseChildren(t *testing.T, zombies bool) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(raw[end+1:]))
		if string(raw[open+1:end]) != "ceph-fuse" || len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if (f[0] == "Z") == zombies {
			out = append(out, pid)
		}
	}
	return out
}
