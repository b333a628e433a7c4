package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/nodemount"
	"github.com/csikit/csikit/internal/testenv"
)

func (e *env) stage(vol *csi.Volume, staging string, cp *csi.VolumeCapability) error {
	_, err := e.node.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolumeId(),
		StagingTargetPath: staging, VolumeCapability: cp, VolumeContext: vol.GetVolumeContext()})
	return err
}

func (e *env) unstage(id, staging string) error {
	_, err := e.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
	return err
}

func (e *env) publish(vol *csi.Volume, staging, target string, cp *csi.VolumeCapability) error {
	_, err := e.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(),
		StagingTargetPath: staging, TargetPath: target, VolumeCapability: cp, VolumeContext: vol.GetVolumeContext()})
	return err
}

func (e *env) unpublish(id, target string) error {
	_, err := e.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
	return err
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if status.Code(err) != want {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

// TestNodeRefusesSymlinkAtPath: a symlink at the staging or target path would send the mount
// elsewhere (and unpublish would then leak it); it is refused and nothing is mounted.
func TestNodeRefusesSymlinkAtPath(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	dirVol := e.create(t, "dir", 1<<20, mountCap(""))
	blockVol := e.create(t, "block", 1<<20, blockCap())
	tests := []struct {
		name   string
		vol    *csi.Volume
		cp     *csi.VolumeCapability
		victim func(t *testing.T, path string) // makes what the symlink points to
		stage  bool                            // the symlink is the staging path, not the target
	}{
		{"target is a symlink to a directory", dirVol, mountCap(""), func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o755)) }, false},
		{"block target is a symlink to a file", blockVol, blockCap(), func(t *testing.T, p string) { must(t, os.WriteFile(p, []byte("host data"), 0o644)) }, false},
		{"staging path is a symlink to a directory", dirVol, mountCap(""), func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o755)) }, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := filepath.Join(e.dir, fmt.Sprint("case", i))
			must(t, os.MkdirAll(base, 0o755))
			victim, link := filepath.Join(base, "victim"), filepath.Join(base, "link")
			tt.victim(t, victim)
			must(t, os.Symlink(victim, link))
			staging := filepath.Join(base, "staging")
			if tt.stage {
				wantCode(t, "stage on a symlink", e.stage(tt.vol, link, tt.cp), codes.InvalidArgument)
			} else {
				must(t, e.stage(tt.vol, staging, tt.cp))
				wantCode(t, "publish on a symlink", e.publish(tt.vol, staging, link, tt.cp), codes.InvalidArgument)
				must(t, e.unpublish(tt.vol.GetVolumeId(), link))
				must(t, e.unstage(tt.vol.GetVolumeId(), staging))
			}
			if m := e.ourMounts(); len(m) != 0 {
				t.Fatalf("mounts left: %v", m)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the CO's symlink was changed: %v, %v", fi, err)
			}
		})
	}
}

