package nodemount

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/mount-utils"
)

func TestUnescape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain path is unchanged", "/var/lib/x", "/var/lib/x"},
		{"space is \\040", `/a\040b`, "/a b"},
		{"tab, newline and backslash decode", `/a\011b\012c\134d`, "/a\tb\nc\\d"},
		{"a backslash not followed by three octal digits stays", `/a\9b\04`, `/a\9b\04`},
		{"escape at the very end decodes", `/x\040`, "/x "},
		{"escapes side by side each decode", `\040\040`, "  "},
		{"an 8 or 9 is not an octal digit", `/not\08escape`, `/not\08escape`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unescape(tc.in); got != tc.want {
				t.Errorf("unescape(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzUnescape: decoding only ever shortens a field, so a decoded path never exceeds what the
// kernel wrote.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"/a", `/a\040b`, `\`, `\0`, `\777`, `\1234`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if out := unescape(s); len(out) > len(s) {
			t.Fatalf("unescape(%q) = %q grew", s, out)
		}
	})
}

// fixture is a mount table: the root filesystem (8:1) at /, /var/lib/kubelet on it, a bind of
// its /data/vol-1 at a pod's target twice (a retried publish), a bind of a whole tmpfs and an ext4
// filesystem of a loop device, with a space in its mount point.
const fixture = `1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
20 1 8:1 /data/vol-1 /pods/p1/mnt rw,relatime shared:1 - ext4 /dev/sda1 rw
21 20 8:1 /data/vol-1 /pods/p1/mnt ro,relatime shared:1 - ext4 /dev/sda1 rw
30 1 0:40 / /scratch rw - tmpfs tmpfs rw
31 1 0:40 /sub /pods/p2/mnt rw - tmpfs tmpfs rw
40 1 7:3 / /mnt/with\040space rw - ext4 /dev/loop3 rw
50 1 0:99 /lost /pods/p3/mnt rw - tmpfs other rw
`

func withFixture(t *testing.T) []Info {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mountinfo")
	if err := os.WriteFile(path, []byte(fixture), 0o600); err != nil {
		t.Fatal(err)
	}
	old := mountInfoPath
	mountInfoPath = path
	t.Cleanup(func() { mountInfoPath = old })
	infos, err := Mounts()
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

func TestTopIsTheMountNothingIsMountedOn(t *testing.T) {
	infos := withFixture(t)
	for _, tc := range []struct {
		name, path string
		wantID     int
	}{
		{"a stack of two binds: the later one is on top", "/pods/p1/mnt", 21},
		{"a single mount", "/scratch", 30},
		{"escaped mount points match decoded paths", "/mnt/with space", 40},
		{"not a mount point", "/pods/p1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := top(infos, tc.path)
			switch {
			case tc.wantID == 0 && got != nil:
				t.Errorf("top(%q) = mount %d, want none", tc.path, got.ID)
			case tc.wantID != 0 && (got == nil || got.ID != tc.wantID):
				t.Errorf("top(%q) = %v, want mount %d", tc.path, got, tc.wantID)
			}
		})
	}
	if m := top(infos, "/pods/p1/mnt"); !m.ReadOnly() {
		t.Errorf("mount 21 has the per-mount option ro but ReadOnly() = false")
	}
}

// TestTopDoesNotTrustTableOrder: a mount propagated in later can sit lower in a stack, so the top
// is found by parent IDs, and the mount holding a path below a stack is the stack's top.
func TestTopDoesNotTrustTableOrder(t *testing.T) {
	infos := []Info{ // 30 on 20 on 10 at /t, listed out of order, and a mount elsewhere
		{mount.MountInfo{ID: 30, ParentID: 20, MountPoint: "/t"}},
		{mount.MountInfo{ID: 10, ParentID: 1, MountPoint: "/t"}},
		{mount.MountInfo{ID: 5, ParentID: 1, MountPoint: "/u"}},
		{mount.MountInfo{ID: 20, ParentID: 10, MountPoint: "/t"}},
	}
	for _, tc := range []struct {
		name   string
		got    *Info
		wantID int
	}{
		{"the top of a stack is the mount nothing at its point is mounted on", top(infos, "/t"), 30},
		{"no mount at a path is nil", top(infos, "/v"), 0},
		{"the mount holding a path below a stack is the stack's top", containing(infos, "/t/a/b"), 30},
		{"a path below no mount point has no containing mount", containing(infos, "/w/x"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case tc.wantID == 0 && tc.got != nil:
				t.Errorf("got mount %d, want none", tc.got.ID)
			case tc.wantID != 0 && (tc.got == nil || tc.got.ID != tc.wantID):
				t.Errorf("got %v, want mount %d", tc.got, tc.wantID)
			}
		})
	}
}

func TestSourceOfJoinsTheBindRootToAMountOfItsFilesystem(t *testing.T) {
	infos := withFixture(t)
	for _, tc := range []struct{ name, path, want string }{
		{"a bind of a directory shows the directory's path", "/pods/p1/mnt", "/data/vol-1"},
		{"a bind inside a tmpfs is found through the tmpfs's mount point", "/pods/p2/mnt", "/scratch/sub"},
		{"a whole block filesystem shows its device", "/mnt/with space", "/dev/loop3"},
		{"a bind of a filesystem mounted nowhere else is named as the kernel names it", "/pods/p3/mnt", "other:/lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sourceOf(infos, top(infos, tc.path)); got != tc.want {
				t.Errorf("sourceOf(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, base string
		want       bool
	}{
		{"/a/b", "/a", true},
		{"/a", "/a", true},
		{"/ab", "/a", false},
		{"/anything", "/", true},
	} {
		if got := within(tc.path, tc.base); got != tc.want {
			t.Errorf("within(%q, %q) = %t, want %t", tc.path, tc.base, got, tc.want)
		}
	}
}

func TestCanonicalKeepsTheLeafAndResolvesItsParent(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(real, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "real"), filepath.Join(real, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"a link in the parent is resolved", filepath.Join(real, "link", "target"), filepath.Join(real, "real", "target")},
		{"a link as the leaf is kept, not followed", filepath.Join(real, "link"), filepath.Join(real, "link")},
		{"dot-dot is cleaned first", filepath.Join(real, "real", "..", "real", "x"), filepath.Join(real, "real", "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := Canonical("relative/path"); err == nil {
		t.Error("Canonical of a relative path succeeded")
	}
	if _, err := Canonical(filepath.Join(real, "missing", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Canonical under a missing parent = %v, want not-exist", err)
	}
}
