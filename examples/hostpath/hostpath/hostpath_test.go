package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/internal/testenv"
)

func TestIDsNeverBecomePaths(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	outside := filepath.Join(e.dir, "outside")
	if err := os.Mkdir(outside, 0o750); err != nil {
		t.Fatal(err)
	}
	bad := []string{
		"../outside", "../../" + outside, outside, "vol-../../outside", "vol-" + strings.Repeat("a", 32) + "/../..",
		"vol-\x00", strings.Repeat("x", 128), ".", "..", "volumes", "controller.db",
	}
	for _, id := range bad {
		t.Run(fmt.Sprintf("%q", id), func(t *testing.T) {
			if _, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); status.Code(err) != codes.OK && status.Code(err) != codes.InvalidArgument {
				t.Fatalf("DeleteVolume: %v", err)
			}
			for name, call := range map[string]func() error{
				"ControllerPublishVolume": func() error {
					_, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: "node-1", VolumeCapability: mountCap("")})
					return err
				},
				"NodeStageVolume": func() error {
					_, err := e.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: filepath.Join(e.dir, "stage"), VolumeCapability: mountCap("")})
					return err
				},
				"CreateSnapshot": func() error {
					_, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: id})
					return err
				},
				"CreateVolume from it": func() error {
					_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "clone", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
						VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}})
					return err
				},
			} {
				if code := status.Code(call()); code != codes.NotFound && code != codes.InvalidArgument {
					t.Errorf("%s with ID %q: %v, want NOT_FOUND (or INVALID_ARGUMENT for an ID the spec forbids)", name, id, code)
				}
			}
		})
	}
	if got := entries(t, outside); len(got) != 0 {
		t.Fatalf("something was created outside the state directory: %v", got)
	}
	// Hostile names are just names: the volume gets an ID of its own.
	for _, name := range []string{"../../etc/passwd", "/absolute", "a/b/c", strings.Repeat("n", 128)} {
		vol := e.create(t, name, 1<<20, mountCap(""))
		if !validID(vol.GetVolumeId()) {
			t.Fatalf("name %q gave ID %q", name, vol.GetVolumeId())
		}
	}
	if got := entries(t, outside); len(got) != 0 {
		t.Fatalf("a hostile name created something outside the state directory: %v", got)
	}
}

func withFailpoint(t *testing.T, at string) {
	t.Helper()
	failpoint = func(name string) error {
		if name == at {
			return fmt.Errorf("injected failure at %s", name)
		}
		return nil
	}
	t.Cleanup(func() { failpoint = nil })
}

func TestFailedControllerOperationsLeaveNothingBehind(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := e.create(t, "source", 1<<20, mountCap(""))
	block := e.create(t, "block-source", 1<<20, blockCap())
	volumesBefore := backings(t, e.plugin.Controller.l.volumesDir())
	tests := []struct {
		point string
		call  func() error
		dir   string
	}{
		{"create-volume:after-backing", func() error {
			_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "doomed", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")}})
			return err
		}, e.plugin.Controller.l.volumesDir()},
		{"create-volume:after-backing", func() error {
			_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "doomed-image", VolumeCapabilities: []*csi.VolumeCapability{blockCap()}})
			return err
		}, e.plugin.Controller.l.volumesDir()},
		{"create-volume:after-backing", func() error {
			_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "doomed-clone", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
				VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}})
			return err
		}, e.plugin.Controller.l.volumesDir()},
		{"create-snapshot:after-backing", func() error {
			_, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "doomed", SourceVolumeId: block.GetVolumeId()})
			return err
		}, e.plugin.Controller.l.snapshotsDir()},
		{"create-group-snapshot:after-backing", func() error {
			_, err := e.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "doomed", SourceVolumeIds: []string{src.GetVolumeId(), block.GetVolumeId()}})
			return err
		}, e.plugin.Controller.l.snapshotsDir()},
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			before := backings(t, tt.dir)
			withFailpoint(t, tt.point)
			if err := tt.call(); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("got %v, want the injected failure", err)
			}
			if after := backings(t, tt.dir); !slices.Equal(before, after) {
				t.Fatalf("left behind: before %v, after %v", before, after)
			}
		})
	}
	if got := backings(t, e.plugin.Controller.l.volumesDir()); !slices.Equal(got, volumesBefore) {
		t.Fatalf("volumes changed: %v -> %v", volumesBefore, got)
	}
	// The names are free again: a retry succeeds.
	failpoint = nil
	e.create(t, "doomed", 1<<20, mountCap(""))
}

