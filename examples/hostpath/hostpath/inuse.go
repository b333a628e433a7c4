package hostpath

import (
	"bytes"
	"encoding/json"
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

// backingInUse names a place where the backing is in use on this host: a loop device attached to
// an image, or a bind mount of a directory. "" means unused.
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
	points, err := bindMountsOf(path)
	if err != nil {
		return "", err
	}
	if len(points) > 0 {
		return points[0], nil
	}
	return "", nil
}

// bindMountsOf lists the mount points where dir is bind-mounted. mountinfo names a bind mount by
// its file system (major:minor) and its root within that file system, so dir is translated into
// that form first.
func bindMountsOf(dir string) ([]string, error) {
	// Every backing's path ends in a unique ID: when the mount table does not even contain it,
	// nothing is mounted from it, and the parse below is skipped (the common case of a delete).
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	if !bytes.Contains(raw, []byte(filepath.Base(dir))) {
		return nil, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, nil // gone: not mounted from here
	}
	major, minor := int(unix.Major(st.Dev)), int(unix.Minor(st.Dev))
	infos, err := mountInfos()
	if err != nil {
		return nil, err
	}
	// The mount that contains dir: same device, longest mount point that is a prefix of dir.
	var host *mount.MountInfo
	for i := range infos {
		m := &infos[i]
		if m.Major != major || m.Minor != minor || !within(dir, m.MountPoint) {
			continue
		}
		if host == nil || len(m.MountPoint) > len(host.MountPoint) {
			host = m
		}
	}
	if host == nil {
		return nil, nil
	}
	rel, err := filepath.Rel(host.MountPoint, dir)
	if err != nil {
		return nil, err
	}
	want := filepath.Join(host.Root, rel)
	var points []string
	for _, m := range infos {
		if m.Major == major && m.Minor == minor && m.Root == want && m.MountPoint != dir {
			points = append(points, m.MountPoint)
		}
	}
	return points, nil
}

func within(path, base string) bool {
	return base == "/" || path == base || strings.HasPrefix(path, base+"/")
}

// mountAt returns the mount at path (the top one of a stack), or nil if path is not a mount point.
func mountAt(path string) (*mount.MountInfo, error) {
	infos, err := mountInfos()
	if err != nil {
		return nil, err
	}
	clean := filepath.Clean(path)
	var found *mount.MountInfo
	for i := range infos {
		if infos[i].MountPoint == clean {
			found = &infos[i] // the last one is the top of a stack of mounts
		}
	}
	return found, nil
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
