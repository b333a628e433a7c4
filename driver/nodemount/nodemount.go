// Package nodemount does the node side of a CSI driver that is easy to get wrong, over
// k8s.io/mount-utils: idempotent bind publish of a directory, file or block device node
// (Mounter.Bind), idempotent mounts of a tmpfs, NFS or FUSE filesystem (Mounter.Mount),
// read-only mounts that really are read-only, unpublish that removes every mount stacked at a
// target before it removes the target, format-and-mount, filesystem resize, "is this path a mount
// point, and of what" (At, SourceOf), "which mounts still reach this directory" (MountsOf), and
// loop devices for volumes that are image files (AttachLoop, FindLoop, DetachLoop), found again
// from the kernel's record after a restart.
//
// Errors that a CSI backend returns as they are wrap the sentinels of package driver: a target
// already holding something else wraps driver.ErrAlreadyExists, a mount the caller does not own
// wraps driver.ErrFailedPrecondition, a symbolic link where a target should be wraps
// driver.ErrInvalidArgument.
//
// Mount flags given to this package may be sensitive (the CSI spec says so): they go to the
// kernel only, never into an error or a log line.
package nodemount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/csikit/csikit/driver"
)

// maxLayers bounds how many mounts Unmount takes off one path: a stack deeper than this is not
// the leftover of retries but something unmounting cannot fix.
const maxLayers = 64

// Mounter mounts and unmounts on this node. Its methods are safe for concurrent use; callers
// serialise work on one path (csikit holds the volume's staging or target path for the duration of
// a node call).
type Mounter struct {
	fm      *mount.SafeFormatAndMount
	resizer *mount.ResizeFs
	// unmount takes the top mount at a path off: fm's Unmount, or umount2(2) for New's.
	unmount func(path string) error
}

// New returns a Mounter that runs mount, mkfs, fsck and the resize tools of this host, and
// unmounts with the umount2 system call.
func New() *Mounter {
	exec := utilexec.New()
	// Without systemd: mount-utils' systemd detection caches its answer without a lock (two first
	// mounts at once race), and binds and kernel filesystems need no systemd scope. The scope
	// exists to keep FUSE daemons alive across a restart of the process that mounted them: here
	// a FUSE daemon Mount starts stops with the driver's container, and its mount then answers
	// ENOTCONN until it is unpublished and published again.
	m := NewWith(mount.NewWithoutSystemd(""), exec)
	// umount(8) resolves the path before it unmounts, and a lookup on a FUSE mount whose daemon
	// no longer answers never returns: unpublishing such a mount hung. umount2(2) finds the
	// mount without asking the file system (what `umount -c` does).
	m.unmount = func(path string) error {
		if err := unix.Unmount(path, 0); err != nil {
			return &os.PathError{Op: "umount2", Path: path, Err: err}
		}
		return nil
	}
	return m
}

// NewWith returns a Mounter over the given mount-utils implementation and command runner, for
// tests with mount-utils' fakes or a containerised mount binary. Bind, FormatAndMount and Unmount
// mount and unmount through m; Mount runs the mount command through exec, because mount-utils
// logs a failed mount's output, which may quote a (possibly secret) mount flag.
func NewWith(m mount.Interface, exec utilexec.Interface) *Mounter {
	return &Mounter{fm: mount.NewSafeFormatAndMount(m, exec), resizer: mount.NewResizeFs(exec), unmount: m.Unmount}
}

// Options are how a volume is mounted at a target.
type Options struct {
	// ReadOnly mounts it read-only. For a bind mount this takes a second, remounting, mount
	// (the kernel ignores MS_RDONLY on the bind itself); Bind checks that it took effect.
	ReadOnly bool
	// MountFlags are further mount options (the CSI capability's mount_flags). They may be
	// sensitive: they reach the kernel only.
	MountFlags []string
}

// Bind publishes source at target with a bind mount: a directory on a directory, a file or a
// block device node on a file. It creates target (and its parent) when missing, as a directory
// or an empty file according to source. Calling it again with the same source and read-only
// setting succeeds without mounting again; a target that already shows something else, or the
// same source with the other read-only setting, is an error wrapping driver.ErrAlreadyExists.
// On failure it leaves nothing mounted and removes the target if it created it.
func (m *Mounter) Bind(source, target string, o Options) error {
	src, err := os.Stat(source)
	if err != nil {
		return fmt.Errorf("bind source: %w", err)
	}
	same := func(cur *Info, p string) (string, error) { return m.compare(cur, p, source, o) }
	return m.mountAt(source, target, src.IsDir(), o, same, func(p string) error {
		opts := []string{"bind"}
		if o.ReadOnly {
			opts = append(opts, "ro")
		}
		return m.fm.MountSensitive(source, p, "", opts, o.MountFlags)
	})
}