func TestFailedNodeOperationsLeaveNothingBehind(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cap  *csi.VolumeCapability
	}{{"dir", mountCap("")}, {"ext4 image", mountCap("ext4")}, {"block", blockCap()}} {
		t.Run(tc.name, func(t *testing.T) {
			vol := e.create(t, "node-"+strings.ReplaceAll(tc.name, " ", "-"), 32<<20, tc.cap)
			staging := filepath.Join(e.dir, tc.name, "staging")
			target := filepath.Join(e.dir, tc.name, "target")
			if err := os.MkdirAll(staging, 0o750); err != nil {
				t.Fatal(err)
			}
			withFailpoint(t, "node-stage:before-commit")
			_, err := e.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: tc.cap, VolumeContext: vol.GetVolumeContext()})
			if err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("stage: %v, want the injected failure", err)
			}
			if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
				t.Fatalf("failed stage left mounts %v and loop devices %v", m, l)
			}
			failpoint = nil
			if _, err := e.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging, VolumeCapability: tc.cap, VolumeContext: vol.GetVolumeContext()}); err != nil {
				t.Fatal(err)
			}
			withFailpoint(t, "node-publish:before-commit")
			_, err = e.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging, TargetPath: target, VolumeCapability: tc.cap})
			if err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("publish: %v, want the injected failure", err)
			}
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("failed publish left the target behind: %v", err)
			}
			if slices.Contains(e.ourMounts(), target) {
				t.Fatal("failed publish left a mount at the target")
			}
			failpoint = nil
			if _, err := e.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging}); err != nil {
				t.Fatal(err)
			}
			if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
				t.Fatalf("unstage left mounts %v and loop devices %v", m, l)
			}
		})
	}
}

// lifecycle stages and publishes a volume, runs check on the target, and tears everything down.
func (e *env) lifecycle(t *testing.T, vol *csi.Volume, cap *csi.VolumeCapability, readonly bool, check func(target string)) {
	t.Helper()
	ctx := context.Background()
	base := filepath.Join(e.dir, "pods", vol.GetVolumeId())
	staging, target := filepath.Join(base, "staging"), filepath.Join(base, "target")
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	pub, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol.GetVolumeId(), NodeId: "node-1", VolumeCapability: cap, Readonly: readonly})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call of each step must be a no-op
		if _, err := e.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging,
			VolumeCapability: cap, PublishContext: pub.GetPublishContext(), VolumeContext: vol.GetVolumeContext()}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := e.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging,
			TargetPath: target, VolumeCapability: cap, Readonly: readonly, VolumeContext: vol.GetVolumeContext()}); err != nil {
			t.Fatal(err)
		}
	}
	check(target)
	for range 2 {
		if _, err := e.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: target}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), NodeId: "node-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("target still present after unpublish: %v", err)
	}
	if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
		t.Fatalf("left mounts %v and loop devices %v", m, l)
	}
}

