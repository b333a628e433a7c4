package hostpath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
)

// A directory volume's content belongs to its workload, which can change it while the driver
// copies or deletes it: swap a directory for a symlink to the host's /etc, or mount something
// inside it. So trees are never walked by path. Every step opens one name relative to the file
// descriptor of its parent directory with O_NOFOLLOW, checks what it opened with fstat, and never
// descends into another mount: a symlink is copied as a symlink, and what the driver reads or
// deletes is always inside the volume.

// maxRaceRetries bounds how often the deletion of one entry starts again when the workload
// changes it meanwhile.
const maxRaceRetries = 3

// openDir opens path, a directory the driver made (its leaf is never a symlink), for fd-relative
// work.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDirAt opens the directory name (one path component) inside dir, never through a symlink.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), nil
}

// isMountRoot reports whether the open directory d is the root of a mount (something mounted
// inside the tree), so a walk does not cross into it. statx says so exactly (Linux 5.8+); before
// that a change of device is taken as a mount, which also stops at btrfs subvolumes: on that side
// it errs, never on the side of crossing a mount.
func isMountRoot(d *os.File, parentDev uint64) (bool, uint64, error) {
	stx, err := statxOf(d)
	if err != nil {
		return false, 0, err
	}
	dev := unix.Mkdev(stx.Dev_major, stx.Dev_minor)
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, dev, nil
	}
	return dev != parentDev, dev, nil
}

func statxOf(f *os.File) (*unix.Statx_t, error) {
	var stx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx); err != nil {
		return nil, fmt.Errorf("statx %s: %w", f.Name(), err)
	}
	return &stx, nil
}

// devOf is the device of an open file, encoded as isMountRoot compares it.
func devOf(f *os.File) (uint64, error) {
	stx, err := statxOf(f)
	if err != nil {
		return 0, err
	}
	return unix.Mkdev(stx.Dev_major, stx.Dev_minor), nil
}

// copyTree copies the directory tree src to a new directory dst: directories, regular files and
// symlinks (as symlinks), with their modes and, where permitted, owners. Special files are skipped
// (a volume's content is data), and so is the content of anything mounted inside src: a mount
// point is copied as an empty directory.
func copyTree(src, dst string) error {
	in, err := openDir(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(in.Fd()), &st); err != nil {
		return fmt.Errorf("stat %s: %w", src, err)
	}
	dev, err := devOf(in)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	out, err := openDir(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := copyDirContent(in, out, dev); err != nil {
		return err
	}
	return setOwnerAndMode(out, &st)
}

// copyDirContent copies the entries of the open directory in into the open directory out.
func copyDirContent(in, out *os.File, dev uint64) error {
	names, err := in.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", in.Name(), err)
	}
	for _, name := range names {
		if err := copyEntry(in, out, name, dev); err != nil {
			return err
		}
	}
	return nil
}

