package main

import (
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/nodemount"
	"github.com/csikit/csikit/internal/testenv"
)

// testPlugin is the example's Config (config) served on a real unix socket.
type testPlugin struct {
	dir        string // the test's scratch directory; volumes live in dir/volumes
	identity   csi.IdentityClient
	controller csi.ControllerClient
	node       csi.NodeClient
}

func serve(t *testing.T) *testPlugin {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the server, so it runs after the server's own cleanup: a failed test
	// must not leave mounts that stop TempDir's removal.
	t.Cleanup(func() { unmountUnder(dir) })
	cfg := config(filepath.Join(dir, "volumes"))
	cfg.Logger = zap.NewNop()
	conn := drivertest.NewServer(t, cfg).Conn
	return &testPlugin{dir: dir, identity: csi.NewIdentityClient(conn), controller: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn)}
}

func unmountUnder(dir string) {
	infos, _ := nodemount.Mounts()
	for i := len(infos) - 1; i >= 0; i-- {
		if strings.HasPrefix(infos[i].MountPoint, dir+"/") {
			_ = unix.Unmount(infos[i].MountPoint, unix.MNT_DETACH)
		}
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	testenv.Root(t, "NodePublishVolume bind-mounts, to test it against the kernel")
}

var mountCap = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

var blockCap = &csi.VolumeCapability{
	AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
	AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
}

// create makes a volume named name holding one file, "data", and returns its ID.
func (p *testPlugin) create(t *testing.T, name string) string {
	t.Helper()
	v, err := p.controller.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap}})
	if err != nil {
		t.Fatal(err)
	}
	id := v.GetVolume().GetVolumeId()
	if err := os.WriteFile(filepath.Join(p.dir, "volumes", id, "data"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	return id
}

func (p *testPlugin) publish(id, target string, readonly bool) error {
	_, err := p.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountCap, Readonly: readonly})
	return err
}

func (p *testPlugin) unpublish(id, target string) error {
	_, err := p.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	return err
}

func (p *testPlugin) dataIntact(t *testing.T, id string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(p.dir, "volumes", id, "data")); err != nil || string(b) != "keep me" {
		t.Fatalf("the volume's data is gone: %q, %v", b, err)
	}
}

func layers(t *testing.T, path string) int {
	t.Helper()
	infos, err := nodemount.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range infos {
		if m.MountPoint == path {
			n++
		}
	}
	return n
}

// TestMinimalDriver walks a volume through its life as a newcomer would.
func TestMinimalDriver(t *testing.T) {
	p := serve(t)
	ctx := context.Background()
	create := &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{mountCap}}
	vol, err := p.controller.CreateVolume(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.controller.CreateVolume(ctx, create)
	if err != nil || again.GetVolume().GetVolumeId() != vol.GetVolume().GetVolumeId() {
		t.Fatalf("repeated CreateVolume = %v, %v; want the same volume", again, err)
	}
	if _, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-2"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no capabilities: %v, want INVALID_ARGUMENT", err)
	}
	id := vol.GetVolume().GetVolumeId()
	if os.Geteuid() == 0 {
		target := filepath.Join(p.dir, "pod", "mnt")
		if err := p.publish(id, target, false); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, "hello"), []byte("hi"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(p.dir, "volumes", id, "hello")); err != nil {
			t.Fatalf("write through the bind mount did not reach the volume: %v", err)
		}
		if err := p.unpublish(id, target); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("target still present after unpublish: %v", err)
		}
	} else {
		t.Log("not root: skipping the bind-mount part (NodePublishVolume needs mount privileges)")
	}
	for range 2 {
		if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(p.dir, "volumes", id)); !os.IsNotExist(err) {
		t.Fatalf("volume directory still present after delete: %v", err)
	}
}

