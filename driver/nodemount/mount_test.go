package nodemount

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/internal/testenv"
)

// tmpfsRequest is one Mount of a tmpfs.
type tmpfsRequest struct {
	source, fsType string
	o              Options
}

func TestMountTmpfsIsIdempotentAndRefusesAnotherFilesystem(t *testing.T) {
	needRoot(t)
	sized := tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=1m", "mode=0750", "noexec"}}}
	unsized := tmpfsRequest{"vol-1", "tmpfs", Options{}}
	for _, tc := range []struct {
		name          string
		first, second tmpfsRequest
		want          error
	}{
		{"the same request again is success, not a second mount", sized, sized, nil},
		{"the same options written as the kernel shows them are the same",
			sized, tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=1024k", "mode=750", "noexec"}}}, nil},
		{"a request that leaves the options open is served by the mount there", sized, unsized, nil},
		{"a size in per cent is compared as the kernel computes it",
			tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=50%"}}},
			tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=50%"}}}, nil},
		{"another size in per cent is ALREADY_EXISTS",
			tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=50%"}}},
			tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=25%"}}}, driver.ErrAlreadyExists},
		{"another size is ALREADY_EXISTS",
			sized, tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=2m", "mode=0750", "noexec"}}}, driver.ErrAlreadyExists},
		{"a size over a tmpfs of the default size is ALREADY_EXISTS",
			unsized, tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"size=1m"}}}, driver.ErrAlreadyExists},
		{"another mode is ALREADY_EXISTS",
			sized, tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"mode=0700"}}}, driver.ErrAlreadyExists},
		{"exec over noexec is ALREADY_EXISTS",
			sized, tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"exec"}}}, driver.ErrAlreadyExists},
		{"another source is ALREADY_EXISTS",
			sized, tmpfsRequest{"vol-2", "tmpfs", sized.o}, driver.ErrAlreadyExists},
		{"another filesystem type is ALREADY_EXISTS",
			unsized, tmpfsRequest{"vol-1", "ramfs", Options{}}, driver.ErrAlreadyExists},
		{"read-only over read-write is ALREADY_EXISTS",
			unsized, tmpfsRequest{"vol-1", "tmpfs", Options{ReadOnly: true}}, driver.ErrAlreadyExists},
		{"read-write over read-only is ALREADY_EXISTS",
			tmpfsRequest{"vol-1", "tmpfs", Options{MountFlags: []string{"ro"}}}, unsized, driver.ErrAlreadyExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, target := scratch(t)
			m := New()
			if err := m.Mount(tc.first.source, target, tc.first.fsType, tc.first.o); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(target, "data"), []byte("keep me"), 0o600); err != nil && !tc.first.o.ReadOnly && !errors.Is(err, unix.EROFS) {
				t.Fatal(err)
			}
			err := m.Mount(tc.second.source, target, tc.second.fsType, tc.second.o)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("second Mount = %v, want %v", err, tc.want)
			}
			if n := layers(t, target); n != 1 {
				t.Errorf("%d mounts at the target, want 1", n)
			}
			if cur, err := At(target); err != nil || cur == nil || cur.Source != tc.first.source || cur.FsType != tc.first.fsType {
				t.Errorf("At(target) = %+v, %v; want the first mount", cur, err)
			}
			if err := m.Unpublish(target); err != nil {
				t.Fatal(err)
			}
			if n := layers(t, target); n != 0 {
				t.Errorf("%d mounts left at the target after Unpublish", n)
			}
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("target still there after Unpublish: %v", err)
			}
		})
	}
}

