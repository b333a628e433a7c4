package cluster

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// upstreamEntrypoints are the entrypoints of the released sidecar images, keyed by the last
// element of the image's repository; the images built here keep them, since the manifests give
// arguments only.
var upstreamEntrypoints = map[string]struct{ tool, entrypoint string }{
	"csi-provisioner":           {"csi-provisioner", "/csi-provisioner"},
	"csi-attacher":              {"csi-attacher", "/csi-attacher"},
	"csi-resizer":               {"csi-resizer", "/csi-resizer"},
	"csi-snapshotter":           {"csi-snapshotter", "/csi-snapshotter"},
	"livenessprobe":             {"livenessprobe", "/livenessprobe"},
	"csi-node-driver-registrar": {"registrar", "/csi-node-driver-registrar"},
}

// hostpathTools are the programs hostpath's node service runs through k8s.io/mount-utils and
// nodemount, as examples/hostpath/Dockerfile installs them (mount, util-linux, e2fsprogs,
// xfsprogs); here they are this machine's Debian binaries with their libraries.
var hostpathTools = []string{"mount", "umount", "blkid", "blockdev", "fsck", "fsck.ext4", "mkfs.ext4", "e2fsck",
	"resize2fs", "dumpe2fs", "mkfs.xfs", "xfs_repair", "xfs_growfs", "xfs_io"}

// containerImages is the set of images the containers of the manifests' StatefulSets and
// DaemonSets name: a driver deployment's images, each of which the cluster must have under
// exactly that name (no registry is reachable).
func containerImages(ms []Manifest) map[string]bool {
	refs := map[string]bool{}
	for _, m := range ms {
		var spec *corev1.PodSpec
		switch o := m.Obj.(type) {
		case *appsv1.StatefulSet:
			spec = &o.Spec.Template.Spec
		case *appsv1.DaemonSet:
			spec = &o.Spec.Template.Spec
		default:
			continue
		}
		for _, c := range spec.Containers {
			refs[c.Image] = true
		}
	}
	return refs
}

// HostpathImages returns the images deploy/kubernetes/hostpath names, each under the exact
// name the manifests use, and busybox for the test pods.
func HostpathImages(ctx context.Context, t testing.TB, work string, ms []Manifest) func(map[string]string) ([]ImageSpec, error) {
	return func(tools map[string]string) ([]ImageSpec, error) {
		refs := containerImages(ms)
		bin := filepath.Join(work, "hostpath-static")
		// As examples/hostpath/Dockerfile builds it: static, no build paths.
		if err := buildFromCheckout(ctx, t, "hostpath (static)", "..", []string{"CGO_ENABLED=0"}, bin, "./examples/hostpath"); err != nil {
			return nil, err
		}
		return manifestImages(refs, tools, "hostpath", func() ([]layerFile, error) {
			files, err := hostTools(hostpathTools...)
			return append(files, layerFile{name: "/usr/local/bin/hostpath", src: bin}, layerFile{name: "/tmp"},
				layerFile{name: "/etc/mke2fs.conf", src: "/etc/mke2fs.conf"}), err
		})
	}
}

// buildFromCheckout builds the Go package pkg of this checkout into out, as the project's
// Dockerfiles do (no build paths, stripped), running in dir with env added, and logs how long
// it took under what.
func buildFromCheckout(ctx context.Context, t testing.TB, what, dir string, env []string, out, pkg string) error {
	goBin, err := goCommand()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := run(ctx, dir, env, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg); err != nil {
		return fmt.Errorf("build %s: %w", what, err)
	}
	t.Logf("built %s from this checkout in %s", what, time.Since(start).Round(time.Second))
	return nil
}

// manifestImages returns an image for every reference in refs, under that exact name: the
// driver's own (repository base name driver, entrypoint /usr/local/bin/DRIVER, files from
// driverFiles) or an upstream sidecar from the tools built for it; and busybox for the test
// pods. Sorted by name, so a build is the same whatever the map's order.
func manifestImages(refs map[string]bool, tools map[string]string, driver string, driverFiles func() ([]layerFile, error)) ([]ImageSpec, error) {
	var specs []ImageSpec
	for ref := range refs {
		base := path.Base(ref[:strings.LastIndex(ref, ":")])
		if base == driver {
			files, err := driverFiles()
			if err != nil {
				return nil, err
			}
			specs = append(specs, ImageSpec{ref: ref, entrypoint: []string{"/usr/local/bin/" + driver}, files: files})
			continue
		}
		up, ok := upstreamEntrypoints[base]
		if !ok {
			return nil, fmt.Errorf("no image can be built here for %s", ref)
		}
		files, err := withLibraries(tools[up.tool], up.entrypoint)
		if err != nil {
			return nil, err
		}
		specs = append(specs, ImageSpec{ref: ref, entrypoint: []string{up.entrypoint}, files: files})
	}
	bb, err := busyboxFiles()
	if err != nil {
		return nil, err
	}
	specs = append(specs, ImageSpec{ref: BusyboxImage, cmd: []string{"sh"}, files: bb})
	sortSpecs(specs)
	return specs, nil
}

// Memorys3Images returns the images the memorys3 Deployment names (memorys3 built static from
// this checkout as its Dockerfile builds it; the sidecar from tools/cosi with upstream's
// entrypoint) and the bucket client's.
func Memorys3Images(ctx context.Context, t testing.TB, work string, ms []Manifest, tools map[string]string) ([]ImageSpec, error) {
	dep, ok := findDeployment(ms)
	if !ok {
		return nil, fmt.Errorf("the memorys3 manifests have no Deployment")
	}
	bin := filepath.Join(work, "memorys3-static")
	if err := buildFromCheckout(ctx, t, "memorys3 (static)", "..", []string{"CGO_ENABLED=0"}, bin, "./examples/memorys3"); err != nil {
		return nil, err
	}
	var specs []ImageSpec
	for _, c := range dep.Spec.Template.Spec.Containers {
		switch c.Name {
		case Memorys3Container:
			// As examples/memorys3/Dockerfile: the binary alone at /memorys3.
			specs = append(specs, ImageSpec{ref: c.Image, entrypoint: []string{"/memorys3"}, files: []layerFile{{name: "/memorys3", src: bin}}})
		case SidecarContainer:
			// Upstream's sidecar image (sidecar/Dockerfile of v0.2.2) runs /sidecar.
			if path.Base(c.Image) != "objectstorage-sidecar:"+COSIVersion {
				return nil, fmt.Errorf("sidecar image %s: tools/cosi builds %s", c.Image, COSIVersion)
			}
			files, err := withLibraries(tools["cosi-sidecar"], "/sidecar")
			if err != nil {
				return nil, err
			}
			specs = append(specs, ImageSpec{ref: c.Image, entrypoint: []string{"/sidecar"}, files: files})
		default:
			return nil, fmt.Errorf("no image can be built here for container %s (%s)", c.Name, c.Image)
		}
	}
	specs = append(specs, ImageSpec{ref: BucketClientImage, entrypoint: []string{"/bucketclient"},
		files: []layerFile{{name: "/bucketclient", src: tools["bucketclient"]}}})
	return specs, nil
}

// Containers of the memorys3 Deployment.
const (
	Memorys3Container = "memorys3"
	SidecarContainer  = "objectstorage-provisioner-sidecar"
)

// BucketClientImage is the image of tools/node's bucketclient, the application of the bucket pods.
const BucketClientImage = "csikit-e2e.local/bucketclient:v1"