// TestNodeActsOnlyOnItsOwnPaths: unpublish and unstage touch only what this volume mounted at
// the path it was staged or published at, and remove only an empty directory or file; stage and
// publish never adopt or mount over another volume's mount.
func TestNodeActsOnlyOnItsOwnPaths(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	a := e.create(t, "a", 1<<20, mountCap(""))
	b := e.create(t, "b", 16<<20, mountCap("ext4"))
	c := e.create(t, "c", 1<<20, mountCap(""))
	stA, stB, tgtB := filepath.Join(e.dir, "stA"), filepath.Join(e.dir, "stB"), filepath.Join(e.dir, "tgtB")
	must(t, e.stage(a, stA, mountCap("")))
	must(t, e.stage(b, stB, mountCap("ext4")))
	must(t, e.publish(b, stB, tgtB, mountCap("ext4")))
	file := filepath.Join(e.dir, "precious.txt")
	must(t, os.WriteFile(file, []byte("x"), 0o644))
	full := filepath.Join(e.dir, "full-dir")
	must(t, os.MkdirAll(filepath.Join(full, "sub"), 0o755))
	link := filepath.Join(e.dir, "a-link")
	must(t, os.Symlink(full, link))
	mountsBefore := e.ourMounts()

	tests := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"unpublish A at B's target", func() error { return e.unpublish(a.GetVolumeId(), tgtB) }, codes.FailedPrecondition},
		{"unpublish A at a file with content", func() error { return e.unpublish(a.GetVolumeId(), file) }, codes.OK},
		{"unpublish A at a directory with content", func() error { return e.unpublish(a.GetVolumeId(), full) }, codes.OK},
		{"unpublish A at a symlink", func() error { return e.unpublish(a.GetVolumeId(), link) }, codes.OK},
		{"unstage A at B's staging path", func() error { return e.unstage(a.GetVolumeId(), stB) }, codes.FailedPrecondition},
		{"unstage B at another path", func() error { return e.unstage(b.GetVolumeId(), filepath.Join(e.dir, "nowhere")) }, codes.FailedPrecondition},
		{"publish A over B's target", func() error { return e.publish(a, stA, tgtB, mountCap("")) }, codes.FailedPrecondition},
		{"stage C over B's staging path", func() error { return e.stage(c, stB, mountCap("")) }, codes.FailedPrecondition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.name, tt.call(), tt.want)
			if got := e.ourMounts(); !slices.Equal(got, mountsBefore) {
				t.Fatalf("mounts changed: %v -> %v", mountsBefore, got)
			}
			if _, err := os.Stat(filepath.Join(full, "sub")); err != nil {
				t.Fatalf("a directory with content was touched: %v", err)
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != "x" {
				t.Fatalf("a file with content was touched: %q, %v", got, err)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("a symlink was touched: %v", err)
			}
			if r, _ := e.plugin.Node.published(b.GetVolumeId(), tgtB); r == nil {
				t.Fatal("B's publication record is gone")
			}
			for _, id := range []string{a.GetVolumeId(), b.GetVolumeId()} {
				if r, _ := e.plugin.Node.staged(id); r == nil {
					t.Fatalf("the staged record of %s is gone", id)
				}
			}
		})
	}
	must(t, e.unpublish(b.GetVolumeId(), tgtB))
	must(t, e.unstage(b.GetVolumeId(), stB))
	must(t, e.unstage(a.GetVolumeId(), stA))
	if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
		t.Fatalf("left mounts %v and loop devices %v", m, l)
	}
}

// writeImage writes a recognisable pattern into an image, as a raw block workload would.
func writeImage(t *testing.T, path string, offsets ...int64) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	copy(buf, "precious raw application data")
	for _, off := range offsets {
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
	return buf
}

func imageHas(t *testing.T, path string, data []byte, off int64) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, off); err != nil {
		t.Fatal(err)
	}
	return string(got) == string(data)
}

// TestRawBlockVolumeIsNeverFormatted: staging for filesystem access never runs mkfs over a raw
// block volume's data, whether or not the CO passes the volume context; it still formats an
// empty image, and one whose mkfs this node started and a crash cut short.
func TestRawBlockVolumeIsNeverFormatted(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	tests := []struct {
		name        string
		create      *csi.VolumeCapability
		noContext   bool
		data        bool // raw data written before the stage
		mkfsStarted bool // this node recorded that it began formatting
		want        codes.Code
	}{
		{"raw block volume, with volume context", blockCap(), false, true, false, codes.FailedPrecondition},
		{"raw block volume without data, with volume context", blockCap(), false, false, false, codes.FailedPrecondition},
		{"raw block volume, without volume context", blockCap(), true, true, false, codes.FailedPrecondition},
		{"empty ext4 volume, without volume context", mountCap("ext4"), true, false, false, codes.OK},
		{"ext4 volume whose mkfs was cut short", mountCap("ext4"), true, true, true, codes.OK},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vol := e.create(t, fmt.Sprint("raw", i), 16<<20, tt.create)
			img := e.plugin.Controller.l.volumeImage(vol.GetVolumeId())
			var data []byte
			if tt.data {
				data = writeImage(t, img, 1<<20, 8<<20)
			}
			if tt.mkfsStarted {
				must(t, e.plugin.Node.st.update(func(tx *bolt.Tx) error { return putString(tx, bFormatting, vol.GetVolumeId(), "ext4") }))
			}
			if tt.noContext {
				vol.VolumeContext = nil
			}
			staging := filepath.Join(e.dir, fmt.Sprint("st", i))
			err := e.stage(vol, staging, mountCap(""))
			wantCode(t, "stage for filesystem access", err, tt.want)
			if err != nil && tt.data && !imageHas(t, img, data, 8<<20) {
				t.Fatal("the refused stage destroyed the volume's data")
			}
			must(t, e.unstage(vol.GetVolumeId(), staging))
			if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
				t.Fatalf("left mounts %v and loop devices %v", m, l)
			}
		})
	}
}

