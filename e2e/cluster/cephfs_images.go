package cluster

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cephfsImageTools are the programs of the cephfs image besides the driver: ceph-fuse, which
// NodeStageVolume runs, and mount and umount, which k8s.io/mount-utils runs for the bind mounts
// and ceph-fuse for its remounts (examples/cephfs/Dockerfile installs ceph-fuse and mount).
var cephfsImageTools = []string{"ceph-fuse", "mount", "umount"}

// cephPluginDirs are the directories, beside libceph-common, of the plugins Ceph's client
// libraries load with dlopen (ldd cannot see them): compressors (the messenger may negotiate
// compression) and crypto. The OSD's erasure-code plugins are not a client's.
var cephPluginDirs = []string{"compressor", "crypto"}

// cephfsFiles returns the files of the cephfs image: the driver at /usr/local/bin/cephfs, the
// tools, Ceph's client plugins, each with the libraries ldd lists for it, /tmp (the driver
// writes ceph-fuse's keyring there) and /var/run/ceph. The Debian 12 packages of this machine
// are the ones examples/cephfs/Dockerfile installs, so the image holds the same programs and
// libraries.
func cephfsFiles(driverBin string) ([]layerFile, error) {
	files, err := withLibraries(driverBin, "/usr/local/bin/cephfs")
	if err != nil {
		return nil, err
	}
	tools, err := hostTools(cephfsImageTools...)
	if err != nil {
		return nil, err
	}
	files = append(files, tools...)
	// ceph-fuse invalidates the kernel's dentries by remounting, through system("... mount -i
	// -o remount ..."), which runs /bin/sh; when that fails it unmounts itself and exits, and
	// every pod using the volume gets ECONNABORTED (seen in TestCephFSPods before /bin/sh was
	// here). Debian's /bin/sh is dash.
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		return nil, fmt.Errorf("/bin/sh, which ceph-fuse runs mount through: %w", err)
	}
	shell, err := withLibraries(sh, "/bin/sh")
	if err != nil {
		return nil, err
	}
	files = append(files, shell...)
	var common string
	for _, f := range files {
		if path.Base(f.name) == "libceph-common.so.2" {
			common = f.src
		}
	}
	if common == "" {
		return nil, fmt.Errorf("ldd lists no libceph-common.so.2 for %s or ceph-fuse: not a Ceph client", driverBin)
	}
	for _, dir := range cephPluginDirs {
		plugins, err := filepath.Glob(filepath.Join(filepath.Dir(common), dir, "*.so*"))
		if err != nil {
			return nil, err
		}
		for _, p := range plugins {
			libs, err := withLibraries(p, p)
			if err != nil {
				return nil, err
			}
			files = append(files, libs...)
		}
	}
	// ceph-fuse's global_init makes its run directory, /var/run/ceph, and aborts when it cannot
	// (no /var/run here); Debian's images have /var/run.
	return dedupeFiles(append(files, layerFile{name: "/tmp"}, layerFile{name: "/var/run/ceph"})), nil
}

// dedupeFiles keeps the first entry of each image path: the tools share most libraries.
func dedupeFiles(files []layerFile) []layerFile {
	seen := map[string]bool{}
	return slices.DeleteFunc(files, func(f layerFile) bool {
		n := path.Clean(f.name)
		if seen[n] {
			return true
		}
		seen[n] = true
		return false
	})
}

// CephFSLibrariesPresent says why examples/cephfs cannot be built here (it is cgo on librados and
// libcephfs), or nil.
func CephFSLibrariesPresent() error {
	var missing []string
	for _, h := range []string{"/usr/include/rados/librados.h", "/usr/include/cephfs/libcephfs.h"} {
		if _, err := os.Stat(h); err != nil {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("examples/cephfs is cgo on librados and libcephfs: missing %s (Debian: apt-get install librados-dev libcephfs-dev)", strings.Join(missing, ", "))
	}
	return nil
}

// CephFSImages returns the images deploy/kubernetes/cephfs names, each under the exact name the
// manifests use, and busybox for the test pods. The driver is built from this checkout with cgo,
// as examples/cephfs/Dockerfile builds it.
func CephFSImages(ctx context.Context, t testing.TB, work string, ms []Manifest) func(map[string]string) ([]ImageSpec, error) {
	return func(tools map[string]string) ([]ImageSpec, error) {
		refs := containerImages(ms)
		bin := filepath.Join(work, "cephfs")
		// examples/cephfs is a workspace of its own (its go.work), outside the e2e one.
		if err := buildFromCheckout(ctx, t, "cephfs (cgo)", "../examples/cephfs", []string{"CGO_ENABLED=1", "GOWORK="}, bin, "."); err != nil {
			return nil, err
		}
		return manifestImages(refs, tools, "cephfs", func() ([]layerFile, error) { return cephfsFiles(bin) })
	}
}

func sortSpecs(specs []ImageSpec) {
	slices.SortFunc(specs, func(a, b ImageSpec) int { return strings.Compare(a.ref, b.ref) })
}