func TestVolumeKinds(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ctx := context.Background()
	payload := []byte("written through the target")

	t.Run("directory", func(t *testing.T) {
		vol := e.create(t, "dir", 8<<20, mountCap(""))
		e.lifecycle(t, vol, mountCap(""), false, func(target string) {
			if err := os.WriteFile(filepath.Join(target, "f"), payload, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(e.plugin.Controller.l.volumeDir(vol.GetVolumeId()), "f"))
			if err != nil || string(got) != string(payload) {
				t.Fatalf("write did not reach the volume directory: %q, %v", got, err)
			}
		})
	})
	t.Run("readonly", func(t *testing.T) {
		vol := e.create(t, "ro", 8<<20, mountCap(""))
		e.lifecycle(t, vol, mountCap(""), true, func(target string) {
			err := os.WriteFile(filepath.Join(target, "f"), payload, 0o600)
			if !errors.Is(err, unix.EROFS) {
				t.Fatalf("write to a readonly publish: %v, want EROFS", err)
			}
		})
	})
	t.Run("ext4 image with expansion", func(t *testing.T) {
		expandedOffline := false
		vol := e.create(t, "ext4", 32<<20, mountCap("ext4"))
		if vol.GetVolumeContext()[volumeContextKind] != kindFile {
			t.Fatalf("fs_type ext4 should give an image volume, context %v", vol.GetVolumeContext())
		}
		e.lifecycle(t, vol, mountCap("ext4"), false, func(target string) {
			if err := os.WriteFile(filepath.Join(target, "f"), payload, 0o600); err != nil {
				t.Fatal(err)
			}
			var before unix.Statfs_t
			if err := unix.Statfs(target, &before); err != nil {
				t.Fatal(err)
			}
			exp, err := e.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol.GetVolumeId(), CapacityRange: &csi.CapacityRange{RequiredBytes: 64 << 20}})
			if err != nil || !exp.GetNodeExpansionRequired() {
				t.Fatalf("ControllerExpandVolume = %v, %v", exp, err)
			}
			nexp, err := e.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol.GetVolumeId(), VolumePath: target, CapacityRange: &csi.CapacityRange{RequiredBytes: 64 << 20}})
			if !hasCapability(capSysResource) {
				// Growing mounted ext4 needs CAP_SYS_RESOURCE; without it the node says so and
				// grows the file system offline at the next stage (checked below).
				if status.Code(err) != codes.FailedPrecondition {
					t.Fatalf("NodeExpandVolume without CAP_SYS_RESOURCE = %v, want FAILED_PRECONDITION", err)
				}
				expandedOffline = true
			} else {
				if err != nil || nexp.GetCapacityBytes() != 64<<20 {
					t.Fatalf("NodeExpandVolume = %v, %v", nexp, err)
				}
				var after unix.Statfs_t
				if err := unix.Statfs(target, &after); err != nil {
					t.Fatal(err)
				}
				if after.Blocks <= before.Blocks {
					t.Fatalf("filesystem did not grow: %d -> %d blocks", before.Blocks, after.Blocks)
				}
			}
			stats, err := e.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: target})
			if err != nil || len(stats.GetUsage()) != 2 {
				t.Fatalf("NodeGetVolumeStats = %v, %v", stats, err)
			}
		})
		// Staged again, the file system has the grown size (grown offline if it could not be online).
		e.lifecycle(t, vol, mountCap("ext4"), false, func(target string) {
			var fs unix.Statfs_t
			if err := unix.Statfs(target, &fs); err != nil {
				t.Fatal(err)
			}
			if size := int64(fs.Blocks) * fs.Bsize; size < 48<<20 {
				t.Fatalf("file system has %d bytes after expansion to 64 MiB (offline growth: %v)", size, expandedOffline)
			}
			// kubelet still has the PVC in FileSystemResizePending and calls NodeExpandVolume
			// on the mounted volume: the stage grew it, so there is nothing left to grow and no
			// capability is needed.
			nexp, err := e.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol.GetVolumeId(), VolumePath: target,
				StagingTargetPath: filepath.Join(filepath.Dir(target), "staging"), CapacityRange: &csi.CapacityRange{RequiredBytes: 64 << 20}})
			if err != nil || nexp.GetCapacityBytes() != 64<<20 {
				t.Fatalf("NodeExpandVolume after the stage grew the file system (offline growth: %v) = %v, %v; want 64 MiB", expandedOffline, nexp, err)
			}
		})
		// Restore a snapshot of it: the file is there.
		snap, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "ext4-snap", SourceVolumeId: vol.GetVolumeId()})
		if err != nil {
			t.Fatal(err)
		}
		restored, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "ext4-restored", VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}})
		if err != nil {
			t.Fatal(err)
		}
		if restored.GetVolume().GetCapacityBytes() < 64<<20 {
			t.Fatalf("restored volume is smaller than its snapshot: %d", restored.GetVolume().GetCapacityBytes())
		}
		e.lifecycle(t, restored.GetVolume(), mountCap("ext4"), false, func(target string) {
			got, err := os.ReadFile(filepath.Join(target, "f"))
			if err != nil || string(got) != string(payload) {
				t.Fatalf("restored volume lacks the file: %q, %v", got, err)
			}
		})
	})
	t.Run("raw block", func(t *testing.T) {
		vol := e.create(t, "block", 16<<20, blockCap())
		e.lifecycle(t, vol, blockCap(), false, func(target string) {
			f, err := os.OpenFile(target, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(payload, 1<<20); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			size, err := f.Seek(0, io.SeekEnd)
			if err != nil || size != 16<<20 {
				t.Fatalf("block device size %d, %v; want 16 MiB", size, err)
			}
		})
		img, err := os.ReadFile(e.plugin.Controller.l.volumeImage(vol.GetVolumeId()))
		if err != nil || string(img[1<<20:1<<20+len(payload)]) != string(payload) {
			t.Fatalf("block write did not reach the image: %v", err)
		}
	})
	t.Run("ephemeral", func(t *testing.T) {
		target := filepath.Join(e.dir, "pods", "inline", "target")
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			t.Fatal(err)
		}
		// As kubelet sends it for an inline volume: no staging path, the CO's own volume ID.
		req := &csi.NodePublishVolumeRequest{VolumeId: "csi-inline-1234", TargetPath: target, VolumeCapability: mountCap(""),
			VolumeContext: map[string]string{ephemeralContextKey: "true"}}
		for range 2 {
			if _, err := e.node.NodePublishVolume(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(target, "f"), payload, 0o600); err != nil {
			t.Fatal(err)
		}
		// Stats and health take the CO's volume ID too.
		stats, err := e.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: req.VolumeId, VolumePath: target})
		if err != nil || len(stats.GetUsage()) != 2 {
			t.Fatalf("NodeGetVolumeStats of an ephemeral volume = %v, %v", stats, err)
		}
		health, err := e.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: req.VolumeId, VolumePublishPath: target})
		if err != nil || len(health.GetVolumeHealth().GetHealthStatuses()) != 0 {
			t.Fatalf("NodeGetVolumeHealth of an ephemeral volume = %v, %v", health, err)
		}
		for range 2 {
			if _, err := e.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: req.VolumeId, TargetPath: target}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(e.plugin.Controller.l.volumeDir(ephemeralID(req.VolumeId))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("ephemeral volume not deleted at unpublish: %v", err)
		}
		if m := e.ourMounts(); len(m) != 0 {
			t.Fatalf("left mounts %v", m)
		}
	})
}