// TestEphemeralPublishCutShortIsUnpublished: a publish of an inline volume killed after its mount
// and before its commit leaves a mount, a directory and no record; unpublish by the CO's ID
// removes all of it.
func TestEphemeralPublishCutShortIsUnpublished(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	coID := "csi-0123456789abcdef"
	target := filepath.Join(e.dir, "pod", "target")
	dir := e.plugin.Node.l.volumeDir(ephemeralID(coID))
	must(t, os.Mkdir(dir, 0o750))
	must(t, os.MkdirAll(target, 0o750))
	if err := unix.Mount(dir, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	e.restart() // the reconciliation keeps the directory: it is mounted
	must(t, e.unpublish(coID, target))
	if m := e.ourMounts(); len(m) != 0 {
		t.Fatalf("left mounts %v", m)
	}
	for _, p := range []string{target, dir} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left: %v", p, err)
		}
	}
}

// TestBlockPublicationWithoutItsLoopDevice: the loop device under a block publication is detached
// while its device node is still bind-mounted at the target (losetup -D), and the plugin
// restarts, so no staged record remains. A bind mount of a device node does not hold the loop
// device, so its number is free for the next attach on the node: the cases leave it free, give it
// to another image (as a concurrent attach does) with the volume unstaged or staged again on
// another device, and drop the publication record. Stats never report the other image's device
// as this volume's, health names the cause, a repeated publish answers OK only once the target
// reaches this volume again, and unpublish with the record cleans up without touching the other
// image; without the record it stays cautious.
func TestBlockPublicationWithoutItsLoopDevice(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name       string
		reuse      bool     // another image is attached to the volume's loop device number
		restage    bool     // the volume is staged again (on another device) before the checks
		dropRecord bool     // the publication record is lost
		reasons    []string // the health condition reported at the target is one of these
		publish    codes.Code
		unpublish  codes.Code
	}{
		// Another process on the node may attach a file to the free number at any time.
		{name: "device left free", reasons: []string{reasonLoopDetached, reasonLoopReused}, publish: codes.FailedPrecondition, unpublish: codes.OK},
		{name: "device reused by another image", reuse: true, reasons: []string{reasonLoopReused}, publish: codes.FailedPrecondition, unpublish: codes.OK},
		{name: "device reused, volume staged again", reuse: true, restage: true, reasons: []string{reasonLoopReused}, publish: codes.OK, unpublish: codes.OK},
		{name: "device reused, no publication record", reuse: true, dropRecord: true, publish: codes.FailedPrecondition, unpublish: codes.FailedPrecondition},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			vol := e.create(t, fmt.Sprint("b", i), 16<<20, blockCap())
			id, img := vol.GetVolumeId(), e.plugin.Controller.l.volumeImage(vol.GetVolumeId())
			staging, target := filepath.Join(e.dir, "st"), filepath.Join(e.dir, "tgt")
			scratch := filepath.Join(e.dir, "scratch.img")
			must(t, createImage(scratch, 8<<20))
			scratchData := writeImage(t, scratch, 0)
			var dev string
			for attempt := 1; ; attempt++ {
				must(t, e.stage(vol, staging, blockCap()))
				must(t, e.publish(vol, staging, target, blockCap()))
				var err error
				if dev, err = nodemount.FindLoop(img); err != nil || dev == "" {
					t.Fatalf("the staged volume's loop device: %q, %v", dev, err)
				}
				must(t, nodemount.DetachLoop(img))
				if !tt.reuse {
					break
				}
				if err := attachAt(dev, scratch); err == nil {
					t.Cleanup(func() { _ = nodemount.DetachLoop(scratch) })
					break
				} else if !errors.Is(err, unix.EBUSY) || attempt == 5 {
					t.Fatalf("attach the scratch image to %s: %v", dev, err)
				}
				// Another process took the number between the detach and the attach: the
				// scenario again, from the start.
				must(t, e.unpublish(id, target))
				must(t, e.unstage(id, staging))
			}
			if tt.dropRecord {
				must(t, e.plugin.Node.st.update(func(tx *bolt.Tx) error { return del(tx, bPublished, pubKey(id, target)) }))
			}
			e.restart()
			if tt.restage {
				must(t, e.stage(vol, staging, blockCap()))
			}

			// Each observation is reported and the next made: unpublish must clean up whatever
			// the others found.
			stats, err := e.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
			if status.Code(err) != codes.NotFound {
				t.Errorf("NodeGetVolumeStats at the target: %v, %v; want NotFound", stats.GetUsage(), err)
			}
			h, err := e.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id, VolumePublishPath: target})
			if got := healthReasons(h.GetVolumeHealth()); err != nil || len(tt.reasons) == 0 && len(got) != 0 ||
				len(tt.reasons) > 0 && (len(got) != 1 || !slices.Contains(tt.reasons, got[0])) {
				t.Errorf("health at the target: %v, %v; want one of %v", h.GetVolumeHealth().GetHealthStatuses(), err, tt.reasons)
			} else if len(got) == 1 && !strings.Contains(h.GetVolumeHealth().GetHealthStatuses()[0].GetMessage(), dev) {
				t.Errorf("health at the target does not name the loop device %s: %v", dev, h.GetVolumeHealth().GetHealthStatuses())
			}
			if err := e.publish(vol, staging, target, blockCap()); status.Code(err) != tt.publish {
				t.Errorf("NodePublishVolume again: %v, want %v", err, tt.publish)
			} else if tt.publish == codes.OK {
				now, err := nodemount.FindLoop(img)
				must(t, err)
				if got, want := rdevOf(t, target), rdevOf(t, now); got != want {
					t.Errorf("after the publish the target reaches device %#x, want the volume's %s (%#x)", got, now, want)
				} else if _, err := e.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target}); err != nil {
					t.Errorf("stats once the target reaches the volume again: %v", err)
				}
			}

			wantCode(t, "NodeUnpublishVolume", e.unpublish(id, target), tt.unpublish)
			if tt.reuse {
				if l, err := nodemount.FindLoop(scratch); err != nil || l != dev {
					t.Fatalf("the other image's loop device: %q, %v; want it still at %s", l, err, dev)
				}
				if !imageHas(t, scratch, scratchData, 0) {
					t.Fatal("the other image's data changed")
				}
			}
			if tt.unpublish != codes.OK {
				if m := e.ourMounts(); !slices.Contains(m, target) {
					t.Fatalf("the refused unpublish unmounted the target: %v", m)
				}
				must(t, unix.Unmount(target, 0))
			}
			if r, err := e.plugin.Node.published(id, target); err != nil || r != nil {
				t.Fatalf("publication record left: %+v, %v", r, err)
			}
			must(t, e.unstage(id, staging))
			if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
				t.Fatalf("left mounts %v and loop devices %v", m, l)
			}
			if tt.unpublish == codes.OK {
				if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("target left: %v", err)
				}
			}
		})
	}
}

