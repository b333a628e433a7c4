package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
)

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		"/plain":            "/plain",
		`/with\040space`:    "/with space",
		`/tab\011and\012nl`: "/tab\tand\nnl",
		`/back\134slash`:    `/back\slash`,
		`/not\08escape`:     `/not\08escape`,
		`/trailing\04`:      `/trailing\04`,
		`\040\040`:          "  ",
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzUnescapeMountPath(f *testing.F) {
	for _, s := range []string{"/a", `/a\040b`, `\`, `\0`, `\777`, `\1234`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := unescapeMountPath(s)
		if len(out) > len(s) {
			t.Fatalf("decoding grew %q to %q", s, out)
		}
	})
}

func TestRootUnder(t *testing.T) {
	const id = "vol-0123456789abcdef0123456789abcdef"
	tests := []struct {
		root, rest string
		ok         bool
	}{
		{"/state/volumes/01/" + id, "", true},
		{"/sv/state/volumes/01/" + id + "/sub/dir", "sub/dir", true},
		{"/" + id, "", true},
		{"/state/volumes/01/" + id + "x", "", false},
		{"/state/volumes/01/x" + id, "", false},
		{"/", "", false},
		{"/loop2", "", false},
	}
	for _, tt := range tests {
		rest, ok := rootUnder(tt.root, id)
		if rest != tt.rest || ok != tt.ok {
			t.Errorf("rootUnder(%q) = %q, %v; want %q, %v", tt.root, rest, ok, tt.rest, tt.ok)
		}
	}
}

func FuzzRootUnder(f *testing.F) {
	const id = "vol-0123456789abcdef0123456789abcdef"
	for _, s := range []string{"/", "/" + id, "/a/" + id + "/b", "//" + id + "//", id} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, root string) {
		rest, ok := rootUnder(root, id)
		if !ok {
			return
		}
		if !strings.HasSuffix(root, "/"+id) && !strings.HasSuffix(root, "/"+id+"/"+rest) {
			t.Fatalf("rootUnder(%q) = %q: the root does not end in the volume and the rest", root, rest)
		}
	})
}

func TestTopMountAt(t *testing.T) {
	// A stack at /t: 30 on 20 on 10, listed out of order; another mount elsewhere.
	infos := []mount.MountInfo{
		{ID: 30, ParentID: 20, MountPoint: "/t"},
		{ID: 10, ParentID: 1, MountPoint: "/t"},
		{ID: 5, ParentID: 1, MountPoint: "/u"},
		{ID: 20, ParentID: 10, MountPoint: "/t"},
	}
	if got := topMountAt(infos, "/t"); got == nil || got.ID != 30 {
		t.Fatalf("top of the stack at /t: %+v, want ID 30", got)
	}
	if got := topMountAt(infos, "/v"); got != nil {
		t.Fatalf("no mount at /v, got %+v", got)
	}
	if got := containingMount(infos, "/t/a/b"); got == nil || got.ID != 30 {
		t.Fatalf("mount holding /t/a/b: %+v, want ID 30", got)
	}
}

func TestSameBacking(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "vol.img")
	if err := createImage(img, 4096); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone.img")
	noDevice := filepath.Join(dir, "no-such-loop") // the inode cannot be asked: the path decides
	tests := []struct {
		name, attached, backing string
		want                    bool
	}{
		{"same path", img, img, true},
		{"another file", gone, img, false},
		{"unlinked file at the image's path", img + deletedSuffix, img, false},
		{"unlinked image", gone + deletedSuffix, gone, true},
		{"path only shares a prefix", img + "x", img, false},
	}
	for _, tt := range tests {
		if got := sameBacking(noDevice, tt.attached, tt.backing); got != tt.want {
			t.Errorf("%s: sameBacking(%q, %q) = %v, want %v", tt.name, tt.attached, tt.backing, got, tt.want)
		}
	}
}

// TestRemoveTargetRemovesOnlyWhatTheDriverCreates: an empty directory or empty file, nothing else.
func TestRemoveTargetRemovesOnlyWhatTheDriverCreates(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		make    func(p string) error
		removed bool
	}{
		{"empty directory", func(p string) error { return os.Mkdir(p, 0o750) }, true},
		{"empty file", func(p string) error { return os.WriteFile(p, nil, 0o600) }, true},
		{"directory with content", func(p string) error {
			if err := os.Mkdir(p, 0o750); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600)
		}, false},
		{"file with content", func(p string) error { return os.WriteFile(p, []byte("x"), 0o600) }, false},
		{"symlink", func(p string) error { return os.Symlink(dir, p) }, false},
		{"symlink to an empty file", func(p string) error {
			if err := os.WriteFile(p+".real", nil, 0o600); err != nil {
				return err
			}
			return os.Symlink(p+".real", p)
		}, false},
		{"FIFO", func(p string) error { return unix.Mkfifo(p, 0o600) }, false},
		{"nothing", func(string) error { return nil }, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprint("target", i))
			if err := tt.make(p); err != nil {
				t.Fatal(err)
			}
			if err := removeTarget(p); err != nil {
				t.Fatal(err)
			}
			_, err := os.Lstat(p)
			if removed := errors.Is(err, os.ErrNotExist); removed != tt.removed {
				t.Fatalf("removed = %v, want %v", removed, tt.removed)
			}
		})
	}
}

func TestSamePath(t *testing.T) {
	tests := []struct {
		recorded, asGiven, canon, given string
		want                            bool
	}{
		{"/real/k/t", "/k/t", "/real/k/t", "/k/t", true},      // same path, same spelling
		{"/real/k/t", "/k/t", "/real/k/t", "/other/t", true},  // another spelling of the same place
		{"/real/k/t", "/k/t", "/k/t", "/k//t/", true},         // the directory is gone: as given
		{"/k/t", "", "/k/t", "/k/t", true},                    // a record from before canonical paths
		{"/real/k/t", "/k/t", "/real/k/u", "/k/u", false},     // another path
		{"/real/k/t", "/k/t", "/real/k/t/x", "/k/t/x", false}, // below it
	}
	for _, tt := range tests {
		if got := samePath(tt.recorded, tt.asGiven, tt.canon, tt.given); got != tt.want {
			t.Errorf("samePath(%q, %q, %q, %q) = %v, want %v", tt.recorded, tt.asGiven, tt.canon, tt.given, got, tt.want)
		}
	}
}