// TestDirectoryVolumeSizes pins what the package documentation (# Sizes) says a directory volume
// reports: its granted size in the controller's answers, and the host file system's figures on
// the node, with nothing enforcing the granted size and nothing to grow on the node.
func TestDirectoryVolumeSizes(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ctx := context.Background()
	vol := e.create(t, "dir-size", 8<<20, mountCap(""))
	if vol.GetCapacityBytes() != 8<<20 {
		t.Fatalf("CreateVolume capacity = %d, want the 8 MiB granted", vol.GetCapacityBytes())
	}
	exp, err := e.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol.GetVolumeId(),
		CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
	if err != nil || exp.GetCapacityBytes() != 16<<20 || exp.GetNodeExpansionRequired() {
		t.Fatalf("ControllerExpandVolume of a directory volume = %v, %v; want 16 MiB and no node expansion", exp, err)
	}
	e.lifecycle(t, vol, mountCap(""), false, func(target string) {
		var host unix.Statfs_t
		if err := unix.Statfs(e.cfg.StateDir, &host); err != nil {
			t.Fatal(err)
		}
		stats, err := e.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: target})
		if err != nil {
			t.Fatal(err)
		}
		want := map[csi.VolumeUsage_Unit]int64{
			csi.VolumeUsage_BYTES:  int64(host.Blocks) * host.Bsize,
			csi.VolumeUsage_INODES: int64(host.Files),
		}
		for _, u := range stats.GetUsage() {
			if u.GetTotal() != want[u.GetUnit()] {
				t.Errorf("NodeGetVolumeStats %s total = %d, want the host file system's %d", u.GetUnit(), u.GetTotal(), want[u.GetUnit()])
			}
			delete(want, u.GetUnit())
		}
		if len(want) != 0 {
			t.Errorf("NodeGetVolumeStats = %v, missing %v", stats.GetUsage(), want)
		}
		// No quota: more than the 16 MiB granted fits.
		if err := os.WriteFile(filepath.Join(target, "big"), make([]byte, 17<<20), 0o600); err != nil {
			t.Errorf("writing past the granted size: %v (the documentation says nothing enforces it)", err)
		}
	})
}

