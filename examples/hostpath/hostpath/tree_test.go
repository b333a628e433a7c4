package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const hostSecret = "TOPSECRET host content"

// hostFiles makes a directory outside any volume with a secret file, as the host's /etc would be.
func hostFiles(t *testing.T, dir string) string {
	t.Helper()
	outside := filepath.Join(dir, "host-secrets")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "shadow"), []byte(hostSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return outside
}

// leaks lists the regular files under dir that hold the host's secret.
func leaks(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), hostSecret) {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCopyTreeNeverLeavesTheVolume: a snapshot or clone copies what is in the volume, symlinks as
// symlinks, and nothing a symlink points to.
func TestCopyTreeNeverLeavesTheVolume(t *testing.T) {
	dir := t.TempDir()
	outside := hostFiles(t, dir)
	tests := []struct {
		name  string
		build func(t *testing.T, src string)
		check func(t *testing.T, dst string)
	}{
		{"symlink to a directory outside", func(t *testing.T, src string) {
			must(t, os.Symlink(outside, filepath.Join(src, "l")))
		}, func(t *testing.T, dst string) {
			if got, err := os.Readlink(filepath.Join(dst, "l")); err != nil || got != outside {
				t.Fatalf("symlink copied as %q, %v; want a symlink to %q", got, err, outside)
			}
		}},
		{"symlink to a file outside", func(t *testing.T, src string) {
			must(t, os.Symlink(filepath.Join(outside, "shadow"), filepath.Join(src, "f")))
		}, func(t *testing.T, dst string) {
			if fi, err := os.Lstat(filepath.Join(dst, "f")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("symlink copied as %v, %v", fi, err)
			}
		}},
		{"relative symlink climbing out", func(t *testing.T, src string) {
			must(t, os.MkdirAll(filepath.Join(src, "a", "b"), 0o755))
			must(t, os.Symlink("../../../../host-secrets/shadow", filepath.Join(src, "a", "b", "up")))
		}, func(t *testing.T, dst string) {
			if got, err := os.Readlink(filepath.Join(dst, "a", "b", "up")); err != nil || got != "../../../../host-secrets/shadow" {
				t.Fatalf("relative symlink copied as %q, %v", got, err)
			}
		}},
		{"data, modes and special files", func(t *testing.T, src string) {
			must(t, os.MkdirAll(filepath.Join(src, "d", "e"), 0o711))
			must(t, os.WriteFile(filepath.Join(src, "d", "e", "data"), []byte("volume data"), 0o640))
			must(t, unix.Mkfifo(filepath.Join(src, "fifo"), 0o600)) // opening it would block
		}, func(t *testing.T, dst string) {
			got, err := os.ReadFile(filepath.Join(dst, "d", "e", "data"))
			if err != nil || string(got) != "volume data" {
				t.Fatalf("data copied as %q, %v", got, err)
			}
			if fi, _ := os.Stat(filepath.Join(dst, "d", "e", "data")); fi.Mode().Perm() != 0o640 {
				t.Fatalf("file mode %v, want 0640", fi.Mode().Perm())
			}
			if fi, _ := os.Stat(filepath.Join(dst, "d")); fi.Mode().Perm() != 0o711 {
				t.Fatalf("directory mode %v, want 0711", fi.Mode().Perm())
			}
			if _, err := os.Lstat(filepath.Join(dst, "fifo")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a FIFO was copied: %v", err)
			}
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, dst := filepath.Join(dir, fmt.Sprint("src", i)), filepath.Join(dir, fmt.Sprint("dst", i))
			must(t, os.Mkdir(src, 0o750))
			tt.build(t, src)
			if err := copyTree(src, dst); err != nil {
				t.Fatal(err)
			}
			tt.check(t, dst)
			if l := leaks(t, dst); len(l) != 0 {
				t.Fatalf("host content copied into %v", l)
			}
		})
	}
}

// copyTreeUnderTest is the copy the race test runs (a variable so the test can be pointed at
// another implementation to see it catch the race).
var copyTreeUnderTest = copyTree

// TestCopyTreeRaceWithSymlinkSwap: the workload swaps a directory and a symlink to the host,
// atomically and without pause, while the volume is copied: no copy ever holds host content.
func TestCopyTreeRaceWithSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	outside := hostFiles(t, dir)
	src := filepath.Join(dir, "volume")
	must(t, os.Mkdir(src, 0o750))
	must(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "shadow"), []byte("benign"), 0o644))
	for i := range 20 {
		must(t, os.WriteFile(filepath.Join(src, fmt.Sprintf("pad%02d", i)), []byte("pad"), 0o644))
	}
	must(t, os.Symlink(outside, filepath.Join(src, "l")))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, "d"), unix.AT_FDCWD, filepath.Join(src, "l"), unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range 100 {
		dst := filepath.Join(dir, fmt.Sprint("copy", i))
		if err := copyTreeUnderTest(src, dst); err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		if l := leaks(t, dst); len(l) != 0 {
			t.Fatalf("copy %d holds host content in %v", i, l)
		}
		must(t, removeAll(dst))
	}
}

