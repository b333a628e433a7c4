package nodemount

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
)

// Loop devices are driven with the kernel's ioctls (LOOP_CTL_GET_FREE, LOOP_CONFIGURE,
// LOOP_CLR_FD, LOOP_GET_STATUS64), not by running losetup and parsing its output: no tool to
// install in the driver's image and no output format to follow. k8s.io/mount-utils has no loop
// support (Kubernetes' own volumepathhandler runs losetup). What is attached is read from the
// kernel's own record (/sys/block/loopN/loop/backing_file), never from a table of this process,
// so a driver that restarts, or a node plugin pod that is replaced, finds every device it
// attached before.

// loopMu serialises this process's attaches and detaches: picking a free device and configuring
// it are two steps, and two goroutines must not both find "none attached" and attach twice. The
// flock that AttachLoop and DetachLoop take on the image does the same between processes.
var loopMu sync.Mutex

// deletedSuffix is what the kernel appends to the backing file of a loop device whose file was
// unlinked.
const deletedSuffix = " (deleted)"

// sysBlock is where the kernel lists block devices.
const sysBlock = "/sys/block"

// freeLoopAttempts bounds how often AttachLoop asks for a free device: another process may
// configure the device it was given first (EBUSY), and then it asks again.
const freeLoopAttempts = 16

// Loop is a loop device with a file attached, as the kernel reports it.
type Loop struct {
	// Device is the device node, such as "/dev/loop3".
	Device string
	// Major and Minor are the device's numbers, as a mount of a filesystem on it shows them
	// (Info.Major, Info.Minor).
	Major, Minor uint32
	// BackingFile is the attached file's path as the kernel names it, without the " (deleted)"
	// it adds once the file is unlinked. The kernel names the file as the process that attached
	// it saw it: when that process ran in a container that is gone, this is the path within the
	// container's mount of the file's directory, the tail of the host's path. Backs allows for
	// that.
	BackingFile string
	// Deleted reports that the file was unlinked (or renamed over) after it was attached; the
	// device still holds the data that file had.
	Deleted bool
}

// Loops lists every loop device that has a file attached, in device number order. A device
// detached while Loops reads the kernel's record is left out.
func Loops() ([]Loop, error) {
	entries, err := filepath.Glob(sysBlock + "/loop*/loop/backing_file")
	if err != nil {
		return nil, fmt.Errorf("list loop devices: %w", err)
	}
	out := make([]Loop, 0, len(entries))
	for _, e := range entries {
		dir := filepath.Dir(filepath.Dir(e)) // /sys/block/loopN
		raw, err := os.ReadFile(e)
		if err != nil {
			continue // detached between the glob and the read
		}
		numbers, err := os.ReadFile(dir + "/dev")
		if err != nil {
			continue
		}
		major, minor, ok := parseDevNumbers(string(numbers))
		if !ok {
			return nil, fmt.Errorf("%s/dev holds %q, not major:minor", dir, strings.TrimSpace(string(numbers)))
		}
		backing, deleted := strings.CutSuffix(strings.TrimSuffix(string(raw), "\n"), deletedSuffix)
		out = append(out, Loop{Device: "/dev/" + filepath.Base(dir), Major: major, Minor: minor, BackingFile: backing, Deleted: deleted})
	}
	slices.SortFunc(out, func(a, b Loop) int {
		if a.Major != b.Major {
			return int(a.Major) - int(b.Major)
		}
		return int(a.Minor) - int(b.Minor)
	})
	return out, nil
}

// parseDevNumbers reads a sysfs "dev" file: "7:3\n".
func parseDevNumbers(s string) (uint32, uint32, bool) {
	ma, mi, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return 0, 0, false
	}
	major, err1 := strconv.ParseUint(ma, 10, 32)
	minor, err2 := strconv.ParseUint(mi, 10, 32)
	return uint32(major), uint32(minor), err1 == nil && err2 == nil
}

