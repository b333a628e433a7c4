package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/internal/testenv"
)

// TestUnstageReapsCephFuse: in a container the driver is PID 1, so each ceph-fuse daemon, whose
// launcher exits once the mount is made, is adopted by the driver, and when NodeUnstageVolume
// ends it nobody but the driver can reap it: without reaping, every unstage left a zombie in the
// node plugin's container (seen in the pods of deploy/kubernetes/cephfs), until the container
// ran out of PIDs. The test process stands in for PID 1 by becoming a child subreaper; after
// stage and unstage, no ceph-fuse zombie may be its child.
func TestUnstageReapsCephFuse(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
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
	var out []int
	for _, p := range procStats(t) {
		if p.comm == "ceph-fuse" && p.ppid == os.Getpid() && (p.state == "Z") == zombies {
			out = append(out, p.pid)
		}
	}
	return out
}

// procStat is one process as /proc/PID/stat shows it.
type procStat struct {
	pid, ppid   int
	comm, state string
}

// procStats reads /proc/PID/stat of every process.
func procStats(t *testing.T) []procStat {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses, so count from the last ')'.
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(raw[end+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		out = append(out, procStat{pid: pid, ppid: ppid, comm: string(raw[open+1 : end]), state: f[0]})
	}
	return out
}

// TestDeadCephFuseRecovers: when a staged volume's ceph-fuse is gone (it runs in the node
// plugin's container, so a restart of that pod ends it; or it died), its mount answers ENOTCONN
// to everything. NodeUnstageVolume must still take it off (it answered UNAVAILABLE forever:
// "resolve ...: transport endpoint is not connected", seen on the Kubernetes node), and
// NodeStageVolume on the same path must mount afresh (it answered ALREADY_EXISTS), so that the
// volume can be used on the node again.
func TestDeadCephFuseRecovers(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	testenv.Root(t, "NodeStageVolume mounts CephFS with ceph-fuse")
	e := newEnv(t)
	cl := serve(t, e, time.Minute)
	ctx := context.Background()
	v, err := cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "dead-fuse", VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.Volume.VolumeId, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	})
	staging := filepath.Join(t.TempDir(), "staging")
	stage := func() error {
		_, err := cl.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging,
			VolumeCapability: mountCap(), VolumeContext: v.Volume.VolumeContext, Secrets: e.secrets})
		return err
	}
	unstage := func() error {
		_, err := cl.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging})
		return err
	}
	t.Cleanup(func() { _ = unstage() })
	for _, tc := range []struct {
		name  string
		after func() error
	}{
		{"unstage", unstage},
		{"stage again", stage},
	} {
		if err := stage(); err != nil {
			t.Fatalf("%s: NodeStageVolume: %v", tc.name, err)
		}
		killCephFuse(t, staging)
		if _, err := os.Stat(staging); !errors.Is(err, unix.ENOTCONN) {
			t.Fatalf("%s: after killing ceph-fuse, stat %s: %v, want ENOTCONN", tc.name, staging, err)
		}
		if err := tc.after(); err != nil {
			t.Fatalf("%s on a mount whose ceph-fuse is gone: %v", tc.name, err)
		}
		if tc.name == "stage again" {
			if err := os.WriteFile(filepath.Join(staging, "file"), []byte("back"), 0o600); err != nil {
				t.Fatalf("the volume staged afresh does not serve: %v", err)
			}
		}
		// The killed client's session still holds its caps until the MDS evicts it (a minute
		// or more), and the fresh ceph-fuse cannot flush and exit before: the driver answers
		// UNAVAILABLE meanwhile, which a CO retries, as here.
		deadline := time.Now().Add(5 * time.Minute)
		for {
			err := unstage()
			if err == nil {
				break
			}
			if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
				t.Fatalf("%s: NodeUnstageVolume: %v", tc.name, err)
			}
			time.Sleep(2 * time.Second) // the CO's back-off between retries, not synchronisation
		}
	}
}

// killCephFuse kills the ceph-fuse daemon serving mountpoint and every process it started, as
// the kernel does when their container is killed, and waits until the kernel reports the mount
// disconnected. The children count: ceph-fuse checks at start that it can remount with
// "mount -i -o remount", and that child holds /dev/fuse open. A mount whose daemon died while
// such a child lives answers nothing until the child ends, and the child waits on the mount.
func killCephFuse(t *testing.T, mountpoint string) {
	t.Helper()
	var daemons []int
	for pid, args := range processes(t) {
		if filepath.Base(args[0]) == "ceph-fuse" && args[len(args)-1] == mountpoint {
			daemons = append(daemons, pid)
		}
	}
	if len(daemons) != 1 {
		t.Fatalf("%d ceph-fuse processes serve %s, want 1", len(daemons), mountpoint)
	}
	// Stopped, the daemon starts no child between the look at its children and the kill.
	if err := unix.Kill(daemons[0], unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, pid := range append(descendants(t, daemons[0]), daemons[0]) {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(mountpoint); errors.Is(err, unix.ENOTCONN) || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond) // the kernel notices the daemon's death on its own
	}
}

// processes maps the PID of every process to its command line.
func processes(t *testing.T) map[int][]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int][]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(raw) == 0 {
			continue
		}
		out[pid] = strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	}
	return out
}

// descendants lists the processes started by pid, and by them, and so on.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	children := map[int][]int{}
	for _, p := range procStats(t) {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}