// TestRepeatedCreateIsComparedNotFingerprinted: a retry is answered with the volume when the
// volume fits it, whatever else differs in the request's ranges.
func TestRepeatedCreateIsComparedNotFingerprinted(t *testing.T) {
	p := serve(t)
	ctx := context.Background()
	first := &csi.CreateVolumeRequest{Name: "pvc", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}}
	vol, err := p.controller.CreateVolume(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  *csi.CreateVolumeRequest
		want codes.Code
	}{
		{"a wider capacity range that holds the volume is the same volume",
			&csi.CreateVolumeRequest{Name: "pvc", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
				CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 10, LimitBytes: 1 << 30}}, codes.OK},
		{"a range the volume's size is outside of is ALREADY_EXISTS",
			&csi.CreateVolumeRequest{Name: "pvc", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
				CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}}, codes.AlreadyExists},
		{"other parameters are ALREADY_EXISTS",
			&csi.CreateVolumeRequest{Name: "pvc", VolumeCapabilities: []*csi.VolumeCapability{mountCap},
				CapacityRange: first.CapacityRange, Parameters: map[string]string{"other": "settings"}}, codes.AlreadyExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.controller.CreateVolume(ctx, tc.req)
			if status.Code(err) != tc.want {
				t.Fatalf("CreateVolume = %v, want %v", err, tc.want)
			}
			if err == nil && (got.GetVolume().GetVolumeId() != vol.GetVolume().GetVolumeId() || got.GetVolume().GetCapacityBytes() != 1<<20) {
				t.Errorf("CreateVolume = %v, want the first volume with its 1 MiB", got.GetVolume())
			}
		})
	}
}

// TestRepeatedPublishMountsOnceAndUnpublishKeepsTheData: a CO retrying NodePublish used to stack
// bind mounts, and NodeUnpublish then deleted the volume's files through the mount left over.
func TestRepeatedPublishMountsOnceAndUnpublishKeepsTheData(t *testing.T) {
	needRoot(t)
	p := serve(t)
	id := p.create(t, "pvc")
	target := filepath.Join(p.dir, "pod", "mnt")
	for range 3 {
		if err := p.publish(id, target, false); err != nil {
			t.Fatal(err)
		}
	}
	if n := layers(t, target); n != 1 {
		t.Fatalf("%d mounts at the target after three publishes, want 1", n)
	}
	if err := p.unpublish(id, target); err != nil {
		t.Fatal(err)
	}
	if n := layers(t, target); n != 0 {
		t.Fatalf("%d mounts left at the target", n)
	}
	p.dataIntact(t, id)
	if err := p.unpublish(id, target); err != nil {
		t.Fatalf("repeated unpublish: %v", err)
	}
}

// TestUnpublishTakesOffMountsStackedByEarlierBugs: a node upgraded from a driver that stacked
// mounts gets every layer taken off, and the data kept.
func TestUnpublishTakesOffMountsStackedByEarlierBugs(t *testing.T) {
	needRoot(t)
	p := serve(t)
	id := p.create(t, "pvc")
	target := filepath.Join(p.dir, "pod", "mnt")
	if err := os.MkdirAll(target, 0o750); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := unix.Mount(filepath.Join(p.dir, "volumes", id), target, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.unpublish(id, target); err != nil {
		t.Fatal(err)
	}
	if n := layers(t, target); n != 0 {
		t.Fatalf("%d mounts left at the target", n)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target still there: %v", err)
	}
	p.dataIntact(t, id)
}

// TestReadonlyPublishIsReadOnly: a bind mount ignores MS_RDONLY unless it is remounted.
func TestReadonlyPublishIsReadOnly(t *testing.T) {
	needRoot(t)
	p := serve(t)
	id := p.create(t, "pvc")
	target := filepath.Join(p.dir, "pod", "mnt")
	if err := p.publish(id, target, true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "new"), nil, 0o600); !errors.Is(err, unix.EROFS) {
		t.Fatalf("write through a read-only publish = %v, want EROFS", err)
	}
	if err := p.publish(id, target, false); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("read-write publish over a read-only one = %v, want ALREADY_EXISTS", err)
	}
	other := p.create(t, "other")
	if err := p.publish(other, target, true); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("another volume at the same target = %v, want ALREADY_EXISTS", err)
	}
	if err := p.unpublish(id, target); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteOfAPublishedVolumeIsRefused: deleting a volume in use used to delete its data.