// Backs reports whether l is attached to the file at image, the path of an image file as the
// caller names it (symbolic links are resolved; a relative path is taken from the working
// directory).
//
// The path the kernel names must be image's real path, or its tail from a directory on (the
// file attached from a container that is gone, see BackingFile); the file must then be the same
// (device and inode, from LOOP_GET_STATUS64), not another one created at that path since. When
// image no longer exists, a device whose file was unlinked from that path backs it: the device
// holds what was the image. When the device cannot be asked (its node is missing from /dev), the
// path alone decides.
func (l Loop) Backs(image string) bool {
	p, err := imagePath(image)
	if err != nil {
		return false
	}
	return l.backs(p)
}

// backs is Backs for an image path already made real by imagePath.
func (l Loop) backs(image string) bool {
	if l.BackingFile != image && (!strings.HasPrefix(l.BackingFile, "/") || !strings.HasSuffix(image, l.BackingFile)) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(image, &st); err != nil {
		return l.Deleted // the image is gone: a device that held a file unlinked there held it
	}
	if l.Deleted {
		return false // an unlinked file is not the image now at that path
	}
	f, err := os.OpenFile(l.Device, os.O_RDONLY, 0)
	if err != nil {
		return true // the device cannot be asked: the path has to do
	}
	defer f.Close()
	info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
	if err != nil {
		return !errors.Is(err, unix.ENXIO) // ENXIO: detached meanwhile
	}
	return info.Device == st.Dev && info.Inode == st.Ino
}

// imagePath is the path by which the kernel names image once it is attached: absolute, with
// every symbolic link resolved. For a file that no longer exists, its directory is resolved and
// its name kept, which is how the kernel names a file unlinked while attached.
func imagePath(image string) (string, error) {
	abs, err := filepath.Abs(image)
	if err != nil {
		return "", fmt.Errorf("image path %q: %w", image, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	if p, err := Canonical(abs); err == nil {
		return p, nil
	}
	return abs, nil
}

// FindLoop returns the loop device attached to the image file at image, or "" when none is. It
// asks the kernel, so it finds a device attached by an earlier run of the driver, by another
// process (losetup), or from a container that is gone (see Loop.Backs for how a device is
// matched to the file). When several devices are attached to the file, it returns the one with
// the lowest number.
func FindLoop(image string) (string, error) {
	p, err := imagePath(image)
	if err != nil {
		return "", err
	}
	devs, err := loopsOf(p)
	if err != nil || len(devs) == 0 {
		return "", err
	}
	return devs[0].Device, nil
}

// loopsOf lists the devices attached to the image at p (a path made real by imagePath).
func loopsOf(p string) ([]Loop, error) {
	loops, err := Loops()
	if err != nil {
		return nil, err
	}
	out := loops[:0]
	for _, l := range loops {
		if l.backs(p) {
			out = append(out, l)
		}
	}
	return out, nil
}

// AttachLoop attaches the image file at image to a free loop device, read-write, and returns
// the device ("/dev/loop3"). It is idempotent: when the file is already attached (by this
// process, an earlier run of it, or any other), it returns that device and attaches nothing.
// Concurrent calls for one file, in one process or several, return the same device: the
// lookup and the attach run under an exclusive flock(2) on the file, so a process that holds
// a flock on the image for long makes AttachLoop wait for it.
//
// The device stays attached when the process exits (no autoclear): a mounted filesystem or a
// published block volume on it outlives a restart of the driver, which then finds the device
// again with FindLoop. DetachLoop undoes it.
//
// A missing file is an error wrapping os.ErrNotExist; a path that is not a regular file (a
// directory, a device) is an error wrapping driver.ErrInvalidArgument. It needs CAP_SYS_ADMIN,
// /dev/loop-control and Linux 5.8 or later (LOOP_CONFIGURE).
func AttachLoop(image string) (string, error) {
	p, err := imagePath(image)
	if err != nil {
		return "", err
	}
	// Checked before the open, which would fail on a directory with a less helpful EISDIR.
	if fi, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("attach %s to a loop device: %w", image, err)
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("attach %s to a loop device: it is a %s, not an image file: %w", image, fileKind(fi.Mode()), driver.ErrInvalidArgument)
	}
	loopMu.Lock()
	defer loopMu.Unlock()
	unlock, err := lockImage(p)
	if err != nil {
		return "", fmt.Errorf("attach %s to a loop device: %w", image, err)
	}
	defer unlock()
	if devs, err := loopsOf(p); err != nil {
		return "", err
	} else if len(devs) > 0 {
		return devs[0].Device, nil
	}
	file, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s to a loop device: %w", image, err)
	}
	defer file.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s to a loop device: %w", image, err)
	}
	defer ctl.Close()
	for range freeLoopAttempts {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("attach %s: find a free loop device: %w", image, err)
		}
		dev := "/dev/loop" + strconv.Itoa(n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", fmt.Errorf("attach %s: open %s: %w", image, dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(file.Fd())}
		// The name is what losetup shows; the kernel keeps 63 bytes of it. Finding the device
		// again uses the kernel's own path of the file, which has no such limit.
		copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], p)
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
		lf.Close()
		if errors.Is(err, unix.EBUSY) {
			continue // another process configured it first
		}
		if err != nil {
			return "", fmt.Errorf("attach %s to %s: %w", image, dev, err)
		}
		return dev, nil
	}
	return "", fmt.Errorf("attach %s: no free loop device after %d attempts (other processes took each one offered)", image, freeLoopAttempts)
}

