package nodemount

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

// Info is one mount as /proc/self/mountinfo describes it, with the kernel's octal escapes in
// paths decoded (mount-utils leaves "\040" for a space in place).
type Info struct {
	mount.MountInfo
}

// ReadOnly reports whether the mount itself is read-only (its per-mount "ro" option; a read-only
// bind of a writable filesystem shows "ro" here and "rw" in the superblock options).
func (i *Info) ReadOnly() bool { return slices.Contains(i.MountOptions, "ro") }

// mountInfoPath is the mount table this package reads; tests point it at fixtures.
var mountInfoPath = "/proc/self/mountinfo"

// Mounts reads the mount table of this process's mount namespace.
func Mounts() ([]Info, error) {
	raw, err := mount.ParseMountInfo(mountInfoPath)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", mountInfoPath, err)
	}
	infos := make([]Info, len(raw))
	for i, m := range raw {
		m.MountPoint = unescape(m.MountPoint)
		m.Root = unescape(m.Root)
		m.Source = unescape(m.Source)
		infos[i] = Info{m}
	}
	return infos, nil
}

// unescape decodes the kernel's octal escapes (\ooo) in a mountinfo field: it writes a space,
// tab, newline and backslash in a path that way.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
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

// Canonical returns path with its parent directory resolved to its real location, which is how
// the mount table names mount points. The last element is kept as it is, never followed: a
// symbolic link there must not redirect a mount. It fails with an error wrapping os.ErrNotExist
// when the parent does not exist.
func Canonical(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("path %q is not absolute", path)
	}
	clean := filepath.Clean(path)
	if clean == "/" {
		return clean, nil
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(clean))
	if err != nil {
		return "", fmt.Errorf("resolve the directory of %q: %w", path, err)
	}
	return filepath.Join(dir, filepath.Base(clean)), nil
}

// At returns the mount at path, the top one when several are stacked there, or nil when path is
// not a mount point (or does not exist).
func At(path string) (*Info, error) {
	infos, err := Mounts()
	if err != nil {
		return nil, err
	}
	p, err := Canonical(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return top(infos, p), nil
}

// top is the top mount of the stack at the canonical path p: the one no other mount at p is
// mounted on. Table order is not enough: a mount propagated in later may sit lower.
func top(infos []Info, p string) *Info {
	var stack []*Info
	for i := range infos {
		if infos[i].MountPoint == p {
			stack = append(stack, &infos[i])
		}
	}
	for _, m := range stack {
		if !slices.ContainsFunc(stack, func(o *Info) bool { return o != m && o.ParentID == m.ID }) {
			return m
		}
	}
	return nil
}

// SourceOf says where the mount at path comes from: for a bind mount, the path through which
// the bound directory, file or device node is reachable elsewhere in the mount table (mountinfo
// names only the bound path inside its filesystem, the "root" field, so it is joined to a mount
// point of that filesystem); for a filesystem mounted whole, the source mountinfo names (the
// device, for a block filesystem). It returns "" when path is not a mount point.
func SourceOf(path string) (string, error) {
	infos, err := Mounts()
	if err != nil {
		return "", err
	}
	p, err := Canonical(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	m := top(infos, p)
	if m == nil {
		return "", nil
	}
	return sourceOf(infos, m), nil
}

func sourceOf(infos []Info, m *Info) string {
	if m.Root == "/" {
		return m.Source
	}
	// The mount of the same filesystem whose root is closest to the filesystem's root shows
	// the bound path at the shortest path; mounts at or below m's own point are m's stack.
	var best *Info
	for i := range infos {
		o := &infos[i]
		if o == m || o.Major != m.Major || o.Minor != m.Minor || !within(m.Root, o.Root) || within(o.MountPoint, m.MountPoint) {
			continue
		}
		if best == nil || len(o.Root) < len(best.Root) {
			best = o
		}
	}
	if best == nil {
		return m.Source + ":" + m.Root // not reachable in this namespace: name it as the kernel does
	}
	rel, _ := filepath.Rel(best.Root, m.Root)
	return filepath.Join(best.MountPoint, rel)
}

// MountsOf lists the mount points other than dir itself through which dir, or anything inside it,
// can be reached: mounts strictly inside dir, and mounts elsewhere that show dir or something
// under it (bind mounts, including binds of a filesystem mounted on dir). A filesystem mounted on
// dir itself is not listed, because it is dir's content rather than another way to reach it (a
// driver whose volume is a tmpfs on its directory must not see its own volume as a user of it):
// At(dir) says whether there is one. A directory with neither is not in use by any mount, so it
// may be deleted.
func MountsOf(dir string) ([]string, error) {
	infos, err := Mounts()
	if err != nil {
		return nil, err
	}
	d, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, unix.ENOTCONN) {
		// A FUSE mount on dir whose daemon is gone answers every lookup of dir with ENOTCONN.
		// dir is then a mount point, not a link: its path as the mount table shows it is enough.
		d, err = Canonical(dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", dir, err)
	}
	// The filesystem holding d, and d's path inside it: mountinfo's root of a bind mount of d
	// (or of something under it) lies there.
	host := containing(infos, d)
	var points []string
	for i := range infos {
		m := &infos[i]
		switch {
		case m.MountPoint == d:
			// dir itself: its own filesystem, or a stack on it; At's answer, not MountsOf's.
		case within(m.MountPoint, d):
			points = append(points, m.MountPoint)
		case host != nil && m != host && m.Major == host.Major && m.Minor == host.Minor:
			rel, err := filepath.Rel(host.MountPoint, d)
			if err == nil && within(m.Root, filepath.Join(host.Root, rel)) {
				points = append(points, m.MountPoint)
			}
		}
	}
	return points, nil
}

// containing is the mount that holds the canonical path p: the top one at the longest mount
// point that is p or a parent of it.
func containing(infos []Info, p string) *Info {
	best := ""
	for i := range infos {
		if mp := infos[i].MountPoint; within(p, mp) && len(mp) > len(best) {
			best = mp
		}
	}
	if best == "" {
		return nil
	}
	return top(infos, best)
}

// within says whether path is base or lies below it.
func within(path, base string) bool {
	return base == "/" || path == base || strings.HasPrefix(path, base+"/")
}