func TestDeleteOfAPublishedVolumeIsRefused(t *testing.T) {
	needRoot(t)
	p := serve(t)
	id := p.create(t, "pvc")
	target := filepath.Join(p.dir, "pod", "mnt")
	if err := p.publish(id, target, false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("DeleteVolume of a published volume = %v, want FAILED_PRECONDITION", err)
	}
	p.dataIntact(t, id)
	if err := p.unpublish(id, target); err != nil {
		t.Fatal(err)
	}
	if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume once unpublished: %v", err)
	}
}

// TestRefusals: what minimal cannot do is answered with the spec's code, not INTERNAL.
func TestRefusals(t *testing.T) {
	p := serve(t)
	ctx := context.Background()
	id := p.create(t, "pvc")
	target := filepath.Join(p.dir, "pod", "mnt")
	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"a block volume cannot be created from a directory: INVALID_ARGUMENT", func() error {
			_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "blk", VolumeCapabilities: []*csi.VolumeCapability{blockCap}})
			return err
		}, codes.InvalidArgument},
		{"publishing a directory volume for block access: FAILED_PRECONDITION", func() error {
			_, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: blockCap})
			return err
		}, codes.FailedPrecondition},
		{"publishing an unknown volume: NOT_FOUND", func() error { return p.publish("vol-unknown", target, false) }, codes.NotFound},
		{"publishing an ID that is not a name: NOT_FOUND", func() error { return p.publish("../etc", target, false) }, codes.NotFound},
		{"unpublishing an unknown volume: NOT_FOUND", func() error { return p.unpublish("vol-unknown", target) }, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.want {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused publish left its target behind: %v", err)
	}
}

// TestConformance runs csi-sanity and csikit's own specs in-process; as root with real mounts
// (the privileged profile), otherwise without the specs that mount.
func TestConformance(t *testing.T) {
	privileged := os.Geteuid() == 0
	cfg := config(filepath.Join(t.TempDir(), "volumes"))
	cfg.CheckResponses = true
	// 1 MiB volumes, not the default 10 GiB: minimal refuses what the filesystem of the test's
	// temporary directory cannot hold, and that may be a small tmpfs.
	res := drivertest.CSI(t, cfg, drivertest.Options{Privileged: privileged, IdempotentCount: 3, TestVolumeSize: 1 << 20})
	t.Logf("specs: %d ran, %d passed, %d skipped, %d failed", res.Ran, res.Passed, res.Skipped, res.Failed)
	if res.Failed != 0 {
		t.Fatalf("%d specs failed", res.Failed)
	}
}