// fileKind names what a path that is not a regular file is, for an error.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// lockImage takes an exclusive flock(2) on the file at p and returns its release. The lock is
// on a descriptor of its own: a flock belongs to the open file, and the open file handed to
// LOOP_CONFIGURE lives on in the kernel as long as the device stays attached, so a lock on it
// would never be released.
func lockImage(p string) (unlock func(), err error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) { // a signal interrupted the wait: wait again
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() { f.Close() }, nil
}

// DetachLoop detaches every loop device attached to the image file at image (see Loop.Backs
// for how a device is matched to the file). It is idempotent: a file with no device attached,
// detached already or never attached, is success, and so is a file that no longer exists and
// had none. A device whose file was deleted while attached is found by the path the file had,
// and detached.
//
// A device still in use (a mounted filesystem, a published block volume) is detached by the
// kernel once its last user lets go, as losetup -d does; unmount first.
func DetachLoop(image string) error {
	p, err := imagePath(image)
	if err != nil {
		return err
	}
	loopMu.Lock()
	defer loopMu.Unlock()
	// The flock keeps another process's AttachLoop from handing out a device this call is
	// about to detach; a file that is gone cannot be attached again, and needs none.
	if unlock, err := lockImage(p); err == nil {
		defer unlock()
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("detach the loop devices of %s: %w", image, err)
	}
	devs, err := loopsOf(p)
	if err != nil {
		return err
	}
	for _, l := range devs {
		if err := DetachLoopDevice(l.Device); err != nil {
			return err
		}
	}
	return nil
}

// DetachLoopDevice detaches whatever file is attached to the loop device dev ("/dev/loop3"),
// such as one of Loops that nothing explains any more. A device with nothing attached is
// success. DetachLoop, which goes by the image file, is the usual call.
func DetachLoopDevice(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// RefreshLoopSize makes the loop device dev take the current size of its file
// (LOOP_SET_CAPACITY), after the image grew for a volume expansion, and returns the device's
// size in bytes. A filesystem on the device is not grown: Mounter.Resize does that next.
func RefreshLoopSize(dev string) (int64, error) {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("refresh the size of %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return 0, fmt.Errorf("refresh the size of %s: %w", dev, err)
	}
	return seekSize(f)
}

// DeviceSize returns the size in bytes of the block device dev, such as a loop device, as a
// NodeGetVolumeStats answer for a block volume reports it.
func DeviceSize(dev string) (int64, error) {
	f, err := os.Open(dev)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dev, err)
	}
	defer f.Close()
	return seekSize(f)
}

// seekSize is the size of the block device open as f: the kernel answers a seek to the end of a
// block device with its size, which needs no ioctl writing through a pointer (BLKGETSIZE64).
func seekSize(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}
	if fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return 0, fmt.Errorf("size of %s: not a block device: %w", f.Name(), driver.ErrInvalidArgument)
	}
	n, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}
	return n, nil
}