// TestSmallXFSVolumesAreGrantedWhatMkfsNeeds: the storage e2e suite asks for 1 MiB xfs volumes;
// mkfs.xfs refuses anything under 300 MiB, so the volume is granted that much (a pod can use it)
// unless the request's limit is lower (OUT_OF_RANGE at once, not an INTERNAL at NodeStage).
func TestSmallXFSVolumesAreGrantedWhatMkfsNeeds(t *testing.T) {
	needRoot(t)
	testenv.Tool(t, "mkfs.xfs", "xfsprogs")
	e := newEnv(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		fsType   string
		required int64
		limit    int64
		want     int64
		code     codes.Code
	}{
		{"xfs, 1 MiB asked", "xfs", 1 << 20, 0, 300 << 20, codes.OK},
		{"xfs, limit below the least", "xfs", 1 << 20, 100 << 20, 0, codes.OutOfRange},
		{"xfs, more than the least", "xfs", 400 << 20, 0, 400 << 20, codes.OK},
		{"ext4 keeps a small size", "ext4", 1 << 20, 0, 1 << 20, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "small-" + strings.ReplaceAll(tc.name, " ", "-"),
				VolumeCapabilities: []*csi.VolumeCapability{mountCap(tc.fsType)},
				CapacityRange:      &csi.CapacityRange{RequiredBytes: tc.required, LimitBytes: tc.limit}})
			if status.Code(err) != tc.code {
				t.Fatalf("CreateVolume: %v, want %s", err, tc.code)
			}
			if err != nil {
				return
			}
			vol := resp.GetVolume()
			if vol.GetCapacityBytes() != tc.want {
				t.Fatalf("capacity %d, want %d", vol.GetCapacityBytes(), tc.want)
			}
			// The node formats and mounts it: the point of the size.
			e.lifecycle(t, vol, mountCap(tc.fsType), false, func(target string) {
				if err := os.WriteFile(filepath.Join(target, "f"), []byte("data"), 0o600); err != nil {
					t.Errorf("writing to the mounted %s volume: %v", tc.fsType, err)
				}
			})
		})
	}
}

func TestSnapshotMetadataOfBlockVolumes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	vol := e.create(t, "meta", 4<<20, blockCap())
	img := e.plugin.Controller.l.volumeImage(vol.GetVolumeId())
	write := func(off int64, data byte, n int) {
		f, err := os.OpenFile(img, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, n)
		for i := range buf {
			buf[i] = data
		}
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 'a', 4096)
	write(1<<20, 'b', 8192)
	base, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "base", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	write(1<<20, 'c', 100) // changes the chunk at 1 MiB
	write(3<<20, 'd', 10)  // new data at 3 MiB
	target, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "target", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	recv := func(next func() ([]*csi.BlockMetadata, error)) [][2]int64 {
		var out [][2]int64
		for {
			blocks, err := next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range blocks {
				out = append(out, [2]int64{b.GetByteOffset(), b.GetSizeBytes()})
			}
		}
	}
	as, err := e.metadata.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: base.GetSnapshot().GetSnapshotId()})
	if err != nil {
		t.Fatal(err)
	}
	allocated := recv(func() ([]*csi.BlockMetadata, error) { r, err := as.Recv(); return r.GetBlockMetadata(), err })
	covers := func(ranges [][2]int64, off int64) bool {
		for _, r := range ranges {
			if off >= r[0] && off < r[0]+r[1] {
				return true
			}
		}
		return false
	}
	if !covers(allocated, 0) || !covers(allocated, 1<<20) || covers(allocated, 2<<20) || covers(allocated, 3<<20) {
		t.Fatalf("allocated ranges %v: want data at 0 and 1 MiB only", allocated)
	}
	ds, err := e.metadata.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: base.GetSnapshot().GetSnapshotId(), TargetSnapshotId: target.GetSnapshot().GetSnapshotId()})
	if err != nil {
		t.Fatal(err)
	}
	delta := recv(func() ([]*csi.BlockMetadata, error) { r, err := ds.Recv(); return r.GetBlockMetadata(), err })
	if covers(delta, 0) || !covers(delta, 1<<20) || !covers(delta, 3<<20) {
		t.Fatalf("delta ranges %v: want the chunks at 1 MiB and 3 MiB, not 0", delta)
	}
	dirVol := e.create(t, "meta-dir", 1<<20, mountCap(""))
	dirSnap, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "dir-snap", SourceVolumeId: dirVol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.metadata.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: dirSnap.GetSnapshot().GetSnapshotId()})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("metadata of a directory snapshot: %v, want FAILED_PRECONDITION", err)
	}
}