// attachAt attaches file to the loop device dev itself, as losetup /dev/loopN FILE does, where
// nodemount.AttachLoop takes whichever device is free. An error wraps unix.EBUSY when dev has a
// file attached already.
func attachAt(dev, file string) error {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := unix.IoctlLoopConfigure(int(d.Fd()), &unix.LoopConfig{Fd: uint32(f.Fd())}); err != nil {
		return fmt.Errorf("attach %s to %s: %w", file, dev, err)
	}
	return nil
}

// rdevOf is the device number of the device node at path.
func rdevOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Stat(path, &st))
	return st.Rdev
}

// healthReasons lists the reasons of a volume's health conditions.
func healthReasons(h *csi.VolumeHealth) []string {
	var out []string
	for _, s := range h.GetHealthStatuses() {
		out = append(out, s.GetReason())
	}
	return out
}

// TestKubeletDirThroughSymlink: the kubelet directory is reached through a symlink (as
// /var/lib/kubelet -> /data/kubelet): mounts are seen, health is right, and unpublish and
// unstage clean up.
func TestKubeletDirThroughSymlink(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	ctx := context.Background()
	must(t, os.Mkdir(filepath.Join(e.dir, "data-kubelet"), 0o755))
	must(t, os.Symlink(filepath.Join(e.dir, "data-kubelet"), filepath.Join(e.dir, "kubelet")))
	for _, tc := range []struct {
		name string
		cp   *csi.VolumeCapability
	}{{"dir", mountCap("")}, {"ext4", mountCap("ext4")}, {"block", blockCap()}} {
		t.Run(tc.name, func(t *testing.T) {
			vol := e.create(t, tc.name, 16<<20, tc.cp)
			id := vol.GetVolumeId()
			staging := filepath.Join(e.dir, "kubelet", "plugins", tc.name)
			target := filepath.Join(e.dir, "kubelet", "pods", tc.name, "target")
			for range 2 {
				must(t, e.stage(vol, staging, tc.cp))
				must(t, e.publish(vol, staging, target, tc.cp))
			}
			h, err := e.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id, VolumePublishPath: target})
			if err != nil || len(h.GetVolumeHealth().GetHealthStatuses()) != 0 {
				t.Fatalf("health right after publish: %v, %v", h, err)
			}
			if _, err := e.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target}); err != nil {
				t.Fatalf("stats: %v", err)
			}
			for range 2 {
				must(t, e.unpublish(id, target))
				must(t, e.unstage(id, staging))
			}
			if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
				t.Fatalf("left mounts %v and loop devices %v", m, l)
			}
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("target left: %v", err)
			}
		})
	}
}