// FormatAndMount mounts the filesystem on device at the directory target, creating target when
// missing and formatting device as fsType first if it holds no filesystem at all (mount-utils'
// SafeFormatAndMount: a device with another filesystem or a partition table is never formatted;
// an ext filesystem is checked before it is mounted). It is idempotent like Bind.
//
// device must be a block device. An image file is refused before anything is formatted or
// created, with advice to attach it first (AttachLoop): mkfs would format the file, and mount
// would then mount it through a loop device of its own that the mount table shows instead of
// the file, which no later call could recognise or detach. The refusal wraps no driver
// sentinel: it is a fault of the driver, not of the CO's request, so the CO gets INTERNAL.
func (m *Mounter) FormatAndMount(device, target, fsType string, o Options) error {
	if err := checkBlockDevice(device); err != nil {
		return err
	}
	same := func(cur *Info, p string) (string, error) { return m.compare(cur, p, device, o) }
	return m.mountAt(device, target, true, o, same, func(p string) error {
		var opts []string
		if o.ReadOnly {
			opts = append(opts, "ro")
		}
		return m.fm.FormatAndMountSensitive(device, p, fsType, opts, o.MountFlags)
	})
}

// checkBlockDevice refuses a device path that exists and is not a block device, naming what it
// is. A path that does not exist is left to mount-utils, whose error names it, and to tests that
// run mount-utils' fakes on device names that exist nowhere.
func checkBlockDevice(device string) error {
	fi, err := os.Stat(device)
	if err != nil {
		return nil
	}
	switch {
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		return nil
	case fi.Mode().IsRegular():
		return fmt.Errorf("format and mount %s: it is a regular file, not a block device; attach it to a loop device "+
			"with nodemount.AttachLoop and pass the device it returns (nothing was formatted)", device)
	}
	return fmt.Errorf("format and mount %s: it is a %s, not a block device (nothing was formatted)", device, fileKind(fi.Mode()))
}

// mountAt is the part Bind, FormatAndMount and Mount share: prepare target, accept what is already
// there if it is the same, mount, check, undo on failure. same describes how the mount at p
// differs from what is asked for ("" when it does not).
func (m *Mounter) mountAt(source, target string, dir bool, o Options, same func(cur *Info, p string) (string, error), do func(p string) error) error {
	p, created, err := prepareTarget(target, dir)
	if err != nil {
		return err
	}
	undo := func(err error) error {
		if created {
			_ = os.Remove(p)
		}
		return err
	}
	if cur, err := At(p); err != nil {
		return undo(err)
	} else if cur != nil {
		diff, err := same(cur, p)
		if err != nil {
			return fmt.Errorf("compare the mount at %s with %s: %w", p, source, err)
		}
		if diff != "" {
			return fmt.Errorf("%s already has %s: %w", p, diff, driver.ErrAlreadyExists)
		}
		return nil
	}
	if err := do(p); err != nil {
		// A bind whose remount failed is left mounted by mount-utils: take it off again.
		if cur, _ := At(p); cur != nil {
			_ = m.unmount(p)
		}
		// mount's output may quote a flag back (a FUSE daemon does, for one it does not know).
		return undo(fmt.Errorf("mount %s at %s: %s", source, target, redactFlags(err.Error(), o.MountFlags)))
	}
	cur, err := At(p)
	if err == nil && cur == nil {
		err = errors.New("the mount does not show in the mount table")
	}
	if err == nil && o.ReadOnly && !cur.ReadOnly() {
		err = errors.New("mounted read-write although read-only was asked for")
	}
	if err == nil {
		// What a repeated call will compare must match now, or that call would refuse the mount.
		var diff string
		if diff, err = same(cur, p); err == nil && diff != "" {
			err = fmt.Errorf("the mount table shows %s, so a repeated call would refuse it (name the source and type as the table does)", diff)
		}
	}
	if err != nil {
		_ = m.unmount(p)
		return undo(fmt.Errorf("mount %s at %s: %w", source, target, err))
	}
	return nil
}

// compare describes how the mount cur at p differs from a mount of source with the requested
// read-only setting, "" when it does not: a repeated publish.
func (m *Mounter) compare(cur *Info, p, source string, o Options) (string, error) {
	same, err := Shows(p, source)
	if err != nil {
		return "", err
	}
	if !same {
		where, _ := SourceOf(p)
		return fmt.Sprintf("%s mounted, not %s", where, source), nil
	}
	if cur.ReadOnly() != o.ReadOnly {
		return fmt.Sprintf("%s mounted with read-only=%t", source, cur.ReadOnly()), nil
	}
	return "", nil
}

