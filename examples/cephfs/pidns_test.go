package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/cephfs/cephfs"
	"github.com/csikit/csikit/internal/testenv"
)

// inPIDNamespace runs ceph-fuse as the node plugin's container does: in a PID namespace of its
// own, which the processes using the mount (kubelet on the host, the pods in theirs) are not
// in. PID 1 of the namespace outlives the launcher (as the driver does in its container); each
// run's unshare, whose death ends the namespace (--kill-child), is listed in $CEPHFS_TEST_NS.
const inPIDNamespace = `#!/bin/bash
set -u
dir=$(mktemp -d)
setsid unshare --pid --fork --kill-child bash -c 'ceph-fuse "$@"; echo $? >"$0/rc"; exec sleep 3600' "$dir" "$@" </dev/null >"$dir/out" 2>&1 &
echo $! >>"$CEPHFS_TEST_NS"
until [ -s "$dir/rc" ]; do sleep 0.05; done
cat "$dir/out" >&2
rc=$(cat "$dir/rc")
rm -rf "$dir"
exit "$rc"
`

// TestStagedVolumeServesCallersOutsideItsPIDNamespace: in the node plugin's pod every FUSE
// request comes from a process ceph-fuse cannot see (kubelet, the pods), so its lookup of the
// caller's groups fails and ceph-fuse logs an error for each request. Its daemon has closed its
// standard streams, and libfuse's splice pipes took descriptors 0 to 2: the errors went into
// a pipe that carries FUSE requests, a request was lost and its caller waited forever
// (kubelet's stat in request_wait_answer, ceph-fuse's log thread blocked writing
// "get_fuse_groups: getgroups failed" to fd 2, seen on the kubelet cluster). The test runs
// ceph-fuse in a PID namespace of its own and uses the staged volume from outside it.
func TestStagedVolumeServesCallersOutsideItsPIDNamespace(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	testenv.Root(t, "NodeStageVolume mounts CephFS with ceph-fuse; unshare needs root")
	testenv.Tool(t, "unshare", "util-linux")
	e := newEnv(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "ceph-fuse")
	if err := os.WriteFile(wrapper, []byte(inPIDNamespace), 0o755); err != nil {
		t.Fatal(err)
	}
	nsList := filepath.Join(dir, "namespaces")
	t.Setenv("CEPHFS_TEST_NS", nsList)
	// endNamespaces kills every namespace's ceph-fuse (a hung one among them): its mount then
	// answers ENOTCONN, and a caller waiting for an answer gets that.
	endNamespaces := func() {
		raw, _ := os.ReadFile(nsList)
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	t.Cleanup(endNamespaces)

	core, logs := observer.New(zapcore.DebugLevel)
	cfg, d, err := config(cephfs.Config{Monitors: e.c.MonHost, FSName: e.c.CephFS.Name, NodeID: "node-1",
		DefaultSize: 1 << 30, Timeout: time.Minute, CephFuse: wrapper, Logger: zap.New(core)}, "both")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	srv := drivertest.NewServer(t, cfg)
	ctrl, node := csi.NewControllerClient(srv.Conn), csi.NewNodeClient(srv.Conn)
	ctx := context.Background()
	v, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pidns", VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(dir, "staging")
	staged := false
	t.Cleanup(func() {
		if staged {
			_, _ = node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging})
		}
		if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.Volume.VolumeId, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	})

	// Which descriptors libfuse's pipes get is decided by a race while the daemon starts (its
	// first workers against the closing of its standard streams), so each round stages afresh:
	// a new daemon, a new draw. Four callers at once, so that libfuse runs several workers (each
	// with its splice pipe); each turn is a handful of requests, every one answered in well
	// under a second when nothing is lost. The bound is a watchdog, not a measure: it only ends
	// a round whose request will never be answered, and is generous, because a round's 600
	// turns start 1800 processes, which on a loaded machine take a minute and more.
	const rounds, turns = 6, 150
	script := `for w in 1 2 3 4; do (for i in $(seq ` + strconv.Itoa(turns) + `); do echo $i >"$1/f$w.$((i % 10))" && cat "$1/f$w.$((i % 10))" >/dev/null && ls "$1" >/dev/null || exit 1; done) & pids="$pids $!"; done; for p in $pids; do wait $p || exit 1; done`
	start := time.Now()
	for r := range rounds {
		if _, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging,
			VolumeCapability: mountCap(), VolumeContext: v.Volume.VolumeContext, Secrets: e.secrets}); err != nil {
			t.Fatalf("round %d: NodeStageVolume: %v\n%s", r+1, err, dump(logs))
		}
		staged = true
		// A caller whose request ceph-fuse has read waits uninterruptibly for the answer: not
		// even SIGKILL ends it. On timeout the namespace is ended, which aborts the connection.
		cmd := exec.Command("sh", "-c", script, "sh", staging)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		began := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: write, read and list on the staged volume: %v: %s", r+1, err, out.String())
			}
		case <-time.After(5 * time.Minute):
			endNamespaces()
			<-done
			t.Fatalf("round %d: 4 × %d turns of write, read and list on the staged volume did not end in %s: a FUSE request was never answered",
				r+1, turns, time.Since(began).Round(time.Second))
		}
		if _, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging}); err != nil {
			t.Fatalf("round %d: NodeUnstageVolume: %v", r+1, err)
		}
		staged = false
	}
	t.Logf("%d rounds of 4 × %d turns from outside ceph-fuse's PID namespace in %s", rounds, turns, time.Since(start).Round(100*time.Millisecond))
}