// TestInUseSeenByTheKernel: the in-use checks that guard DeleteVolume see a staged volume when
// the state directory is reached through a symlink and on btrfs (top level and subvolume, where
// stat's device is not mountinfo's), for every kind of volume, from the kernel's tables alone.
func TestInUseSeenByTheKernel(t *testing.T) {
	needRoot(t)
	layouts := []struct {
		name  string
		state func(t *testing.T, dir string) string
	}{
		{"state directory through a symlink", func(t *testing.T, dir string) string {
			must(t, os.Mkdir(filepath.Join(dir, "real"), 0o750))
			must(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "state")))
			return filepath.Join(dir, "state")
		}},
		{"btrfs top level", func(t *testing.T, dir string) string { return filepath.Join(btrfs(t, dir), "state") }},
		{"btrfs subvolume", func(t *testing.T, dir string) string {
			sv := filepath.Join(btrfs(t, dir), "sv")
			if out, err := exec.Command("btrfs", "subvolume", "create", sv).CombinedOutput(); err != nil {
				t.Fatalf("btrfs subvolume create: %v %s", err, out)
			}
			return filepath.Join(sv, "state")
		}},
	}
	for _, lt := range layouts {
		t.Run(lt.name, func(t *testing.T) {
			dir := t.TempDir()
			e := newEnvAt(t, dir, Config{StateDir: lt.state(t, dir), NodeID: "node-1", CapacityBytes: 1 << 30})
			for _, tc := range []struct {
				name string
				cp   *csi.VolumeCapability
			}{{"dir", mountCap("")}, {"block", blockCap()}, {"ext4", mountCap("ext4")}} {
				vol := e.create(t, tc.name, 16<<20, tc.cp)
				id := vol.GetVolumeId()
				kind := vol.GetVolumeContext()[volumeContextKind]
				backing := e.plugin.Controller.l.backing(kind, id)
				staging := filepath.Join(dir, "stage-"+tc.name)
				must(t, e.stage(vol, staging, tc.cp))
				if where, err := backingInUse(kind, backing); err != nil || where == "" {
					t.Fatalf("%s: staged volume not seen in use by the kernel checks: %q, %v", tc.name, where, err)
				}
				_, err := e.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: id})
				wantCode(t, tc.name+": DeleteVolume of a staged volume", err, codes.FailedPrecondition)
				if kind == kindDir {
					// A subPath mount: a directory inside the volume bind-mounted elsewhere.
					sub, subTarget := filepath.Join(staging, "sub"), filepath.Join(dir, "subpath")
					must(t, os.Mkdir(sub, 0o755))
					must(t, os.Mkdir(subTarget, 0o755))
					must(t, unix.Mount(sub, subTarget, "", unix.MS_BIND, ""))
					must(t, e.unstage(id, staging))
					if where, err := backingInUse(kind, backing); err != nil || where != subTarget {
						t.Fatalf("a bind mount of a directory inside the volume: in use at %q, %v; want %s", where, err, subTarget)
					}
					must(t, unix.Unmount(subTarget, 0))
					// A filesystem someone mounted on the volume's directory itself (MountsOf
					// leaves the directory's own mount to At).
					must(t, unix.Mount("tmpfs", backing, "tmpfs", 0, "size=1m"))
					if where, err := backingInUse(kind, backing); err != nil || where != backing {
						t.Fatalf("a filesystem mounted on the volume's directory: in use at %q, %v; want %s", where, err, backing)
					}
					must(t, unix.Unmount(backing, 0))
				} else {
					must(t, e.unstage(id, staging))
				}
				if where, err := backingInUse(kind, backing); err != nil || where != "" {
					t.Fatalf("%s: unstaged volume in use at %q, %v", tc.name, where, err)
				}
				if _, err := e.controller.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
					t.Fatalf("%s: DeleteVolume after unstage: %v", tc.name, err)
				}
			}
		})
	}
}

