package hostpath

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver/nodemount"
)

// mountInfos is the mount table for the test harness's clean-up and leak checks.
func mountInfos() ([]nodemount.Info, error) { return nodemount.Mounts() }

// capSysResource is the capability the kernel asks for to grow a mounted ext4 filesystem
// (EXT4_IOC_RESIZE_FS); tests without it expect the node to say so and grow offline.
const capSysResource = unix.CAP_SYS_RESOURCE

// hasCapability reports whether the process has capability bit in its effective set.
func hasCapability(bit uint) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 sets are two 32-bit words
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[bit/32].Effective&(1<<(bit%32)) != 0
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