// redactFlags replaces every mount flag in msg, and every value of a flag long enough to be a
// secret, with <masked>. Words this package knows as flags are not secrets and stay.
func redactFlags(msg string, flags []string) string {
	for _, f := range flags {
		if _, known := vfsFlags[f]; known || impliedFlags[f] != nil || f == "ro" || f == "rw" {
			continue
		}
		msg = strings.ReplaceAll(msg, f, "<masked>")
		if _, v, ok := strings.Cut(f, "="); ok && len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "<masked>")
		}
	}
	return msg
}

// prepareTarget creates target's parent and target itself (a directory, or an empty file when
// dir is false) and returns its canonical path and whether it created it. A symbolic link at
// target is refused: following it would mount somewhere the CO did not name.
func prepareTarget(target string, dir bool) (string, bool, error) {
	if !filepath.IsAbs(target) {
		return "", false, fmt.Errorf("target %q is not absolute: %w", target, driver.ErrInvalidArgument)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(target)), 0o750); err != nil {
		return "", false, fmt.Errorf("create the parent of %s: %w", target, err)
	}
	p, err := Canonical(target)
	if err != nil {
		return "", false, err
	}
	if dir {
		err = os.Mkdir(p, 0o750)
	} else {
		var f *os.File
		if f, err = os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600); err == nil {
			err = f.Close()
		}
	}
	if err == nil {
		return p, true, nil
	}
	if !errors.Is(err, os.ErrExist) {
		return "", false, fmt.Errorf("create target %s: %w", target, err)
	}
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "", false, fmt.Errorf("inspect target %s: %w", target, err)
	case fi.Mode()&os.ModeSymlink != 0:
		return "", false, fmt.Errorf("target %s is a symbolic link; nothing is mounted through a link: %w", target, driver.ErrInvalidArgument)
	case fi.IsDir() != dir:
		return "", false, fmt.Errorf("target %s exists and is not a %s: %w", target, kindName(dir), driver.ErrAlreadyExists)
	}
	return p, false, nil
}

func kindName(dir bool) string {
	if dir {
		return "directory"
	}
	return "file"
}

// Shows reports whether what is visible at path is source: the same directory or file (device
// and inode), the same block device node, or a filesystem on the block device source.
func Shows(path, source string) (bool, error) {
	var t, s unix.Stat_t
	if err := unix.Stat(path, &t); err != nil {
		return false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if err := unix.Stat(source, &s); err != nil {
		return false, &os.PathError{Op: "stat", Path: source, Err: err}
	}
	if s.Mode&unix.S_IFMT != unix.S_IFBLK {
		return t.Dev == s.Dev && t.Ino == s.Ino, nil
	}
	if t.Mode&unix.S_IFMT == unix.S_IFBLK {
		return t.Rdev == s.Rdev, nil
	}
	cur, err := At(path)
	if err != nil || cur == nil {
		return false, err
	}
	if uint32(cur.Major) == unix.Major(s.Rdev) && uint32(cur.Minor) == unix.Minor(s.Rdev) {
		return true, nil
	}
	// btrfs reports an anonymous device in mountinfo; its source names the real one.
	var named unix.Stat_t
	return cur.Source == source || (unix.Stat(cur.Source, &named) == nil && named.Rdev == s.Rdev &&
		named.Mode&unix.S_IFMT == unix.S_IFBLK), nil
}

// Unmount takes every mount stacked at path off, top first, until path is no longer a mount
// point: a publish retried by a buggy caller may have mounted several times. When owned is not
// nil it is asked about each mount before it is unmounted, and a mount it does not own stops
// Unmount with an error wrapping driver.ErrFailedPrecondition: a driver must not unmount what
// another volume or the administrator mounted there.
func (m *Mounter) Unmount(path string, owned func(*Info) (bool, error)) error {
	for range maxLayers {
		cur, err := At(path)
		if err != nil || cur == nil {
			return err
		}
		if owned != nil {
			ok, err := owned(cur)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%s has a mount that is not this volume's; it is left alone: %w", path, driver.ErrFailedPrecondition)
			}
		}
		if err := m.unmount(cur.MountPoint); err != nil {
			return fmt.Errorf("unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("%s is still a mount point after %d unmounts", path, maxLayers)
}

// Unpublish undoes Bind, Mount or FormatAndMount: it unmounts everything stacked at target and
// then removes target (see RemoveTarget). A target that does not exist is already unpublished.
func (m *Mounter) Unpublish(target string) error {
	if err := m.Unmount(target, nil); err != nil {
		return err
	}
	return RemoveTarget(target)
}

// RemoveTarget removes what Bind, Mount and FormatAndMount create at a target, an empty directory
// or an empty regular file, once it is no longer a mount point. Anything else there (a directory or
// file with content, a link, a device node) is left alone, never deleted: with nothing mounted,
// its content is not a volume's, and RemoveTarget returns nil. Removing through a mount would
// delete the volume's data, so a target that is still a mount point is an error wrapping
// driver.ErrFailedPrecondition.
//
// A target that does not exist is already removed: RemoveTarget returns nil, also when its parent
// does not exist or is not a directory, so that a retried NodeUnpublishVolume whose CO has
// cleaned up the parent succeeds.
func RemoveTarget(target string) error {
	p, err := Canonical(target)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur, err := At(p); err != nil {
		return err
	} else if cur != nil {
		return fmt.Errorf("%s is still a mount point; it is not removed: %w", target, driver.ErrFailedPrecondition)
	}
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR):
		return nil // ENOTDIR: the parent is a file, so there is no target
	case err != nil:
		return fmt.Errorf("inspect target: %w", err)
	case fi.IsDir():
		// rmdir, not RemoveAll: it removes only an empty directory, whatever happens meanwhile.
		if err := unix.Rmdir(p); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("remove target directory %s: %w", target, err)
		}
	case fi.Mode().IsRegular() && fi.Size() == 0:
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove target file %s: %w", target, err)
		}
	}
	return nil
}

