package plugin

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzNodePathID: two (volume, path) pairs share a lock ID exactly when they name one volume and
// one mount point. Paths hold no NUL (the kernel refuses them) and are absolute (validation
// refuses the rest); volume IDs may hold anything.
func FuzzNodePathID(f *testing.F) {
	for _, seed := range [][4]string{
		{"a/b", "/c", "a", "/b/c"},         // a slash in the ID is not a path separator
		{"v", "/t/", "v", "/t"},            // one mount point, two spellings
		{"v", "/t/../u", "v", "/u"},        // likewise
		{"v\x00/x", "/t", "v", "/x\x00/t"}, // a NUL in the ID; the second path is not a real one
		{"v\x00", "/t", "v", "/t"},         // a trailing NUL in the ID
		{"pvc-1", "/var/lib/kubelet/pods/a/volumes/kubernetes.io~csi/pvc-1/mount", "pvc-1", "/var/lib/kubelet/pods/b/volumes/kubernetes.io~csi/pvc-1/mount"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, v1, p1, v2, p2 string) {
		for _, p := range []string{p1, p2} {
			if !filepath.IsAbs(p) || strings.Contains(p, "\x00") {
				t.Skip("not a path a request can carry")
			}
		}
		same := v1 == v2 && filepath.Clean(p1) == filepath.Clean(p2)
		if got := nodePathID(v1, p1) == nodePathID(v2, p2); got != same {
			t.Fatalf("nodePathID(%q, %q) == nodePathID(%q, %q) is %v, want %v", v1, p1, v2, p2, got, same)
		}
	})
}