func TestRestartReconcilesInterruptedOperations(t *testing.T) {
	e := newEnv(t)
	kept := e.create(t, "kept", 1<<20, mountCap(""))
	gone := e.create(t, "gone", 1<<20, mountCap(""))
	l := e.plugin.Controller.l
	e.stop()
	// A create cut short after making its backing, and a delete cut short after emptying its
	// backing in the trash (what DeleteVolume does before its commit).
	orphan := newID("vol")
	if err := os.Mkdir(l.volumeDir(orphan), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := createImage(l.volumeImage(newID("vol")), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(l.volumeDir(gone.GetVolumeId()), l.trashed(kindDir, gone.GetVolumeId())); err != nil {
		t.Fatal(err)
	}
	e.start()
	if left, err := l.trashEntries(); err != nil || len(left) != 0 {
		t.Fatalf("after restart the trash holds %v, %v; want it empty", left, err)
	}
	got := backings(t, l.volumesDir())
	if !slices.Equal(got, []string{kept.GetVolumeId()}) {
		t.Fatalf("after restart the volumes directory holds %v, want only %s", got, kept.GetVolumeId())
	}
	list, err := e.controller.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetVolume().GetVolumeId() != kept.GetVolumeId() {
		t.Fatalf("ListVolumes after restart = %v, %v", list, err)
	}
	// The name of the dropped volume is free; capacity accounting was recomputed.
	e.create(t, "gone", 1<<20, mountCap(""))
	capResp, err := e.controller.GetCapacity(context.Background(), &csi.GetCapacityRequest{})
	if err != nil || capResp.GetAvailableCapacity() != e.cfg.CapacityBytes-2<<20 {
		t.Fatalf("GetCapacity = %v, %v; want %d", capResp, err, e.cfg.CapacityBytes-2<<20)
	}
}

func TestCapacityAndLimits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "huge", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
		CapacityRange: &csi.CapacityRange{RequiredBytes: e.cfg.CapacityBytes + 1}})
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("bigger than the pool: %v, want OUT_OF_RANGE", err)
	}
	_, err = e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "elsewhere", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{TopologyNodeKey: "node-2"}}}}})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("another node's topology: %v, want RESOURCE_EXHAUSTED", err)
	}
	_, err = e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "typo", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
		Parameters: map[string]string{"knd": "file"}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "knd") {
		t.Fatalf("unknown parameter: %v, want INVALID_ARGUMENT naming it", err)
	}
	var vols []*csi.Volume
	for i := range e.cfg.MaxVolumesPerNode + 1 {
		vols = append(vols, e.create(t, fmt.Sprint("attach-", i), 1<<20, mountCap("")))
	}
	for i, v := range vols {
		_, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: "node-1", VolumeCapability: mountCap("")})
		if int64(i) < e.cfg.MaxVolumesPerNode && err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if int64(i) == e.cfg.MaxVolumesPerNode && status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("publish past the attach limit: %v, want RESOURCE_EXHAUSTED", err)
		}
	}
	if _, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vols[0].GetVolumeId()}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("deleting a published volume: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := e.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vols[0].GetVolumeId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vols[len(vols)-1].GetVolumeId(), NodeId: "node-1", VolumeCapability: mountCap("")}); err != nil {
		t.Fatalf("publish after a slot was freed: %v", err)
	}
	if _, err := e.controller.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: vols[0].GetVolumeId(), MutableParameters: map[string]string{"iops": "1000", "bogus": "1"}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("modify with a key outside the allow-list: %v, want INVALID_ARGUMENT", err)
	}
	rec, _ := e.plugin.Controller.volume(vols[0].GetVolumeId())
	if len(rec.Mutable) != 0 {
		t.Fatalf("a rejected modify applied %v", rec.Mutable)
	}
}

