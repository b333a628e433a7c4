package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cephfsapi "github.com/ceph/go-ceph/cephfs"
	"github.com/ceph/go-ceph/rados"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/examples/cephfs/cephfs"
	"github.com/csikit/csikit/internal/testenv"
)

// TestMaxFiles drives the maxFiles parameter end to end: refused values create nothing; a volume
// created with maxFiles=3 (a mutable parameter, overriding the StorageClass parameter) and mounted
// through the node service with ceph-fuse takes 3 files and refuses the 4th with EDQUOT;
// ControllerModifyVolume refuses a bad value, an unknown key and a missing volume without
// changing the limit, raises it (with and without secrets, as Kubernetes' external-resizer
// sends none), and the 4th file fits; a clone gets its own request's limit, not its source's;
// a user without the MDS 'p' flag is refused and changes nothing; and no key reaches a log.
func TestMaxFiles(t *testing.T) {
	testenv.System(t, "starts a one-node Ceph")
	testenv.Root(t, "the volume is mounted with ceph-fuse")
	e := newEnv(t)
	cl := serve(t, e, time.Minute)
	ctx := context.Background()
	capacity := &csi.CapacityRange{RequiredBytes: 64 << 20}
	caps := []*csi.VolumeCapability{mountCap()}

	t.Run("refused at create", func(t *testing.T) {
		for _, tc := range []struct {
			name            string
			params, mutable map[string]string
			want            string
		}{
			{"bad-parameter", map[string]string{cephfs.ParamMaxFiles: "-1"}, nil, "not a decimal number"},
			{"bad-mutable", nil, map[string]string{cephfs.ParamMaxFiles: "3 "}, "not a decimal number"},
			{"bad-parameter-under-good-mutable", map[string]string{cephfs.ParamMaxFiles: "many"}, map[string]string{cephfs.ParamMaxFiles: "3"}, "not a decimal number"},
			{"unknown-mutable", nil, map[string]string{"XXX_FakeKey": "XXX_FakeValue"}, "XXX_FakeKey is not supported"},
		} {
			_, err := cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "maxfiles-" + tc.name, CapacityRange: capacity,
				VolumeCapabilities: caps, Parameters: tc.params, MutableParameters: tc.mutable, Secrets: e.secrets})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v; want INVALID_ARGUMENT saying %q", tc.name, err, tc.want)
			}
			if slices.Contains(e.subvolumes(t), "maxfiles-"+tc.name) {
				t.Errorf("%s: a refused CreateVolume left a subvolume", tc.name)
			}
		}
	})

	req := &csi.CreateVolumeRequest{Name: "maxfiles", CapacityRange: capacity, VolumeCapabilities: caps, Secrets: e.secrets,
		Parameters:        map[string]string{cephfs.ParamMaxFiles: "10"},
		MutableParameters: map[string]string{cephfs.ParamMaxFiles: "3"}} // takes precedence (CSI spec)
	resp, err := cl.ctrl.CreateVolume(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	v := resp.Volume
	t.Cleanup(func() { // runs after the unpublish and unstage cleanups publish registers
		if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	})
	if again, err := cl.ctrl.CreateVolume(ctx, req); err != nil || again.Volume.VolumeId != v.VolumeId {
		t.Errorf("a repeated CreateVolume: %v, %v", again, err)
	}
	other := proto.Clone(req).(*csi.CreateVolumeRequest)
	other.MutableParameters = map[string]string{cephfs.ParamMaxFiles: "4"}
	if _, err := cl.ctrl.CreateVolume(ctx, other); status.Code(err) != codes.AlreadyExists {
		t.Errorf("CreateVolume of the same name with another maxFiles: %v; want ALREADY_EXISTS", err)
	}
	path := v.VolumeContext[cephfs.ContextSubvolumePath]
	e.wantMaxFiles(t, path, "4") // 3 files and directories, and the subvolume's own directory

	mnt := cl.publish(t, e, v)
	if got := mountAttr(t, mnt, "ceph.quota.max_files"); got != 4 {
		t.Errorf("the mount shows ceph.quota.max_files=%d, want 4", got)
	}
	create := func(name string) error {
		f, err := os.OpenFile(filepath.Join(mnt, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	// The MDS tells ceph-fuse the subvolume's entry count within a few seconds (CephFS quotas are
	// imprecise by design): wait for it before each create whose answer the test asserts.
	for i := 1; i <= 3; i++ {
		waitEntries(t, mnt, int64(i)) // i-1 files and the directory itself
		if err := create(fmt.Sprintf("f%d", i)); err != nil {
			t.Fatalf("file %d of 3: %v", i, err)
		}
	}
	waitEntries(t, mnt, 4)
	if err := create("f4"); !errors.Is(err, syscall.EDQUOT) {
		t.Fatalf("file 4 of 3: %v; want EDQUOT", err)
	}

	t.Run("refused at modify", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			id      string
			mutable map[string]string
			code    codes.Code
			want    string
		}{
			{"bad value", v.VolumeId, map[string]string{cephfs.ParamMaxFiles: "1e6"}, codes.InvalidArgument, "not a decimal number"},
			{"negative", v.VolumeId, map[string]string{cephfs.ParamMaxFiles: "-5"}, codes.InvalidArgument, "not a decimal number"},
			{"too large", v.VolumeId, map[string]string{cephfs.ParamMaxFiles: "9223372036854775807"}, codes.InvalidArgument, "is more than"},
			{"unknown key", v.VolumeId, map[string]string{"XXX_FakeKey": "XXX_FakeValue"}, codes.InvalidArgument, "XXX_FakeKey is not supported"},
			{"unknown beside a good one", v.VolumeId, map[string]string{cephfs.ParamMaxFiles: "100", "iops": "5"}, codes.InvalidArgument, "iops"},
			{"missing volume", "no-such-volume", map[string]string{cephfs.ParamMaxFiles: "100"}, codes.NotFound, "no-such-volume"},
			{"not an ID of this driver", "no such volume", map[string]string{cephfs.ParamMaxFiles: "100"}, codes.NotFound, "no volume of this driver"},
		} {
			_, err := cl.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: tc.id, MutableParameters: tc.mutable, Secrets: e.secrets})
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v; want %v saying %q", tc.name, err, tc.code, tc.want)
			}
		}
		e.wantMaxFiles(t, path, "4")
	})

	t.Run("refused without the p flag", func(t *testing.T) {
		nop := e.user(t, "csikit-nop", "allow rw")
		_, err := cl.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: v.VolumeId,
			MutableParameters: map[string]string{cephfs.ParamMaxFiles: "100"}, Secrets: nop})
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "'p'") {
			t.Errorf("ControllerModifyVolume as a user without the MDS 'p' flag: %v; want PERMISSION_DENIED naming the flag", err)
		}
		// The same value needs no write: a user without the flag may repeat it.
		if _, err := cl.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: v.VolumeId,
			MutableParameters: map[string]string{cephfs.ParamMaxFiles: "3"}, Secrets: nop}); err != nil {
			t.Errorf("ControllerModifyVolume to the value it has, without the 'p' flag: %v", err)
		}
		e.wantMaxFiles(t, path, "4")
	})

	// Raise it. The external-resizer sends no secrets: the driver acts as the last identity
	// that came with secrets, so make that the provisioner's again first.
	start := time.Now()
	if _, err := cl.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: v.VolumeId,
		MutableParameters: map[string]string{cephfs.ParamMaxFiles: "5"}, Secrets: e.secrets}); err != nil {
		t.Fatalf("ControllerModifyVolume maxFiles=5: %v", err)
	}
	t.Logf("ControllerModifyVolume maxFiles=3 -> 5: %v", time.Since(start).Round(time.Millisecond))
	for range 2 { // idempotent, and without secrets as Kubernetes calls it
		start := time.Now()
		if _, err := cl.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: v.VolumeId,
			MutableParameters: map[string]string{cephfs.ParamMaxFiles: "5"}}); err != nil {
			t.Fatalf("ControllerModifyVolume maxFiles=5 again, without secrets: %v", err)
		}
		t.Logf("ControllerModifyVolume maxFiles=5 again (read only): %v", time.Since(start).Round(time.Millisecond))
	}
	e.wantMaxFiles(t, path, "6")
	waitFor(t, "the mount to show the new limit", func() bool { return mountAttr(t, mnt, "ceph.quota.max_files") == 6 })
	if err := create("f4"); err != nil {
		t.Fatalf("file 4 after raising the limit to 5: %v", err)
	}

	t.Run("clone", func(t *testing.T) {
		// The volumes module copies the source's file quota into a clone; the clone's own
		// request decides: none means no limit.
		for _, tc := range []struct {
			name    string
			mutable map[string]string
			want    string
		}{
			{"maxfiles-clone-unlimited", nil, "0"},
			{"maxfiles-clone-7", map[string]string{cephfs.ParamMaxFiles: "7"}, "8"},
		} {
			creq := &csi.CreateVolumeRequest{Name: tc.name, CapacityRange: capacity, VolumeCapabilities: caps, Secrets: e.secrets,
				MutableParameters: tc.mutable, VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
					Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.VolumeId}}}}
			c, _ := cl.createUntilDone(t, creq)
			t.Cleanup(func() {
				if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: c.VolumeId, Secrets: e.secrets}); err != nil {
					t.Errorf("DeleteVolume: %v", err)
				}
			})
			e.wantMaxFiles(t, c.VolumeContext[cephfs.ContextSubvolumePath], tc.want)
		}
	})

	if _, err := cl.ctrl.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: v.VolumeId,
		MutableParameters: map[string]string{cephfs.ParamMaxFiles: "0"}, Secrets: e.secrets}); err != nil {
		t.Fatalf("ControllerModifyVolume maxFiles=0: %v", err)
	}
	e.wantMaxFiles(t, path, "0")

	for where, text := range map[string]string{"driver log": dump(cl.logs), "plugin log": cl.srv.Logs()} {
		if strings.Contains(text, e.key()) {
			t.Errorf("the key appears in the %s", where)
		}
	}
	if !strings.Contains(cl.srv.Logs(), "ControllerModifyVolume") {
		t.Errorf("the plugin log holds no line about ControllerModifyVolume: the key search proves nothing")
	}
}