// btrfs makes a btrfs file system on a loop device under dir and mounts it; it skips the test
// when mkfs.btrfs is not installed.
func btrfs(t *testing.T, dir string) string {
	t.Helper()
	testenv.Tool(t, "mkfs.btrfs", "btrfs-progs")
	img := filepath.Join(dir, "btrfs.img")
	must(t, createImage(img, 256<<20))
	if out, err := exec.Command("mkfs.btrfs", "-q", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs: %v %s", err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount btrfs: %v %s", err, out)
	}
	return mnt
}

// TestParallelVolumeLives drives many volumes of every kind through their whole life at once:
// nothing serialises them but the library's per-volume lock, and nothing is left behind.
func TestParallelVolumeLives(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	e := newEnvAt(t, dir, Config{StateDir: filepath.Join(dir, "state"), NodeID: "node-1", CapacityBytes: 64 << 30})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range 2 {
				cp := []*csi.VolumeCapability{mountCap(""), mountCap("ext4"), blockCap()}[w%3]
				name := fmt.Sprintf("w%d-%d", w, it)
				r, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{cp},
					CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
				if err != nil {
					errs <- fmt.Errorf("%s create: %w", name, err)
					return
				}
				vol := r.GetVolume()
				id := vol.GetVolumeId()
				st, tg := filepath.Join(dir, name, "st"), filepath.Join(dir, name, "tg")
				steps := []func() error{
					func() error { return e.stage(vol, st, cp) },
					func() error { return e.publish(vol, st, tg, cp) },
					func() error { return e.unpublish(id, tg) },
					func() error { return e.unstage(id, st) },
					func() error {
						_, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
						return err
					},
				}
				for i, s := range steps {
					if err := s(); err != nil {
						errs <- fmt.Errorf("%s step %d: %w", name, i, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m, l := e.ourMounts(), e.ourLoops(); len(m)+len(l) != 0 {
		t.Fatalf("left mounts %v and loop devices %v", m, l)
	}
}

// TestSingleNodeSingleWriterPublishesOnce: a SINGLE_NODE_SINGLE_WRITER publication excludes any
// other, whichever of the two came first.
func TestSingleNodeSingleWriterPublishesOnce(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	withMode := func(m csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
		c := mountCap("")
		c.AccessMode.Mode = m
		return c
	}
	snsw, snmw := withMode(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER), withMode(csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER)
	tests := []struct {
		name          string
		first, second *csi.VolumeCapability
	}{
		{"single writer first", snsw, snmw},
		{"single writer second", snmw, snsw},
		{"two single writers", snsw, snsw},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vol := e.create(t, fmt.Sprint("snsw", i), 1<<20, mountCap(""))
			base := filepath.Join(e.dir, fmt.Sprint("snsw", i))
			staging, t1, t2 := filepath.Join(base, "st"), filepath.Join(base, "t1"), filepath.Join(base, "t2")
			must(t, e.stage(vol, staging, tt.first))
			must(t, e.publish(vol, staging, t1, tt.first))
			wantCode(t, "second publication", e.publish(vol, staging, t2, tt.second), codes.FailedPrecondition)
			must(t, e.unpublish(vol.GetVolumeId(), t1))
			must(t, e.publish(vol, staging, t2, tt.second)) // alone now
			must(t, e.unpublish(vol.GetVolumeId(), t2))
			must(t, e.unstage(vol.GetVolumeId(), staging))
		})
	}
}

// TestPublishesOfOneVolumeWaitForEachOther: csikit lets two NodePublishVolume calls of one volume
// to two targets in at once (two pods on one node). This driver's SINGLE_NODE_SINGLE_WRITER check
// looks at the volume's other publications, so the second call must wait for the first to commit
// (serialised on the volume, not refused), then see it: exactly one of two single-writer
// publications succeeds.
func TestPublishesOfOneVolumeWaitForEachOther(t *testing.T) {
	needRoot(t)
	e := newEnv(t)
	vol := e.create(t, "one-writer", 1<<20, mountCap(""))
	sw := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
	}
	base := filepath.Join(e.dir, "pods")
	staging, targets := filepath.Join(base, "staging"), []string{filepath.Join(base, "pod-a"), filepath.Join(base, "pod-b")}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := e.stage(vol, staging, sw); err != nil {
		t.Fatal(err)
	}

	inFirst, release := make(chan struct{}), make(chan struct{})
	overlap := make(chan struct{}, 1)
	var calls sync.Mutex
	n := 0
	failpoint = func(name string) error {
		if name != "node-publish:before-commit" {
			return nil
		}
		calls.Lock()
		n++
		first := n == 1
		calls.Unlock()
		if first {
			close(inFirst)
			<-release
			return nil
		}
		select {
		case <-release:
		default: // the first publish is still inside: the two overlap
			overlap <- struct{}{}
		}
		return nil
	}
	t.Cleanup(func() { failpoint = nil })
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // runs before the server stops, even when the test fails below
	contended := make(chan string, 1)
	e.plugin.Node.volumes.contended = func(key string) {
		select {
		case contended <- key:
		default:
		}
	}

	results := make([]chan error, len(targets))
	for i, target := range targets {
		results[i] = make(chan error, 1)
		if i == 1 {
			<-inFirst // the first publish has mounted and not yet committed
		}
		go func() { results[i] <- e.publish(vol, staging, target, sw) }()
	}
	select {
	case key := <-contended:
		if key != vol.GetVolumeId() {
			t.Fatalf("the second publish waited for %q, want the volume %q", key, vol.GetVolumeId())
		}
	case <-overlap:
		t.Fatal("the second publish of the volume ran its checks while the first was still inside")
	case err := <-results[1]:
		t.Fatalf("the second publish returned while the first was inside: %v", err)
	}
	open()
	if err := <-results[0]; err != nil {
		t.Fatalf("first publish: %v", err)
	}
	if err := <-results[1]; status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("second SINGLE_NODE_SINGLE_WRITER publish: %v, want FAILED_PRECONDITION", err)
	}
	if err := e.unpublish(vol.GetVolumeId(), targets[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.unstage(vol.GetVolumeId(), staging); err != nil {
		t.Fatal(err)
	}
}