// TestCapacityIsWhatTheFilesystemCanHold: a request for 9.2 EB must not be accepted and reported
// as the volume's capacity. A volume is a directory; what its filesystem cannot hold is
// OUT_OF_RANGE, and what is reported is what was asked for (nothing reserves it: see CreateVolume).
func TestCapacityIsWhatTheFilesystemCanHold(t *testing.T) {
	p := serve(t)
	var st unix.Statfs_t
	if err := unix.Statfs(p.dir, &st); err != nil {
		t.Fatal(err)
	}
	size := int64(st.Blocks) * st.Frsize // the volumes live in p.dir/volumes, on this filesystem
	for _, tc := range []struct {
		name            string
		required, limit int64
		want            codes.Code
		capacity        int64
	}{
		{"no range: capacity unknown", 0, 0, codes.OK, 0},
		{"required bytes are reported", 1 << 20, 0, codes.OK, 1 << 20},
		{"a limit alone leaves the capacity unknown", 0, 1 << 20, codes.OK, 0},
		{"required and limit: the required bytes", 1 << 20, 2 << 20, codes.OK, 1 << 20},
		{"a limit beyond the filesystem is only a maximum", 1 << 20, math.MaxInt64, codes.OK, 1 << 20},
		{"as much as the whole filesystem", size, 0, codes.OK, size},
		{"a byte more than the filesystem: OUT_OF_RANGE", size + 1, 0, codes.OutOfRange, 0},
		{"9.2 EB: OUT_OF_RANGE", math.MaxInt64, 0, codes.OutOfRange, 0},
		{"9.2 EB as required and limit: OUT_OF_RANGE", math.MaxInt64, math.MaxInt64, codes.OutOfRange, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &csi.CreateVolumeRequest{Name: "pvc-" + strings.ReplaceAll(tc.name, " ", "-"),
				VolumeCapabilities: []*csi.VolumeCapability{mountCap}}
			if tc.required != 0 || tc.limit != 0 { // both 0 is no capacity_range at all
				req.CapacityRange = &csi.CapacityRange{RequiredBytes: tc.required, LimitBytes: tc.limit}
			}
			v, err := p.controller.CreateVolume(context.Background(), req)
			if status.Code(err) != tc.want {
				t.Fatalf("CreateVolume = %v, want %v", err, tc.want)
			}
			if got := v.GetVolume().GetCapacityBytes(); err == nil && got != tc.capacity {
				t.Errorf("capacity_bytes = %d, want %d", got, tc.capacity)
			}
			if err != nil {
				return // that nothing is left behind is checked after the last case
			}
			if _, err := p.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.GetVolume().GetVolumeId()}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if entries, err := os.ReadDir(filepath.Join(p.dir, "volumes")); err != nil || len(entries) != 0 {
		t.Errorf("volumes left behind: %v, %v", entries, err)
	}
}

// TestDeleteLeavesAFilesystemMountedOnTheVolumeAlone: MountsOf does not list a filesystem mounted
// on the directory itself; minimal never mounts there, so such a mount is someone else's, and
// deleting the directory would delete that filesystem's files.
func TestDeleteLeavesAFilesystemMountedOnTheVolumeAlone(t *testing.T) {
	needRoot(t)
	p := serve(t)
	id := p.create(t, "pvc")
	dir := filepath.Join(p.dir, "volumes", id)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "theirs"), []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := p.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: id})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("DeleteVolume with a filesystem mounted on the volume = %v, want FAILED_PRECONDITION", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "theirs")); err != nil || string(b) != "keep me" {
		t.Errorf("the mounted filesystem's file = %q, %v; want it kept", b, err)
	}
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	p.dataIntact(t, id)
	if _, err := p.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume once unmounted: %v", err)
	}
}

// TestDefaultSocketHasADirectoryOfItsOwn: with no flag and no CSI_ENDPOINT, the socket is in a
// directory that holds nothing else (the volumes are elsewhere), never directly in /tmp: the
// directory is what a container mounts to share the socket, and what the socket's permissions
// are set on.
func TestDefaultSocketHasADirectoryOfItsOwn(t *testing.T) {
	t.Setenv("CSI_ENDPOINT", "")
	fs := flag.NewFlagSet("minimal", flag.ContinueOnError)
	settings, root := register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	sock, ok := strings.CutPrefix(settings.Endpoint, "unix://")
	if !ok {
		t.Fatalf("default endpoint %q is not a unix socket", settings.Endpoint)
	}
	dir := filepath.Dir(sock)
	for _, shared := range []string{"/", "/tmp", filepath.Clean(os.TempDir())} {
		if dir == shared {
			t.Errorf("the default socket %s is directly in %s, a directory shared with everything else", sock, dir)
		}
	}
	if rel, err := filepath.Rel(dir, *root); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("the volumes (%s) are inside the socket's directory %s", *root, dir)
	}
}