// DiskFormat names the filesystem (or "unknown data, probably partitions") on device, "" when it
// holds none, as mount-utils decides whether to format.
func (m *Mounter) DiskFormat(device string) (string, error) {
	f, err := m.fm.GetDiskFormat(device)
	if err != nil {
		return "", fmt.Errorf("inspect %s for a filesystem: %w", device, err)
	}
	return f, nil
}

// Resize grows the filesystem on device to the device's size. With mountPath mounted it grows
// online (ext3/ext4, xfs and btrfs, through mount-utils' ResizeFs); an ext filesystem that is not
// mounted is checked (e2fsck, which resize2fs insists on) and grown offline, so a volume expanded
// while it could not be grown online gets its space at its next mount. A device without a
// filesystem has nothing to grow, and neither has a filesystem that already fills its device:
// Resize then succeeds, mounted or not, without any privilege.
//
// Growing a mounted ext filesystem needs CAP_SYS_RESOURCE (the kernel's online-resize ioctl checks
// it, even for root). Without it Resize still succeeds when nothing is left to grow, which is the
// common case for a CO: kubelet calls NodeExpandVolume after the NodeStageVolume that grew the
// filesystem offline. When there is space to take, the error wraps driver.ErrFailedPrecondition
// and names the missing capability.
func (m *Mounter) Resize(device, mountPath string) error {
	format, err := m.DiskFormat(device)
	if err != nil || format == "" {
		return err
	}
	cur, err := At(mountPath)
	if err != nil {
		return err
	}
	ext := format == "ext2" || format == "ext3" || format == "ext4"
	switch {
	case cur == nil && ext:
		return m.growExtOffline(device)
	case cur == nil:
		return fmt.Errorf("a %s filesystem grows only while mounted, and %s is not a mount point: %w", format, mountPath, driver.ErrFailedPrecondition)
	}
	// No capability check before the attempt: resize2fs first works out the size it would grow
	// to and exits "Nothing to do!" when that is the current size, before the ioctl that needs
	// the capability. Its rule is the exact one (since e2fsprogs 1.46.5 it also leaves out a
	// last block group too small for its own metadata, as the offline grow did), so a copy of it
	// here could only disagree with the tool that does the work.
	if _, err := m.resizer.Resize(device, mountPath); err != nil {
		if ext && !hasCapability(capSysResource) {
			return fmt.Errorf("grow the mounted %s filesystem on %s: %v; growing a mounted ext filesystem needs CAP_SYS_RESOURCE, which this process lacks: %w",
				format, device, err, driver.ErrFailedPrecondition)
		}
		return fmt.Errorf("grow the filesystem on %s: %w", device, err)
	}
	return nil
}

func (m *Mounter) growExtOffline(device string) error {
	// e2fsck exits 1 when it fixed something: the filesystem is then clean.
	if out, err := m.fm.Exec.Command("e2fsck", "-f", "-p", device).CombinedOutput(); err != nil {
		var ee utilexec.ExitError
		if !errors.As(err, &ee) || ee.ExitStatus() > 1 {
			return fmt.Errorf("check %s before growing it: %w: %s", device, err, out)
		}
	}
	if out, err := m.fm.Exec.Command("resize2fs", device).CombinedOutput(); err != nil {
		return fmt.Errorf("grow the filesystem on %s: %w: %s", device, err, out)
	}
	return nil
}

// capSysResource is the capability bit the kernel checks before it grows a mounted ext
// filesystem (EXT4_IOC_RESIZE_FS); containers often run without it, even as root.
const capSysResource = 24

// hasCapability reports whether bit is in this process's effective capability set.
func hasCapability(bit uint) bool {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<bit) != 0
		}
	}
	return false
}
