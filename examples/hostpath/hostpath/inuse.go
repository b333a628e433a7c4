package hostpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver/nodemount"
)

func jsonDecode(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode record: %w", err)
	}
	return nil
}

// fileID names a file independently of the path it was reached by: its device and inode as stat
// reports them.
type fileID struct{ dev, ino uint64 }

// statID stats path, following symlinks and mounts: for a mount point it names the root of what
// is mounted there.
func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return fileID{dev: st.Dev, ino: st.Ino}, nil
}

// backingInUse names a place where the backing is in use on this host: a loop device attached to
// an image, a mount showing a directory (or a directory inside it), or a mount point inside the
// directory. "" means unused.
func backingInUse(kind, path string) (string, error) {
	if kind == kindFile {
		dev, err := nodemount.FindLoop(path)
		if err != nil {
			return "", err
		}
		if dev != "" {
			return "loop device " + dev, nil
		}
		return "", nil
	}
	points, err := mountsUsing(path)
	if err != nil {
		return "", err
	}
	if len(points) > 0 {
		return points[0], nil
	}
	return "", nil
}

// mountsUsing lists the mount points through which dir, or anything inside it, can be reached
// other than dir itself: bind mounts of dir or of a directory under it (wherever they are), and
// mounts on or inside dir.
//
// nodemount.MountsOf finds them by file system (major:minor) and root within it, which does not
// depend on st_dev (on btrfs it names a subvolume, not the file system mountinfo names). A mount
// whose root ends in the volume's directory is also checked a second, independent way: stat of
// its mount point names the same file (device, inode) as stat of the directory its root names,
// which does not depend on reaching dir by the path the mount table uses.
func mountsUsing(dir string) ([]string, error) {
	// Every backing's path ends in a unique ID: when the mount table does not even contain it,
	// nothing is mounted from or in it, and the parses below are skipped (the common case of a
	// delete).
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	id := filepath.Base(dir)
	if !bytes.Contains(raw, []byte(id)) {
		return nil, nil
	}
	points, err := nodemount.MountsOf(dir)
	if err != nil {
		return nil, err
	}
	// MountsOf leaves out a filesystem mounted on dir itself; hostpath never mounts there, so one
	// is someone else's and keeps the backing in use.
	if on, err := nodemount.At(dir); err != nil {
		return nil, err
	} else if on != nil {
		points = append([]string{on.MountPoint}, points...)
	}
	infos, err := nodemount.Mounts()
	if err != nil {
		return nil, err
	}
	for i := range infos {
		m := &infos[i]
		rest, ok := rootUnder(m.Root, id)
		if !ok || slices.Contains(points, m.MountPoint) {
			continue
		}
		shown, err := statID(m.MountPoint)
		if err != nil {
			continue
		}
		if inside, err := statID(filepath.Join(dir, rest)); err == nil && inside == shown {
			points = append(points, m.MountPoint)
		}
	}
	return points, nil
}

// rootUnder says whether a mount root is the directory named id or lies below it, and returns
// the part below it.
func rootUnder(root, id string) (string, bool) {
	if strings.HasSuffix(root, "/"+id) {
		return "", true
	}
	if i := strings.LastIndex(root, "/"+id+"/"); i >= 0 {
		return root[i+len(id)+2:], true
	}
	return "", false
}

// owner says whose a mount is.
type owner int

const (
	ownerOther   owner = iota // another volume's, or not a volume's at all
	ownerThis                 // shows this volume's backing
	ownerUnknown              // a device node of a loop device that is no longer attached
	ownerReused               // a device node of a loop device that now has another file attached
)

// loopMajor is the block major number of loop devices.
const loopMajor = 7

// mountOwner says whether the mount m (the top one at its mount point) shows the backing of this
// volume: a directory volume's directory (bind-mounted, or a bind of such a bind), or an image
// volume's loop device (a filesystem on it, or its device node bind-mounted for block access).
func mountOwner(m *nodemount.Info, kind, backing string) (owner, error) {
	var st unix.Stat_t
	if err := unix.Stat(m.MountPoint, &st); err != nil {
		return ownerOther, fmt.Errorf("stat mount point %s: %w", m.MountPoint, err)
	}
	if kind == kindDir {
		want, err := statID(backing)
		if err != nil {
			return ownerOther, nil // the backing is gone: nothing can show it
		}
		if (fileID{dev: st.Dev, ino: st.Ino}) == want {
			return ownerThis, nil
		}
		return ownerOther, nil
	}
	major, minor := uint32(m.Major), uint32(m.Minor) // a filesystem on the device
	node := st.Mode&unix.S_IFMT == unix.S_IFBLK
	var src unix.Stat_t
	switch {
	case node:
		major, minor = unix.Major(st.Rdev), unix.Minor(st.Rdev) // the device node itself
	case major != loopMajor && strings.HasPrefix(m.Source, "/dev/") && unix.Stat(m.Source, &src) == nil && src.Mode&unix.S_IFMT == unix.S_IFBLK:
		// A filesystem that reports an anonymous device (btrfs): its source names the device.
		major, minor = unix.Major(src.Rdev), unix.Minor(src.Rdev)
	}
	if major != loopMajor {
		return ownerOther, nil
	}
	loops, err := nodemount.Loops()
	if err != nil {
		return ownerOther, err
	}
	for _, l := range loops {
		if l.Major == major && l.Minor == minor {
			switch {
			case l.Backs(backing):
				return ownerThis, nil
			case node:
				// A bind mount of a device node does not hold the loop device: once it was
				// detached, the next attach on the node could take its number. A mounted
				// filesystem does hold its device, so only a device node can be reused so.
				return ownerReused, nil
			}
			return ownerOther, nil
		}
	}
	return ownerUnknown, nil // the device has nothing attached any more
}
