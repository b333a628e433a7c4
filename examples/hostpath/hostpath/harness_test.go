package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/nodemount"
	"github.com/csikit/csikit/internal/testenv"
)

// env is a hostpath plugin served over a unix socket, with clients.
type env struct {
	t          *testing.T
	dir        string
	cfg        Config
	plugin     *Plugin
	controller csi.ControllerClient
	node       csi.NodeClient
	group      csi.GroupControllerClient
	metadata   csi.SnapshotMetadataClient
	vg         vgpb.ControllerClient
	stop       func()
}

func needRoot(t *testing.T) {
	t.Helper()
	testenv.Root(t, "loop devices, mkfs and mounts are real")
}

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	return newEnvAt(t, dir, Config{
		StateDir: filepath.Join(dir, "state"), NodeID: "node-1", CapacityBytes: 64 << 30,
		MaxVolumesPerNode: 8, MutableParameters: []string{"iops"},
	})
}

// newEnvAt serves a plugin with cfg; dir holds the socket and, as the test likes, the state and
// the paths it mounts on. Whatever a failed test leaves mounted or attached under dir is undone
// when it ends.
func newEnvAt(t *testing.T, dir string, cfg Config) *env {
	t.Helper()
	releaseKernelState(t, dir)
	e := &env{t: t, dir: dir, cfg: cfg}
	e.start()
	t.Cleanup(func() { e.stop() })
	return e
}

// releaseKernelState registers a cleanup that unmounts every mount under dir and detaches every
// loop device on a file under it, so a failing test leaks nothing into the next.
func releaseKernelState(t *testing.T, dir string) {
	if os.Geteuid() != 0 {
		return
	}
	t.Cleanup(func() {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return
		}
		infos, err := mountInfos()
		if err != nil {
			t.Error(err)
			return
		}
		for i := len(infos) - 1; i >= 0; i-- { // newest first: inner mounts before outer ones
			if within(infos[i].MountPoint, real) {
				if err := unix.Unmount(infos[i].MountPoint, unix.MNT_DETACH); err != nil {
					t.Errorf("cleanup: unmount %s: %v", infos[i].MountPoint, err)
				}
			}
		}
		loops, err := nodemount.Loops()
		if err != nil {
			t.Error(err)
			return
		}
		for _, l := range loops {
			if within(l.BackingFile, real) {
				if err := nodemount.DetachLoopDevice(l.Device); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}
		}
	})
}

// start opens the plugin on the state directory and serves it.
func (e *env) start() {
	t := e.t
	t.Helper()
	p, err := Open(e.cfg, ModeBoth)
	if err != nil {
		t.Fatal(err)
	}
	cfg := p.Config()
	cfg.CheckResponses = true
	srv := drivertest.NewServer(t, cfg)
	e.plugin = p
	e.controller, e.node = csi.NewControllerClient(srv.Conn), csi.NewNodeClient(srv.Conn)
	e.group, e.metadata = csi.NewGroupControllerClient(srv.Conn), csi.NewSnapshotMetadataClient(srv.Conn)
	e.vg = vgpb.NewControllerClient(srv.Conn)
	e.stop = func() {
		srv.Close()
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		e.stop = func() {}
	}
}

func (e *env) restart() {
	e.stop()
	e.start()
}

var snw = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER

func mountCap(fsType string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: snw},
	}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: snw},
	}
}

func (e *env) create(t testing.TB, name string, size int64, caps ...*csi.VolumeCapability) *csi.Volume {
	t.Helper()
	resp, err := e.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name, VolumeCapabilities: caps, CapacityRange: &csi.CapacityRange{RequiredBytes: size}})
	if err != nil {
		t.Fatalf("CreateVolume(%s): %v", name, err)
	}
	return resp.GetVolume()
}

// entries lists a directory's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

// ourLoops lists the loop devices attached to images under the state directory.
func (e *env) ourLoops() []string {
	loops, err := nodemount.Loops()
	if err != nil {
		panic(err)
	}
	var out []string
	for _, l := range loops {
		if within(l.BackingFile, e.cfg.StateDir) {
			out = append(out, l.Device)
		}
	}
	return out
}

// ourMounts lists mount points under the test directory.
func (e *env) ourMounts() []string {
	infos, err := mountInfos()
	if err != nil {
		panic(err)
	}
	var out []string
	for _, m := range infos {
		if within(m.MountPoint, e.dir) {
			out = append(out, m.MountPoint)
		}
	}
	return out
}

// backings lists the entries of every shard under dir (volumes or snapshots), sorted.
func backings(t *testing.T, dir string) []string {
	t.Helper()
	sds, err := shards(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sd := range sds {
		out = append(out, entries(t, sd)...)
	}
	slices.Sort(out)
	return out
}