func TestMountOverABindIsAlreadyExists(t *testing.T) {
	needRoot(t)
	volume, target := scratch(t)
	m := New()
	if err := m.Bind(volume, target, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Mount("tmpfs", target, "tmpfs", Options{}); !errors.Is(err, driver.ErrAlreadyExists) {
		t.Fatalf("Mount over a bind = %v, want ALREADY_EXISTS", err)
	}
	if err := m.Bind(volume, target, Options{}); err != nil {
		t.Fatalf("the bind is still the one there: %v", err)
	}
	if err := m.Unpublish(target); err != nil {
		t.Fatal(err)
	}
}

func TestMountReadOnlyIsReallyReadOnly(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"ReadOnly", Options{ReadOnly: true, MountFlags: []string{"size=1m"}}},
		{"ro among the mount flags", Options{MountFlags: []string{"size=1m", "ro"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, target := scratch(t)
			m := New()
			for range 2 {
				if err := m.Mount("tmpfs", target, "tmpfs", tc.o); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(target, "new"), []byte("x"), 0o600); !errors.Is(err, unix.EROFS) {
				t.Fatalf("write to a read-only tmpfs = %v, want EROFS", err)
			}
			if n := layers(t, target); n != 1 {
				t.Errorf("%d mounts at the target, want 1", n)
			}
			if err := m.Unmount(target, nil); err != nil {
				t.Fatal(err)
			}
			if n := layers(t, target); n != 0 {
				t.Errorf("%d mounts left at the target after Unmount", n)
			}
			if err := RemoveTarget(target); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMountRefusesBadInput: every refusal comes before anything is created or mounted, says
// which input is wrong, and never quotes a mount flag (it may be a secret).
func TestMountRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	const secret = "hunter2-token"
	for _, tc := range []struct {
		name, source, fsType string
		o                    Options
	}{
		{"an empty source", "", "tmpfs", Options{}},
		{"a source mount would read as an option", "-v", "tmpfs", Options{}},
		{"a source with a newline", "tmp\nfs", "tmpfs", Options{}},
		{"an empty filesystem type", "tmpfs", "", Options{}},
		{"auto as the type", "tmpfs", "auto", Options{}},
		{"a list of types", "tmpfs", "tmpfs,ramfs", Options{}},
		{"a type with a space", "tmpfs", "tmp fs", Options{}},
		{"a flag holding a comma, which would smuggle in more flags", "tmpfs", "tmpfs", Options{MountFlags: []string{"password=" + secret + ",ro"}}},
		{"an empty flag", "tmpfs", "tmpfs", Options{MountFlags: []string{""}}},
		{"a flag with a control character", "tmpfs", "tmpfs", Options{MountFlags: []string{"password=" + secret + "\n"}}},
		{"bind, which is Bind's", "tmpfs", "tmpfs", Options{MountFlags: []string{"bind"}}},
		{"rbind", "tmpfs", "tmpfs", Options{MountFlags: []string{"rbind"}}},
		{"remount, which changes a mount instead of making one", "tmpfs", "tmpfs", Options{MountFlags: []string{"remount"}}},
		{"move", "tmpfs", "tmpfs", Options{MountFlags: []string{"move"}}},
		{"rw with ReadOnly", "tmpfs", "tmpfs", Options{ReadOnly: true, MountFlags: []string{"rw"}}},
		{"defaults with ReadOnly, since defaults means rw", "tmpfs", "tmpfs", Options{ReadOnly: true, MountFlags: []string{"defaults"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"), "mnt")
			err := New().Mount(tc.source, target, tc.fsType, tc.o)
			if !errors.Is(err, driver.ErrInvalidArgument) {
				t.Fatalf("Mount = %v, want INVALID_ARGUMENT", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes a mount flag: %v", err)
			}
			if _, err := os.Lstat(filepath.Dir(target)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused Mount created the target's parent: %v", err)
			}
		})
	}
	if err := New().Mount("tmpfs", "relative/mnt", "tmpfs", Options{}); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("Mount at a relative target = %v, want INVALID_ARGUMENT", err)
	}
}

// needBindfs skips a test that mounts a FUSE filesystem when bindfs (Debian package bindfs,
// which brings fuse and mount.fuse) is not installed.
func needBindfs(t *testing.T) {
	t.Helper()
	needRoot(t)
	for _, tool := range []string{"bindfs", "mount.fuse"} {
		testenv.Tool(t, tool, "bindfs")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Skip(t, "mounts a FUSE filesystem: no /dev/fuse: %v", err)
	}
}

func TestMountFUSE(t *testing.T) {
	needBindfs(t)
	m := New()
	t.Run("the same source again is success; another is ALREADY_EXISTS; Unpublish takes it off", func(t *testing.T) {
		volume, target := scratch(t)
		other := filepath.Join(filepath.Dir(volume), "other")
		if err := os.Mkdir(other, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := m.Mount(volume, target, "fuse.bindfs", Options{}); err != nil {
			t.Fatal(err)
		}
		// bindfs shows the type "fuse" and the source cleaned; both are recognised.
		if err := m.Mount(volume+"/", target, "fuse.bindfs", Options{}); err != nil {
			t.Fatalf("repeated Mount: %v", err)
		}
		if err := m.Mount(other, target, "fuse.bindfs", Options{}); !errors.Is(err, driver.ErrAlreadyExists) {
			t.Fatalf("Mount of another source = %v, want ALREADY_EXISTS", err)
		}
		if err := m.Mount(volume, target, "fuse.bindfs", Options{ReadOnly: true}); !errors.Is(err, driver.ErrAlreadyExists) {
			t.Fatalf("read-only Mount over read-write = %v, want ALREADY_EXISTS", err)
		}
		if n := layers(t, target); n != 1 {
			t.Errorf("%d mounts at the target, want 1", n)
		}
		if b, err := os.ReadFile(filepath.Join(target, "data")); err != nil || string(b) != "keep me" {
			t.Errorf("the volume through FUSE = %q, %v", b, err)
		}
		if err := m.Unpublish(target); err != nil {
			t.Fatal(err)
		}
		if n := layers(t, target); n != 0 {
			t.Errorf("%d mounts left at the target", n)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("target still there: %v", err)
		}
	})
	t.Run("read-only is really read-only", func(t *testing.T) {
		volume, target := scratch(t)
		if err := m.Mount(volume, target, "fuse.bindfs", Options{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, "new"), []byte("x"), 0o600); !errors.Is(err, unix.EROFS) {
			t.Fatalf("write through a read-only FUSE mount = %v, want EROFS", err)
		}
		if err := m.Unpublish(target); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a flag the daemon quotes back in its error stays out of Mount's", func(t *testing.T) {
		volume, target := scratch(t)
		const secret = "s3cr3t-t0ken"
		err := m.Mount(volume, target, "fuse.bindfs", Options{MountFlags: []string{"token=" + secret}})
		if err == nil {
			t.Fatal("Mount with an option bindfs does not know succeeded")
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error quotes the flag: %v", err)
		}
		if n := layers(t, target); n != 0 {
			t.Errorf("%d mounts at the target after a failed Mount", n)
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed Mount left its target: %v", err)
		}
	})
	t.Run("a mount the table shows otherwise than asked is undone, not left for a retry to refuse", func(t *testing.T) {
		volume, target := scratch(t)
		// mount.fuse's old NAME#SOURCE form: the table shows type fuse and source volume.
		err := m.Mount("bindfs#"+volume, target, "fuse", Options{})
		if err == nil || !strings.Contains(err.Error(), "repeated call would refuse") {
			t.Fatalf("Mount = %v, want the mismatch explained", err)
		}
		if n := layers(t, target); n != 0 {
			t.Errorf("%d mounts at the target after the mismatch", n)
		}
	})
}

func TestStrtoullAndMemparseReadNumbersAsTheKernelDoes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    uint64
		rest string
		ok   bool
	}{
		{"1024", 1024, "", true},
		{"1k", 1 << 10, "", true},
		{"1K", 1 << 10, "", true},
		{"3m", 3 << 20, "", true},
		{"2G", 2 << 30, "", true},
		{"1t", 1 << 40, "", true},
		{"1p", 1 << 50, "", true},
		{"1e", 1 << 60, "", true},
		{"010", 8, "", true},
		{"08", 0, "8", true},
		{"0x10", 16, "", true},
		{"0x1e", 0x1e, "", true}, // e is a hex digit here, not exa
		{"0x", 0, "x", true},
		{"50%", 50, "%", true},
		{"1kb", 1 << 10, "b", true},
		{"", 0, "", false},
		{"k", 0, "", false},
		{"-1", 0, "", false},
	} {
		n, rest, ok := memparse(tc.in)
		if n != tc.n || rest != tc.rest || ok != tc.ok {
			t.Errorf("memparse(%q) = %d, %q, %t; want %d, %q, %t", tc.in, n, rest, ok, tc.n, tc.rest, tc.ok)
		}
	}
}

func TestTmpfsShownIsHowTheKernelShowsAnOption(t *testing.T) {
	pages, ok := totalRAMPages()
	if !ok {
		testenv.Skip(t, "sysinfo failed")
	}
	page := pageSize()
	for _, tc := range []struct {
		key, value, wantKey, wantValue string
		ok                             bool
	}{
		{"size", "1m", "size", "1024k", true},
		{"size", "1", "size", kib(1), true}, // rounded up to a page
		{"size", "0", "size", "0k", true},
		{"size", "100%", "size", kib(pages), true},
		{"size", "1x", "", "", false},
		{"nr_blocks", "16", "size", kib(16), true},
		{"nr_inodes", "1k", "nr_inodes", "1024", true},
		{"mode", "0755", "mode", "755", true},
		{"mode", "1777", "mode", "1777", true},
		{"mode", "9", "", "", false},
		{"uid", "1000", "uid", "1000", true},
		{"uid", "4294967296", "", "", false},
		{"huge", "always", "huge", "always", true},
		{"huge", "never", "", "", false},
		{"noswap", "", "", "", false},
		{"inode64", "", "", "", false},
	} {
		k, v, ok := tmpfsShown(tc.key, tc.value)
		if tc.ok != ok || (ok && (k != tc.wantKey || v != tc.wantValue)) {
			t.Errorf("tmpfsShown(%q, %q) = %q, %q, %t; want %q, %q, %t", tc.key, tc.value, k, v, ok, tc.wantKey, tc.wantValue, tc.ok)
		}
	}
	if page != 4096 {
		t.Logf("page size %d", page)
	} else if _, v, _ := tmpfsShown("size", "5246976"); v != "5124k" {
		// The example Mount's doc gives of a size the kernel does not show as it was set.
		t.Errorf("size=5246976 shows as size=%s, want 5124k", v)
	}
}

func TestDifferingOptions(t *testing.T) {
	info := func(mountOpts, superOpts string) *Info {
		return &Info{mount.MountInfo{MountOptions: strings.Split(mountOpts, ","), SuperOptions: strings.Split(superOpts, ",")}}
	}
	defaults := map[string]string{"mode": "1777", "uid": "0", "gid": "0", "size": "8192k"}
	for _, tc := range []struct {
		name    string
		cur     *Info
		options []string
		want    string
	}{
		{"nothing asked, nothing differs", info("rw,relatime", "rw"), nil, ""},
		{"a flag that is set", info("rw,noexec,relatime", "rw"), []string{"noexec"}, ""},
		{"a flag that is not set", info("rw,relatime", "rw"), []string{"nodev"}, "nodev"},
		{"the opposite of a flag that is set", info("rw,nosuid", "rw"), []string{"suid"}, "nosuid"},
		{"the later of two contradicting flags wins", info("rw,relatime", "rw"), []string{"noexec", "exec"}, ""},
		{"defaults clears nosuid", info("rw,nosuid", "rw"), []string{"defaults"}, "nosuid"},
		{"user implies noexec", info("rw,nosuid,nodev", "rw"), []string{"user"}, "noexec"},
		{"relatime is not compared: the kernel's default", info("rw,noatime", "rw"), []string{"relatime", "noatime"}, ""},
		{"an unknown option is not compared", info("rw", "rw"), []string{"vers=4"}, ""},
		{"a tmpfs size as shown", info("rw", "rw,size=1024k"), []string{"size=1m"}, ""},
		{"another tmpfs size", info("rw", "rw,size=1024k"), []string{"size=2m"}, "size"},
		{"a size not shown is the default", info("rw", "rw"), []string{"size=8m"}, ""},
		{"a size other than the default over a default", info("rw", "rw"), []string{"size=4m"}, "size"},
		{"a mode not shown is 1777", info("rw", "rw"), []string{"mode=1777"}, ""},
		{"another mode over the default", info("rw", "rw"), []string{"mode=700"}, "mode"},
		{"nr_inodes not shown is not compared: its default is not known here", info("rw", "rw"), []string{"nr_inodes=5"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := differingFlag(tc.cur, tc.options)
			if got == "" {
				got = differingTmpfsOption(tc.cur, tc.options, defaults)
			}
			if got != tc.want {
				t.Errorf("differing = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSameFSTypeAndSource(t *testing.T) {
	for _, tc := range []struct {
		shown, want string
		same        bool
	}{
		{"tmpfs", "tmpfs", true},
		{"ramfs", "tmpfs", false},
		{"fuse", "fuse.bindfs", true},
		{"fuse.sshfs", "fuse.sshfs", true},
		{"fuse.sshfs", "fuse3.sshfs", true},
		{"fuse.other", "fuse.sshfs", false},
		{"fuse", "tmpfs", false},
		{"nfs4", "nfs", true},
		{"nfs", "nfs4", false},
	} {
		if got := sameFSType(tc.shown, tc.want); got != tc.same {
			t.Errorf("sameFSType(%q, %q) = %t, want %t", tc.shown, tc.want, got, tc.same)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"/a/b/", "/a/b"},
		{"srv:/export/", "srv:/export"},
		{"srv:/", "srv:/"},
		{"user@host:/x/./y", "user@host:/x/y"},
		{"tmpfs", "tmpfs"},
	} {
		if got := cleanSource(tc.in); got != tc.want {
			t.Errorf("cleanSource(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactFlags(t *testing.T) {
	msg := "fuse: unknown option `token=s3cr3t' and s3cr3t again; noexec ro"
	got := redactFlags(msg, []string{"token=s3cr3t", "noexec", "ro"})
	if strings.Contains(got, "s3cr3t") {
		t.Errorf("redactFlags left the secret: %q", got)
	}
	if !strings.Contains(got, "noexec ro") {
		t.Errorf("redactFlags masked words that are not secrets: %q", got)
	}
}

// FuzzCheckMount: whatever checkMount accepts is safe to join into mount's -o list and pass as
// its arguments, and a refusal never quotes the flag.
func FuzzCheckMount(f *testing.F) {
	f.Add("tmpfs", "tmpfs", "size=1m", false)
	f.Add("srv:/export", "nfs", "vers=4,ro", true)
	f.Add("-o", "fuse.sshfs", "password=secret-value", false)
	f.Add("tmpfs", "tmpfs", "rw", true)
	f.Add("tmpfs", "auto", "bind", false)
	f.Fuzz(func(t *testing.T, source, fsType, flag string, ro bool) {
		_, err := checkMount(source, fsType, Options{ReadOnly: ro, MountFlags: []string{flag}})
		if err == nil {
			if source == "" || strings.HasPrefix(source, "-") || fsType == "" || strings.ContainsAny(fsType, ", ") ||
				flag == "" || strings.ContainsAny(flag, ",\n\x00") {
				t.Fatalf("checkMount(%q, %q, %q) accepted", source, fsType, flag)
			}
			return
		}
		if !errors.Is(err, driver.ErrInvalidArgument) {
			t.Fatalf("refusal %v does not wrap ErrInvalidArgument", err)
		}
		if len(flag) >= 8 && flag != "defaults" && !strings.Contains(source+fsType, flag) && strings.Contains(err.Error(), flag) {
			t.Fatalf("refusal quotes the flag %q: %v", flag, err)
		}
	})
}

// FuzzMemparse: the number read is a prefix of the input; what is left is the rest of it.
func FuzzMemparse(f *testing.F) {
	for _, s := range []string{"1k", "0x1f", "010", "50%", "", "k", "0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, rest, ok := memparse(s)
		if !strings.HasSuffix(s, rest) {
			t.Fatalf("memparse(%q) left %q, not a suffix", s, rest)
		}
		if ok && len(rest) >= len(s) {
			t.Fatalf("memparse(%q) = %d read nothing", s, n)
		}
		if !ok && (n != 0 || rest != "") {
			t.Fatalf("memparse(%q) failed with %d, %q", s, n, rest)
		}
	})
}

// TestDeadFUSEMount: a FUSE mount whose daemon was killed answers every lookup of its mount point
// with ENOTCONN (a ceph-fuse that died, or was killed with its node plugin's container). Its
// volume must still be recognised as mounted (At), its users listed (MountsOf), and Unpublish
// must take it off and remove the target, so that the driver can stage or publish it afresh.
func TestDeadFUSEMount(t *testing.T) {
	m, target := mountBindfs(t)
	for _, pid := range bindfsDaemons(t, target) {
		// Not our child, so no wait(2): a pidfd polls readable once the process has exited, and
		// its /dev/fuse is closed by then.
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Kill(pid, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// poll(2) returns EINTR when a signal arrives first, and the Go runtime sends its
		// threads signals to preempt goroutines: wait again.
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 10_000)
			if err == nil {
				break
			}
			if !errors.Is(err, unix.EINTR) {
				t.Fatal(err)
			}
		}
		unix.Close(pidfd)
	}
	if _, err := os.Stat(target); !errors.Is(err, unix.ENOTCONN) {
		t.Fatalf("stat of the mount point after its daemon was killed: %v, want ENOTCONN", err)
	}

	if info, err := At(target); err != nil || info == nil {
		t.Fatalf("At(dead FUSE mount) = %v, %v; want the mount", info, err)
	}
	if points, err := MountsOf(target); err != nil || len(points) != 0 {
		t.Fatalf("MountsOf(dead FUSE mount) = %v, %v; want no other mount and no error", points, err)
	}
	if err := m.Unpublish(target); err != nil {
		t.Fatalf("Unpublish of a dead FUSE mount: %v", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("target still there after Unpublish: %v", err)
	}
}

// TestUnpublishOfAHungFUSEMount: a FUSE daemon that is alive but does not answer (stopped here;
// a deadlocked ceph-fuse in the wild) makes every lookup of its mount point wait. Unpublish must
// still take the mount off: umount(8) resolved the path first and waited with it.
func TestUnpublishOfAHungFUSEMount(t *testing.T) {
	m, target := mountBindfs(t)
	pids := bindfsDaemons(t, target)
	resume := func() {
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGCONT)
		}
	}
	t.Cleanup(resume)
	for _, pid := range pids {
		if err := unix.Kill(pid, unix.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- m.Unpublish(target) }()
	// A watchdog, not a measurement: the unmount takes milliseconds; a hang is forever, and the
	// daemon is resumed so that the hung call returns and the test can report it.
	watchdog := time.NewTimer(time.Minute)
	defer watchdog.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Unpublish of a hung FUSE mount: %v", err)
		}
	case <-watchdog.C:
		resume()
		<-done
		t.Fatal("Unpublish of a hung FUSE mount did not return in a minute (it returned once the daemon was resumed)")
	}
	if n := layers(t, target); n != 0 {
		t.Errorf("%d mounts left at the target", n)
	}
}

// bindfsDaemons returns the pids of the bindfs processes serving the mount at target.
func bindfsDaemons(t *testing.T, target string) []int {
	t.Helper()
	out, err := exec.Command("pgrep", "-f", "^bindfs .*"+regexp.QuoteMeta(target)+"( |$)").Output()
	if err != nil {
		t.Fatalf("the bindfs daemon of %s: %v", target, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// mountBindfs publishes a scratch volume at a scratch target through bindfs, and detaches it
// at the end whatever the test did to its daemon.
func mountBindfs(t *testing.T) (*Mounter, string) {
	t.Helper()
	needBindfs(t)
	m := New()
	volume, target := scratch(t)
	if err := m.Mount(volume, target, "fuse.bindfs", Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	return m, target
}