// user creates a cephx user with the test user's caps but the given MDS caps, and returns
// secrets for it.
func (e *env) user(t *testing.T, name, mds string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := e.c.Ceph(ctx, "auth", "get-or-create-key", "client."+name,
		"mon", "allow r", "mgr", "allow rw", "mds", mds, "osd", "allow rw tag cephfs *=*")
	if err != nil {
		t.Fatalf("create user %s: %v", name, err)
	}
	return map[string]string{cephfs.SecretUserID: name, cephfs.SecretUserKey: strings.TrimSpace(string(out))}
}

// wantMaxFiles reads the subvolume's ceph.quota.max_files through a libcephfs mount of its own,
// outside the driver, and compares it with want.
func (e *env) wantMaxFiles(t *testing.T, path, want string) {
	t.Helper()
	conn, err := rados.NewConnWithUser(testUser)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Shutdown()
	for _, o := range [][2]string{{"mon_host", e.c.MonHost}, {"key", e.key()}, {"client_mount_timeout", "30"}} {
		if err := conn.SetConfigOption(o[0], o[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Connect(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	m, err := cephfsapi.CreateFromRados(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release() //nolint:errcheck // test cleanup
	if err := m.SelectFilesystem(e.c.CephFS.Name); err != nil {
		t.Fatal(err)
	}
	if err := m.MountWithRoot(path); err != nil {
		t.Fatalf("mount %s: %v", path, err)
	}
	defer m.Unmount() //nolint:errcheck // test cleanup
	got, err := m.GetXattr("/", "ceph.quota.max_files")
	if err != nil {
		t.Fatalf("getxattr ceph.quota.max_files of %s: %v", path, err)
	}
	if string(got) != want {
		t.Errorf("%s: ceph.quota.max_files=%q, want %q", path, got, want)
	}
}

// mountAttr reads a numeric CephFS virtual attribute of a mounted directory.
func mountAttr(t *testing.T, dir, name string) int64 {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Getxattr(dir, name, buf)
	if err != nil {
		t.Fatalf("getxattr %s of %s: %v", name, dir, err)
	}
	v, err := strconv.ParseInt(string(buf[:n]), 10, 64)
	if err != nil {
		t.Fatalf("%s of %s: %q", name, dir, buf[:n])
	}
	return v
}

// waitEntries waits until the mount's view of its entry count (ceph.dir.rentries: the files and
// directories below it and itself, which the file quota counts) reaches n.
func waitEntries(t *testing.T, mnt string, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the mount to count %d entries", n), func() bool { return mountAttr(t, mnt, "ceph.dir.rentries") >= n })
}

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond) // polling a state Ceph updates on its own schedule
	}
}
