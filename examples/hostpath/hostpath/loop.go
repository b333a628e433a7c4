package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Loop devices are driven with the kernel's ioctls rather than by parsing losetup output. The
// kernel's own record (/sys/block/loopN/loop/backing_file) is the source of truth for what is
// attached, so a restart after a crash finds every device it attached before.

// loopMu serialises attach and detach in this process: picking a free device and configuring it
// is two steps.
var loopMu sync.Mutex

// deletedSuffix is what the kernel appends to the backing file of a loop device whose file was
// unlinked.
const deletedSuffix = " (deleted)"

// loopDevices lists attached loop devices by backing file (as the kernel names it, without the
// deleted suffix).
func loopDevices() (map[string][]string, error) {
	entries, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range entries {
		raw, err := os.ReadFile(e)
		if err != nil {
			continue // detached between the glob and the read
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(raw)), deletedSuffix)
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(e)))
		out[backing] = append(out[backing], dev)
	}
	return out, nil
}

// loopsFor lists the loop devices attached to the image at backing (a canonical path).
func loopsFor(backing string) ([]string, error) {
	entries, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		raw, err := os.ReadFile(e)
		if err != nil {
			continue // detached between the glob and the read
		}
		dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(e)))
		if sameBacking(dev, strings.TrimSpace(string(raw)), backing) {
			out = append(out, dev)
		}
	}
	return out, nil
}

// loopFor returns a device already attached to backing, or "".
func loopFor(backing string) (string, error) {
	devs, err := loopsFor(backing)
	if err != nil || len(devs) == 0 {
		return "", err
	}
	return devs[0], nil
}

// loopBacking names the loop device major:minor and the file attached to it, as the kernel
// reports it. os.ErrNotExist means no such device or nothing attached.
func loopBacking(major, minor uint32) (dev, backing string, err error) {
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
	raw, err := os.ReadFile(sys + "/loop/backing_file")
	if err != nil {
		return "", "", err
	}
	link, err := os.Readlink(sys)
	if err != nil {
		return "", "", err
	}
	return "/dev/" + filepath.Base(link), strings.TrimSpace(string(raw)), nil
}

// sameBacking says whether the loop device dev, whose backing file the kernel names attached, is
// attached to the image at backing. The state directory is canonical, so the kernel's name of an
// image the driver attached is its canonical path, or, when the process that attached it ran in a
// container that is gone (a node plugin pod restarted), the end of it: the kernel then names the
// file from that container's mount of the state directory (/volumes/7f/vol-1.img for
// /var/lib/csikit-hostpath/volumes/7f/vol-1.img). The inode then confirms it is the same file,
// not another one at that path.
func sameBacking(dev, attached, backing string) bool {
	path, deleted := strings.CutSuffix(attached, deletedSuffix)
	if path != backing && (!strings.HasPrefix(path, "/") || !strings.HasSuffix(backing, path)) {
		return false
	}
	want, err := statID(backing)
	if err != nil {
		return deleted // the image is gone; the device holds what was this volume's image
	}
	if deleted {
		return false // an unlinked file is not the image now at that path
	}
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return true // cannot ask the device: the path has to do
	}
	defer f.Close()
	info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
	if err != nil {
		return !errors.Is(err, unix.ENXIO) // ENXIO: detached meanwhile
	}
	return info.Device == want.dev && info.Inode == want.ino
}

// attachLoop attaches backing to a free loop device, or returns the device it is attached to.
func attachLoop(backing string) (string, error) {
	loopMu.Lock()
	defer loopMu.Unlock()
	if dev, err := loopFor(backing); err != nil || dev != "" {
		return dev, err
	}
	file, err := os.OpenFile(backing, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("open backing file: %w", err)
	}
	defer file.Close()
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("open /dev/loop-control: %w", err)
	}
	defer ctl.Close()
	for attempt := 0; attempt < 16; attempt++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("find a free loop device: %w", err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		lf, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return "", fmt.Errorf("open %s: %w", dev, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(file.Fd())}
		copy(cfg.Info.File_name[:], backing)
		err = unix.IoctlLoopConfigure(int(lf.Fd()), &cfg)
		lf.Close()
		if errors.Is(err, unix.EBUSY) {
			continue // another process took it first
		}
		if err != nil {
			return "", fmt.Errorf("attach %s to %s: %w", backing, dev, err)
		}
		return dev, nil
	}
	return "", errors.New("no free loop device after 16 attempts")
}

// detachLoops detaches every loop device attached to backing.
func detachLoops(backing string) error {
	loopMu.Lock()
	defer loopMu.Unlock()
	devs, err := loopsFor(backing)
	if err != nil {
		return err
	}
	for _, dev := range devs {
		if err := detachLoop(dev); err != nil {
			return err
		}
	}
	return nil
}

func detachLoop(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// refreshLoopCapacity makes the device follow a grown backing file.
func refreshLoopCapacity(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("refresh capacity of %s: %w", dev, err)
	}
	return nil
}

// deviceSize is the size of a block device in bytes.
func deviceSize(dev string) (int64, error) {
	f, err := os.Open(dev)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var size uint64
	if err := ioctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64, &size); err != nil {
		return 0, fmt.Errorf("size of %s: %w", dev, err)
	}
	return int64(size), nil
}
