package nodemount

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
)

// Mount mounts a filesystem that is not a bind: source of type fsType at the directory target,
// through the host's mount command and its helpers (mount.nfs, mount.fuse), for a tmpfs, an NFS
// export or a FUSE filesystem. It creates target (and its parent) when missing.
//
// It follows Bind's rules. Calling it again when target already shows the same filesystem, with
// the same read-only setting and options, succeeds without mounting again; anything else at
// target is an error wrapping driver.ErrAlreadyExists. "The same" is decided from the mount
// table: the type (a FUSE type "fuse.NAME" also matches the plain "fuse" a daemon without a
// subtype shows; "nfs" also matches the "nfs4" of an NFSv4 mount), the source (paths compared
// cleaned, so "host:/export/" is "host:/export"), read-only, the per-mount flags the kernel keeps
// for every filesystem (nosuid, nodev, noexec, noatime, nodiratime, nosymfollow and their
// opposites), and, for tmpfs, size, nr_blocks, nr_inodes, mode, uid, gid and huge. The kernel
// shows those in a form of its own, not as they were set: a size rounded up to whole pages and
// written in KiB (size=5246976 shows as size=5124k, size=50% as the KiB of half the memory),
// nr_blocks as that size too, a mode in octal, and a value left out when it is the default (half
// the memory, 1777, root); Mount converts the requested options to that form before comparing.
// Other filesystems' own options are not compared: NFS shows negotiated values (vers=4 becomes
// vers=4.2) and FUSE daemons keep theirs to themselves. So that
// a repeated call always recognises what the first one mounted, Mount checks the new mount the
// same way and, if the table shows it otherwise (a source the helper renamed), unmounts it and
// fails with an error naming what the table shows.
//
// o.ReadOnly, or "ro" among o.MountFlags, mounts it read-only; Mount checks that the mount table
// shows it read-only, which the kernel enforces for every filesystem (writes fail with EROFS).
// Invalid input is an error wrapping driver.ErrInvalidArgument: an empty source, or one starting
// with "-" (mount would read it as an option); an empty fsType, "auto", or one that is not a
// single name; a mount flag that is empty or holds a comma or control character; "bind",
// "rbind", "move" or "remount", which would make this something other than a new mount (use
// Bind); "rw" or "defaults" with o.ReadOnly.
//
// A FUSE daemon started by Mount runs in this process's cgroup, not in a systemd scope of its
// own: it stops, and its mount breaks (ENOTCONN), when the container the driver runs in stops.
//
// On failure Mount leaves nothing mounted and removes target if it created it. Unmount and
// Unpublish take what it mounted off again.
func (m *Mounter) Mount(source, target, fsType string, o Options) error {
	ro, err := checkMount(source, fsType, o)
	if err != nil {
		return err
	}
	o.ReadOnly = ro
	want := wanted{source: source, fsType: fsType, readOnly: ro, flags: o.MountFlags}
	return m.mountAt(source, target, true, o, want.matches, func(p string) error {
		var opts []string
		if o.ReadOnly {
			opts = append(opts, "ro")
		}
		args := []string{"-t", fsType}
		if opts = append(opts, o.MountFlags...); len(opts) > 0 {
			args = append(args, "-o", strings.Join(opts, ","))
		}
		// mount(8) is run here rather than through mount-utils, which logs a failed mount's
		// output, and a FUSE daemon quotes an option it does not know there: mountAt redacts
		// the flags from the error, and nothing is logged.
		out, err := m.fm.Exec.Command("mount", append(args, "--", source, p)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
}

// refusedFlags would turn Mount into another operation: mount-utils reads "bind" as a bind
// mount, and mount(8) moves or remounts an existing mount for the others.
var refusedFlags = []string{"bind", "rbind", "move", "remount"}

// checkMount validates Mount's input and returns whether the mount will be read-only: mount(8)
// applies the options in order, Mount's "ro" first and then the caller's flags.
func checkMount(source, fsType string, o Options) (bool, error) {
	switch {
	case source == "":
		return false, fmt.Errorf("mount source is empty (a tmpfs needs a name, such as \"tmpfs\"): %w", driver.ErrInvalidArgument)
	case strings.HasPrefix(source, "-"):
		return false, fmt.Errorf("mount source %q starts with '-', which mount would read as an option: %w", source, driver.ErrInvalidArgument)
	case strings.ContainsFunc(source, isControl):
		return false, fmt.Errorf("mount source %q holds a control character: %w", source, driver.ErrInvalidArgument)
	case fsType == "" || fsType == "auto":
		return false, fmt.Errorf("filesystem type %q: name the type, as the mount table will show it: %w", fsType, driver.ErrInvalidArgument)
	case strings.HasPrefix(fsType, "-") || strings.ContainsFunc(fsType, func(r rune) bool { return r == ',' || r <= ' ' || r == 0x7f }):
		return false, fmt.Errorf("filesystem type %q is not a single type name: %w", fsType, driver.ErrInvalidArgument)
	}
	ro := o.ReadOnly
	for i, f := range o.MountFlags {
		// Flags may be sensitive: an error names a position or one of this package's own words,
		// never a flag's text.
		if f == "" || strings.ContainsFunc(f, func(r rune) bool { return r == ',' || isControl(r) }) {
			return false, fmt.Errorf("mount flag %d is empty or holds a comma or control character: %w", i+1, driver.ErrInvalidArgument)
		}
		key, _, _ := strings.Cut(f, "=")
		if slices.Contains(refusedFlags, key) {
			return false, fmt.Errorf("mount flag %q is not for Mount, which makes a new mount (Bind makes bind mounts): %w", key, driver.ErrInvalidArgument)
		}
		switch f {
		case "ro":
			ro = true
		case "rw", "defaults":
			if o.ReadOnly {
				return false, fmt.Errorf("read-only was asked for, and mount flag %q would mount read-write: %w", f, driver.ErrInvalidArgument)
			}
			ro = false
		}
	}
	return ro, nil
}

func isControl(r rune) bool { return r < ' ' || r == 0x7f }

// wanted is what Mount was asked for, to compare with a mount found at the target.
type wanted struct {
	source, fsType string
	readOnly       bool
	flags          []string
}

// matches describes how cur, the mount at p, differs from what w asks for, "" when it does not.
// It names only option keys of this package's tables, never a flag's value.
func (w wanted) matches(cur *Info, p string) (string, error) {
	if !sameFSType(cur.FsType, w.fsType) || !w.sameSource(cur, p) {
		return fmt.Sprintf("%s (%s) mounted, not %s (%s)", cur.Source, cur.FsType, w.source, w.fsType), nil
	}
	if cur.ReadOnly() != w.readOnly {
		return fmt.Sprintf("%s mounted with read-only=%t", w.source, cur.ReadOnly()), nil
	}
	if key := differingFlag(cur, w.flags); key != "" {
		return fmt.Sprintf("%s mounted with another %s setting", w.source, key), nil
	}
	if cur.FsType == "tmpfs" {
		if key := differingTmpfsOption(cur, w.flags, tmpfsDefaults()); key != "" {
			return fmt.Sprintf("%s mounted with another %s", w.source, key), nil
		}
	}
	return "", nil
}

// sameFSType says whether a mount of type shown is one of type want.
func sameFSType(shown, want string) bool {
	if shown == want {
		return true
	}
	// mount.fuse starts the daemon a "fuse.NAME" type names; the kernel shows "fuse.SUBTYPE" when
	// the daemon sets a subtype and plain "fuse" (or "fuseblk") when it does not, as bindfs.
	for _, prefix := range []string{"fuse.", "fuse3."} {
		if sub, ok := strings.CutPrefix(want, prefix); ok {
			return shown == "fuse" || shown == "fuseblk" || shown == "fuse."+sub || shown == "fuseblk."+sub
		}
	}
	// "mount -t nfs" negotiates the version; an NFSv4 mount shows as nfs4.
	return want == "nfs" && shown == "nfs4"
}

// sameSource says whether the mount cur at p comes from w.source: the same text, the same path
// cleaned (alone or after "host:"), or, for a block device, a filesystem on that device.
func (w wanted) sameSource(cur *Info, p string) bool {
	if cur.Source == w.source || cleanSource(cur.Source) == cleanSource(w.source) {
		return true
	}
	var st unix.Stat_t
	if filepath.IsAbs(w.source) && unix.Stat(w.source, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
		same, err := Shows(p, w.source)
		return err == nil && same
	}
	return false
}

// cleanSource cleans the path in a source: all of it when it is a path, the part after the first
// ":/" otherwise (server:/export, user@host:/dir).
func cleanSource(s string) string {
	if strings.HasPrefix(s, "/") {
		return path.Clean(s)
	}
	if i := strings.Index(s, ":/"); i >= 0 {
		return s[:i+1] + path.Clean(s[i+1:])
	}
	return s
}

// vfsFlags are the per-mount flags every filesystem gets from the kernel's VFS, which shows each
// in the mount options exactly when it is set: the word shown, and whether the option sets it.
// relatime is left out: the kernel sets it by default, and drops it for noatime.
var vfsFlags = map[string]struct {
	shown string
	set   bool
}{
	"nosuid": {"nosuid", true}, "suid": {"nosuid", false},
	"nodev": {"nodev", true}, "dev": {"nodev", false},
	"noexec": {"noexec", true}, "exec": {"noexec", false},
	"noatime": {"noatime", true}, "atime": {"noatime", false},
	"nodiratime": {"nodiratime", true}, "diratime": {"nodiratime", false},
	"nosymfollow": {"nosymfollow", true}, "symfollow": {"nosymfollow", false},
}

// impliedFlags are mount(8)'s options that stand for several of vfsFlags.
var impliedFlags = map[string][]string{
	"defaults": {"suid", "dev", "exec"},
	"user":     {"nosuid", "nodev", "noexec"},
	"users":    {"nosuid", "nodev", "noexec"},
	"owner":    {"nosuid", "nodev"},
	"group":    {"nosuid", "nodev"},
}

// differingFlag returns the first per-mount flag the options ask for that cur does not have as
// asked (the later of two contradicting options wins, as in mount(8)), or "".
func differingFlag(cur *Info, options []string) string {
	want := map[string]bool{}
	var order []string
	apply := func(o string) {
		if f, ok := vfsFlags[o]; ok {
			if _, seen := want[f.shown]; !seen {
				order = append(order, f.shown)
			}
			want[f.shown] = f.set
		}
	}
	for _, o := range options {
		for _, implied := range impliedFlags[o] {
			apply(implied)
		}
		apply(o)
	}
	for _, shown := range order {
		if slices.Contains(cur.MountOptions, shown) != want[shown] {
			return shown
		}
	}
	return ""
}

// tmpfsDefaults are the values the kernel leaves out of a tmpfs's options when they are in
// effect: the size when half of the memory, the mode 1777, the owner root.
func tmpfsDefaults() map[string]string {
	d := map[string]string{"mode": "1777", "uid": "0", "gid": "0"}
	if pages, ok := totalRAMPages(); ok {
		d["size"] = kib(pages / 2)
	}
	return d
}

// differingTmpfsOption returns the first tmpfs option among options whose value differs from the
// one cur's options show (or, when they show none, from the kernel's default), or "". Options
// this package does not know how the kernel shows are not compared.
func differingTmpfsOption(cur *Info, options []string, defaults map[string]string) string {
	shown := map[string]string{}
	for _, o := range cur.SuperOptions {
		k, v, _ := strings.Cut(o, "=")
		shown[k] = v
	}
	for _, o := range options {
		k, v, _ := strings.Cut(o, "=")
		key, want, ok := tmpfsShown(k, v)
		if !ok {
			continue
		}
		got, present := shown[key]
		if !present {
			if got, present = defaults[key]; !present {
				continue // the kernel's default is not known here: not compared
			}
		}
		if got != want {
			return key
		}
	}
	return ""
}

// tmpfsShown returns the key and value with which the kernel shows the tmpfs option key=value
// in the mount table (mm/shmem.c, shmem_parse_one and shmem_show_options), and false for an
// option it does not show that way or a value it would refuse.
func tmpfsShown(key, value string) (string, string, bool) {
	switch key {
	case "size":
		n, rest, ok := memparse(value)
		if !ok {
			return "", "", false
		}
		if rest == "%" {
			pages, ok := totalRAMPages()
			if !ok {
				return "", "", false
			}
			// The kernel's arithmetic: n percent of the memory in bytes, in whole pages.
			n = (n * pageSize()) * pages / 100
			rest = ""
		}
		if rest != "" {
			return "", "", false
		}
		return "size", kib((n + pageSize() - 1) / pageSize()), true
	case "nr_blocks":
		if n, rest, ok := memparse(value); ok && rest == "" {
			return "size", kib(n), true
		}
	case "nr_inodes":
		if n, rest, ok := memparse(value); ok && rest == "" {
			return "nr_inodes", strconv.FormatUint(n, 10), true
		}
	case "mode":
		if n, err := strconv.ParseUint(value, 8, 32); err == nil {
			return "mode", fmt.Sprintf("%03o", n&0o7777), true
		}
	case "uid", "gid":
		if n, rest, ok := strtoull(value); ok && rest == "" && n <= 1<<32-1 {
			return key, strconv.FormatUint(n, 10), true
		}
	case "huge":
		return key, value, value != "" && value != "never" // never is the default, not shown
	}
	return "", "", false
}

// kib is a number of pages as tmpfs shows a size: in KiB, with a k.
func kib(pages uint64) string { return strconv.FormatUint(pages*pageSize()/1024, 10) + "k" }

// memparse reads a number as the kernel's memparse does: decimal, octal with a leading 0 or hex
// with 0x, then an optional K, M, G, T, P or E (either case) that multiplies it by 1024 per step.
// It returns what follows, and false when there is no number.
func memparse(s string) (uint64, string, bool) {
	n, rest, ok := strtoull(s)
	if !ok {
		return 0, "", false
	}
	if rest != "" {
		if i := strings.IndexByte("KMGTPE", upper(rest[0])); i >= 0 {
			n <<= 10 * uint(i+1)
			rest = rest[1:]
		}
	}
	return n, rest, true
}

// strtoull reads an unsigned number with the kernel's simple_strtoull in base 0: 0x for hex, a
// leading 0 for octal, decimal otherwise; it stops at the first character that is not a digit of
// the base. Like the kernel, it wraps on overflow.
func strtoull(s string) (uint64, string, bool) {
	base, i := uint64(10), 0
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && digit(s[2]) < 16:
		base, i = 16, 2
	case len(s) > 0 && s[0] == '0':
		base = 8
	}
	start := i
	var n uint64
	for ; i < len(s) && digit(s[i]) < base; i++ {
		n = n*base + digit(s[i])
	}
	return n, s[i:], i > start
}

// digit is the value of a hexadecimal digit, and 16 for any other byte.
func digit(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 16
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func pageSize() uint64 { return uint64(os.Getpagesize()) }

// totalRAMPages is the kernel's totalram_pages(), from which tmpfs computes its default size and
// sizes given in per cent.
func totalRAMPages() (uint64, bool) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Unit == 0 {
		return 0, false
	}
	return uint64(si.Totalram) * uint64(si.Unit) / pageSize(), true
}
