package hostpath

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
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
		dev, err := loopFor(path)
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
// A bind mount is found by what mountinfo says about it, checked two independent ways, either of
// which suffices: its file system (major:minor) and root within that file system are those of
// dir; or stat of its mount point names the same file (device, inode) as stat of the directory
// its root names. The first does not depend on st_dev (which on btrfs names a subvolume, not the
// file system mountinfo names); the second does not depend on reaching dir by the same path the
// mount table uses.
func mountsUsing(dir string) ([]string, error) {
	// Every backing's path ends in a unique ID: when the mount table does not even contain it,
	// nothing is mounted from or in it, and the parse below is skipped (the common case of a
	// delete).
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	id := filepath.Base(dir)
	if !bytes.Contains(raw, []byte(id)) {
		return nil, nil
	}
	infos, err := mountInfos()
	if err != nil {
		return nil, err
	}
	host := containingMount(infos, dir)
	var want string
	if host != nil {
		rel, err := filepath.Rel(host.MountPoint, dir)
		if err != nil {
			return nil, err
		}
		want = filepath.Join(host.Root, rel)
	}
	var points []string
	for i := range infos {
		m := &infos[i]
		if within(m.MountPoint, dir) {
			points = append(points, m.MountPoint) // mounted on or inside the volume
			continue
		}
		rest, ok := rootUnder(m.Root, id)
		if !ok {
			continue
		}
		if host != nil && m.Major == host.Major && m.Minor == host.Minor && within(m.Root, want) {
			points = append(points, m.MountPoint)
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

// containingMount is the mount that holds path (a canonical path): the top one at the longest
// mount point that is a prefix of it.
func containingMount(infos []mount.MountInfo, path string) *mount.MountInfo {
	best := ""
	for i := range infos {
		if p := infos[i].MountPoint; within(path, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return nil
	}
	return topMountAt(infos, best)
}

func within(path, base string) bool {
	return base == "/" || path == base || strings.HasPrefix(path, base+"/")
}

// mountAt returns the mount at path (the top one of a stack), or nil if path is not a mount point.
// path must be canonical (see canonical): the mount table names mount points by their real path.
func mountAt(path string) (*mount.MountInfo, error) {
	infos, err := mountInfos()
	if err != nil {
		return nil, err
	}
	return topMountAt(infos, filepath.Clean(path)), nil
}

// topMountAt is the top mount of the stack at path: the one no other mount at path is mounted on.
func topMountAt(infos []mount.MountInfo, path string) *mount.MountInfo {
	var stack []*mount.MountInfo
	for i := range infos {
		if infos[i].MountPoint == path {
			stack = append(stack, &infos[i])
		}
	}
	for _, m := range stack {
		covered := false
		for _, o := range stack {
			if o.ParentID == m.ID && o != m {
				covered = true
				break
			}
		}
		if !covered {
			return m
		}
	}
	if len(stack) > 0 {
		return stack[len(stack)-1]
	}
	return nil
}

// mountInfos reads /proc/self/mountinfo with paths decoded: the kernel writes a space in a path as
// \040 (and tab, newline, backslash likewise), which mount-utils leaves encoded.
func mountInfos() ([]mount.MountInfo, error) {
	infos, err := mount.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	for i := range infos {
		infos[i].MountPoint = unescapeMountPath(infos[i].MountPoint)
		infos[i].Root = unescapeMountPath(infos[i].Root)
		infos[i].Source = unescapeMountPath(infos[i].Source)
	}
	return infos, nil
}

// unescapeMountPath decodes the kernel's octal escapes (\ooo) in a mountinfo field.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// owner says whose a mount is.
type owner int

const (
	ownerOther   owner = iota // another volume's, or not a volume's at all
	ownerThis                 // shows this volume's backing
	ownerUnknown              // a device node of a loop device that is no longer attached
)

// loopMajor is the block major number of loop devices.
const loopMajor = 7

// mountOwner says whether the mount m (the top one at its mount point) shows the backing of this
// volume: a directory volume's directory (bind-mounted, or a bind of such a bind), or an image
// volume's loop device (a filesystem on it, or its device node bind-mounted for block access).
func mountOwner(m *mount.MountInfo, kind, backing string) (owner, error) {
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
	var src unix.Stat_t
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFBLK:
		major, minor = unix.Major(st.Rdev), unix.Minor(st.Rdev) // the device node itself
	case major != loopMajor && strings.HasPrefix(m.Source, "/dev/") && unix.Stat(m.Source, &src) == nil && src.Mode&unix.S_IFMT == unix.S_IFBLK:
		// A filesystem that reports an anonymous device (btrfs): its source names the device.
		major, minor = unix.Major(src.Rdev), unix.Minor(src.Rdev)
	}
	if major != loopMajor {
		return ownerOther, nil
	}
	dev, attached, err := loopBacking(major, minor)
	if errors.Is(err, os.ErrNotExist) {
		return ownerUnknown, nil
	}
	if err != nil {
		return ownerOther, err
	}
	if sameBacking(dev, attached, backing) {
		return ownerThis, nil
	}
	return ownerOther, nil
}