// TestSnapshotsAndClonesKeepSymlinks runs the same through the CSI calls.
func TestSnapshotsAndClonesKeepSymlinks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	outside := hostFiles(t, e.dir)
	vol := e.create(t, "src", 1<<20, mountCap(""))
	src := e.plugin.Controller.l.volumeDir(vol.GetVolumeId())
	must(t, os.Symlink(outside, filepath.Join(src, "l")))
	must(t, os.Symlink(filepath.Join(outside, "shadow"), filepath.Join(src, "f")))
	snap, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	clone, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "clone", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol.GetVolumeId()}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{e.plugin.Controller.l.snapshotDir(snap.GetSnapshot().GetSnapshotId()), e.plugin.Controller.l.volumeDir(clone.GetVolume().GetVolumeId())} {
		if l := leaks(t, dst); len(l) != 0 {
			t.Fatalf("host content copied into %v", l)
		}
		if got, err := os.Readlink(filepath.Join(dst, "l")); err != nil || got != outside {
			t.Fatalf("%s: symlink copied as %q, %v", dst, got, err)
		}
	}
}

// TestTreesStopAtMounts: something mounted inside a volume (a pod's mount with bidirectional
// propagation) is neither copied into a snapshot nor deleted with the volume.
func TestTreesStopAtMounts(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ctx := context.Background()
	outside := hostFiles(t, e.dir)
	vol := e.create(t, "v", 1<<20, mountCap(""))
	id := vol.GetVolumeId()
	inner := filepath.Join(e.plugin.Controller.l.volumeDir(id), "sub")
	must(t, os.Mkdir(inner, 0o755))
	must(t, os.WriteFile(filepath.Join(e.plugin.Controller.l.volumeDir(id), "own"), []byte("volume data"), 0o644))
	if err := unix.Mount(outside, inner, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(inner, unix.MNT_DETACH) })

	snap, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: id})
	if err != nil {
		t.Fatal(err)
	}
	snapDir := e.plugin.Controller.l.snapshotDir(snap.GetSnapshot().GetSnapshotId())
	if l := leaks(t, snapDir); len(l) != 0 {
		t.Fatalf("the snapshot copied the mounted host directory: %v", l)
	}
	if fi, err := os.Stat(filepath.Join(snapDir, "sub")); err != nil || !fi.IsDir() {
		t.Fatalf("the mount point should be copied as an empty directory: %v, %v", fi, err)
	}

	_, err = e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("DeleteVolume with a mount inside: %v, want FAILED_PRECONDITION", err)
	}
	// Even without the in-use check (a mount made after it), removal stops at the mount.
	if err := removeAll(e.plugin.Controller.l.volumeDir(id)); !errors.Is(err, errMountInside) {
		t.Fatalf("removeAll through a mount: %v, want it refused", err)
	}
	if got, err := os.ReadFile(filepath.Join(outside, "shadow")); err != nil || string(got) != hostSecret {
		t.Fatalf("the host file behind the mount was touched: %q, %v", got, err)
	}
	must(t, unix.Unmount(inner, 0))
	if _, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
		t.Fatalf("DeleteVolume once the mount is gone: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