// TestSnapshotAcceptsSnapshotterMetadata: csi-snapshotter's --extra-create-metadata adds
// csi.storage.k8s.io/volumesnapshot/* parameters to CreateSnapshot; they must not fail it, while
// a key of the driver's own namespace that it does not know still does.
func TestSnapshotAcceptsSnapshotterMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	vol := e.create(t, "snap-src", 1<<20, mountCap(""))
	_, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-meta", SourceVolumeId: vol.GetVolumeId(),
		Parameters: map[string]string{
			"csi.storage.k8s.io/volumesnapshot/name":        "s1",
			"csi.storage.k8s.io/volumesnapshot/namespace":   "default",
			"csi.storage.k8s.io/volumesnapshotcontent/name": "snapcontent-1",
		}})
	if err != nil {
		t.Fatalf("CreateSnapshot with the snapshotter's metadata: %v", err)
	}
	_, err = e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap-typo", SourceVolumeId: vol.GetVolumeId(),
		Parameters: map[string]string{"retention": "7d"}})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("unknown snapshot parameter: %v, want INVALID_ARGUMENT naming it", err)
	}
}

// TestXFSCopiesStageBesideTheirSource: a clone and a restored snapshot of an xfs volume carry
// their source's file-system UUID, which XFS will not mount twice; each stages (and shows the
// source's data) while the source is staged on the same node, as the storage e2e suite's
// multiVolume specs use them.
func TestXFSCopiesStageBesideTheirSource(t *testing.T) {
	needRoot(t)
	testenv.Tool(t, "mkfs.xfs", "xfsprogs")
	e := newEnv(t)
	ctx := context.Background()
	cp := mountCap("xfs")
	src := e.create(t, "xfs-source", 300<<20, cp)
	staged := map[string]string{} // volume ID -> staging path
	t.Cleanup(func() {
		for id, staging := range staged {
			if err := e.unstage(id, staging); err != nil {
				t.Errorf("unstage %s: %v", id, err)
			}
		}
	})
	stage := func(vol *csi.Volume) string {
		t.Helper()
		staging := filepath.Join(e.dir, "pods", vol.GetVolumeId(), "staging")
		if err := os.MkdirAll(staging, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := e.stage(vol, staging, cp); err != nil {
			t.Fatalf("stage %s beside its source: %v", vol.GetVolumeId(), err)
		}
		staged[vol.GetVolumeId()] = staging
		return staging
	}
	if err := os.WriteFile(filepath.Join(stage(src), "f"), []byte("source data"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The copies are taken while the source is mounted: sync so that the image holds the file.
	unix.Sync()
	snap, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "xfs-snap", SourceVolumeId: src.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		source *csi.VolumeContentSource
	}{
		{"xfs-clone", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}},
		{"xfs-restore", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}},
	} {
		resp, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: tc.name, VolumeCapabilities: []*csi.VolumeCapability{cp},
			CapacityRange: &csi.CapacityRange{RequiredBytes: 300 << 20}, VolumeContentSource: tc.source})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := os.ReadFile(filepath.Join(stage(resp.GetVolume()), "f"))
		if err != nil || string(got) != "source data" {
			t.Errorf("%s: %q, %v; want the source's data", tc.name, got, err)
		}
	}
}