// copyEntry copies the entry name of in into out. The entry is opened once, with O_PATH and
// O_NOFOLLOW (which opens nothing: no FIFO blocks, no device driver runs, no symlink is
// followed), and everything after works on that descriptor: what fstat says it is, it is, however
// the workload renames things meanwhile.
func copyEntry(in, out *os.File, name string, dev uint64) error {
	path := filepath.Join(in.Name(), name)
	pfd, err := unix.Openat(int(in.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed since the directory was read: not part of the copy
	}
	if err != nil {
		return &os.PathError{Op: "openat", Path: path, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		// "." relative to the descriptor is that very directory.
		fd, err := unix.Openat(pfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: path, Err: err}
		}
		sub := os.NewFile(uintptr(fd), path)
		defer sub.Close()
		return copySubdir(sub, out, name, &st, dev)
	case unix.S_IFREG:
		// /proc/self/fd/N names the inode the descriptor holds, not a path to look up again.
		fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err != nil {
			return &os.PathError{Op: "reopen", Path: path, Err: err}
		}
		src := os.NewFile(uintptr(fd), path)
		defer src.Close()
		return copyRegular(src, out, name, &st)
	case unix.S_IFLNK:
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(pfd, "", buf) // the link the descriptor holds
		if err != nil {
			return &os.PathError{Op: "readlink", Path: path, Err: err}
		}
		if err := unix.Symlinkat(string(buf[:n]), int(out.Fd()), name); err != nil {
			return &os.PathError{Op: "symlink", Path: filepath.Join(out.Name(), name), Err: err}
		}
		if err := unix.Fchownat(int(out.Fd()), name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW); err != nil && !errors.Is(err, unix.EPERM) {
			return &os.PathError{Op: "chown", Path: filepath.Join(out.Name(), name), Err: err}
		}
	}
	return nil // devices, FIFOs and sockets are not data
}

func copySubdir(sub, out *os.File, name string, st *unix.Stat_t, parentDev uint64) error {
	mounted, dev, err := isMountRoot(sub, parentDev)
	if err != nil {
		return err
	}
	if err := unix.Mkdirat(int(out.Fd()), name, 0o700); err != nil {
		return &os.PathError{Op: "mkdir", Path: filepath.Join(out.Name(), name), Err: err}
	}
	dst, err := openDirAt(out, name)
	if err != nil {
		return err
	}
	defer dst.Close()
	if !mounted {
		if err := copyDirContent(sub, dst, dev); err != nil {
			return err
		}
	}
	return setOwnerAndMode(dst, st)
}

func copyRegular(src, out *os.File, name string, st *unix.Stat_t) error {
	fd, err := unix.Openat(int(out.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: filepath.Join(out.Name(), name), Err: err}
	}
	dst := os.NewFile(uintptr(fd), filepath.Join(out.Name(), name))
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("copy %s: %w", src.Name(), err)
	}
	if err := setOwnerAndMode(dst, st); err != nil {
		return err
	}
	// The data must be on disk before the record that names the copy commits: with delayed
	// allocation a journal commit alone does not write it.
	if err := dst.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dst.Name(), err)
	}
	return dst.Close()
}

// setOwnerAndMode gives the copy f the owner (when the driver may: it runs as root in production)
// and the permission bits of st. The owner goes first: chown clears set-user-ID bits.
func setOwnerAndMode(f *os.File, st *unix.Stat_t) error {
	if err := unix.Fchown(int(f.Fd()), int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, unix.EPERM) {
		return &os.PathError{Op: "chown", Path: f.Name(), Err: err}
	}
	if err := unix.Fchmod(int(f.Fd()), st.Mode&0o7777); err != nil {
		return &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return nil
}

// isChanged says whether err is what an O_NOFOLLOW|O_DIRECTORY open gives for something that is
// no longer a directory.
func isChanged(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)
}

// errMountInside is returned when a tree to delete has something mounted inside it.
var errMountInside = errors.New("something is mounted inside")

// removeAll deletes a backing: a directory tree or an image file. It never follows a symlink and
// never deletes through a mount: meeting a mount point inside the tree, it stops with ErrInUse
// and leaves that mount and what is under it alone.
func removeAll(path string) error {
	// Most backings are an empty directory or a single file: one unlink does it.
	err := os.Remove(path)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	parent, err := openDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer parent.Close()
	dev, err := devOf(parent)
	if err != nil {
		return err
	}
	if err := removeAt(parent, filepath.Base(path), dev); err != nil {
		if errors.Is(err, errMountInside) {
			return fmt.Errorf("remove %s: %w: %w", path, err, driver.ErrInUse)
		}
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// removeAt deletes name inside dir and, if it is a directory, everything below it on the same
// file system.
func removeAt(dir *os.File, name string, dev uint64) error {
	for range maxRaceRetries {
		err := unix.Unlinkat(int(dir.Fd()), name, 0)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EISDIR) {
			return &os.PathError{Op: "unlink", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		sub, err := openDirAt(dir, name)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		if isChanged(err) {
			continue // replaced by a file or symlink meanwhile: unlink that
		}
		if err != nil {
			return err
		}
		err = removeContent(sub, dev)
		sub.Close()
		if err != nil {
			return err
		}
		err = unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return &os.PathError{Op: "rmdir", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		// Something was created in it meanwhile: go again.
	}
	return fmt.Errorf("%s keeps changing while it is deleted: %w", filepath.Join(dir.Name(), name), driver.ErrPending)
}

func removeContent(d *os.File, parentDev uint64) error {
	mounted, dev, err := isMountRoot(d, parentDev)
	if err != nil {
		return err
	}
	if mounted {
		return fmt.Errorf("%w at %s", errMountInside, d.Name())
	}
	// All names first, then the deletions: deleting while reading a directory may skip entries.
	names, err := d.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", d.Name(), err)
	}
	for _, name := range names {
		if err := removeAt(d, name, dev); err != nil {
			return err
		}
	}
	return nil
}
