package cluster

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// The pods test runs where no registry is reachable, so every image a pod needs is built here
// from binaries on this machine and imported into containerd under the exact name the manifests
// (or kubelet, for the sandbox) ask for. An image is one uncompressed layer plus a config, a
// manifest and an index, in an OCI image-layout tar that `ctr images import` reads.

// Image names the pods need besides those deploy/kubernetes names.
const (
	// pauseImage is the sandbox image kubelet v1.36 and containerd are configured with; the
	// name is the one Kubernetes v1.36.1 uses (test/utils/image, kubeadm's PauseVersion).
	pauseImage = "registry.k8s.io/pause:3.10.2"
	// BusyboxImage is the name Kubernetes v1.36.1's e2e framework uses for busybox, so the
	// storage suite finds it too.
	BusyboxImage = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
)

// ImageSpec is one image to build: the files of its only layer and how it starts.
type ImageSpec struct {
	ref        string // full name with tag
	entrypoint []string
	cmd        []string
	files      []layerFile
}

// layerFile is one entry of a layer: a copy of a host file, a symbolic link or a directory.
type layerFile struct {
	name string // absolute path in the image
	src  string // host file copied (symbolic links followed); empty for a link or a directory
	link string // target of a symbolic link
}

// withLibraries returns the host binary src as name in the image, with every shared library the
// dynamic loader would load for it (ldd), each at the path ldd names: the image then runs the
// binary without a distribution underneath. A static binary comes alone.
func withLibraries(src, name string) ([]layerFile, error) {
	files := []layerFile{{name: name, src: src}}
	out, err := exec.Command("ldd", src).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return files, nil
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", src, err, out)
	}
	for _, lib := range lddLibraries(string(out)) {
		files = append(files, layerFile{name: lib, src: lib})
	}
	return files, nil
}

// lddLibraries is the absolute paths of the libraries in ldd's output: "name => /path (addr)"
// lines and the dynamic loader's "/path (addr)"; the vDSO ("linux-vdso.so.1 (addr)") lives in
// the kernel, and "name => not found" names nothing to copy.
func lddLibraries(out string) []string {
	var libs []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && f[0] != "=>" && strings.HasPrefix(f[0], "/") && (len(f) == 1 || f[1] != "=>"):
			libs = append(libs, f[0]) // the dynamic loader itself
		}
	}
	return libs
}

// hostTools returns each named program of this machine's PATH (and /usr/sbin, /sbin) at the
// same path in the image, with its libraries.
func hostTools(names ...string) ([]layerFile, error) {
	var files []layerFile
	for _, n := range names {
		p, err := exec.LookPath(n)
		if err != nil {
			for _, dir := range []string{"/usr/sbin", "/sbin"} {
				if _, serr := os.Stat(filepath.Join(dir, n)); serr == nil {
					p, err = filepath.Join(dir, n), nil
					break
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("host tool %s: %w", n, err)
		}
		fs, err := withLibraries(p, p)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

// busyboxFiles is Debian's static busybox with a link for each of its applets.
func busyboxFiles() ([]layerFile, error) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return nil, fmt.Errorf("busybox (Debian: apt-get install busybox-static): %w", err)
	}
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	files := []layerFile{{name: "/bin/busybox", src: bb}, {name: "/tmp"}}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" {
			files = append(files, layerFile{name: "/bin/" + applet, link: "busybox"})
		}
	}
	return files, nil
}

// writeOCIArchive writes img as an OCI image-layout tar at out.
func writeOCIArchive(img ImageSpec, out string) error {
	layer, err := os.CreateTemp(filepath.Dir(out), ".layer-")
	if err != nil {
		return err
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	h := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, h), img.files); err != nil {
		return fmt.Errorf("image %s: %w", img.ref, err)
	}
	layerSize, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	layerDigest := digestOf(h)

	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	config, err := json.Marshal(map[string]any{
		"architecture": goarchOfHost(), "os": "linux",
		"config": map[string]any{"Entrypoint": img.entrypoint, "Cmd": img.cmd, "Env": env, "WorkingDir": "/"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return err
	}
	desc := func(mediaType string, data []byte) map[string]any {
		s := sha256.Sum256(data)
		return map[string]any{"mediaType": mediaType, "digest": "sha256:" + hex.EncodeToString(s[:]), "size": len(data)}
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc("application/vnd.oci.image.config.v1+json", config),
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layerDigest, "size": layerSize}},
	})
	if err != nil {
		return err
	}
	md := desc("application/vnd.oci.image.manifest.v1+json", manifest)
	tag := img.ref[strings.LastIndex(img.ref, ":")+1:]
	// ctr takes the full name from io.containerd.image.name; the OCI annotation holds the tag.
	md["annotations"] = map[string]string{"io.containerd.image.name": img.ref, "org.opencontainers.image.ref.name": tag}
	md["platform"] = map[string]string{"architecture": goarchOfHost(), "os": "linux"}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []any{md}})
	if err != nil {
		return err
	}

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	blob := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blobName := func(digest string) string { return "blobs/sha256/" + strings.TrimPrefix(digest, "sha256:") }
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	if err := blob("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := blob("index.json", index); err != nil {
		return err
	}
	if err := blob(blobName(md["digest"].(string)), manifest); err != nil {
		return err
	}
	cd := desc("", config)
	if err := blob(blobName(cd["digest"].(string)), config); err != nil {
		return err
	}
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: blobName(layerDigest), Mode: 0o644, Size: layerSize, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, layer); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// writeLayer writes files as a layer tar, each parent directory first, in name order.
func writeLayer(w io.Writer, files []layerFile) error {
	byName := map[string]layerFile{}
	for _, f := range files {
		if !path.IsAbs(f.name) {
			return fmt.Errorf("layer entry %q is not absolute", f.name)
		}
		for d := path.Dir(f.name); d != "/"; d = path.Dir(d) {
			if _, ok := byName[d]; !ok {
				byName[d] = layerFile{name: d}
			}
		}
		byName[path.Clean(f.name)] = f
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	for _, n := range names {
		f := byName[n]
		name := strings.TrimPrefix(n, "/")
		switch {
		case f.link != "":
			if err := tw.WriteHeader(&tar.Header{Name: name, Linkname: f.link, Typeflag: tar.TypeSymlink, Mode: 0o777, ModTime: epoch}); err != nil {
				return err
			}
		case f.src == "":
			mode := int64(0o755)
			if n == "/tmp" {
				mode = 0o1777
			}
			if err := tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch}); err != nil {
				return err
			}
		default:
			if err := copyIntoTar(tw, name, f.src, epoch); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func copyIntoTar(tw *tar.Writer, name, src string, mtime time.Time) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: mtime}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, in); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return nil
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// goarchOfHost is the image architecture of this machine's binaries.
func goarchOfHost() string { return runtime.GOARCH }

// importImage imports one OCI archive into containerd's k8s.io namespace, where the CRI plugin
// (and so kubelet) looks for images.
func importImage(ctx context.Context, ctrBin, address, archive string) error {
	return run(ctx, "/", nil, ctrBin, "--address", address, "--namespace", "k8s.io", "images", "import", archive)
}

// extraImagesEnv lists more images for the kubelet cluster to build and import, for programs a
// pod runs besides busybox (the storage suite's agnhost): space-separated REF=BINARY[,PROGRAM...]
// entries, BINARY a static binary on this machine. Each becomes an image with busybox (a shell
// and its applets, as the upstream images carry) and the binary at /NAME, NAME being its base
// name, as its entrypoint. Each PROGRAM, HOSTPATH or IMAGEPATH=HOSTPATH, is a host program
// copied with the shared libraries it loads to IMAGEPATH (default: HOSTPATH), replacing what
// busybox put there: the storage suite's glibc stand-in gets dash as /bin/sh and GNU dd as
// /usr/bin/dd, because its specs write with dd's oflag=nocache, which busybox's dd lacks, and
// busybox's shell runs its own applets whatever PATH says.
const extraImagesEnv = "CSIKIT_E2E_EXTRA_IMAGES"

// extraImages parses the value of $CSIKIT_E2E_EXTRA_IMAGES into REF to BINARY and PROGRAMs,
// refusing an entry without a tag, with a path that is not an absolute file path, or naming one
// image twice.
func extraImages(value string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, entry := range strings.Fields(value) {
		ref, list, ok := strings.Cut(entry, "=")
		if !ok || ref == "" || list == "" {
			return nil, fmt.Errorf("%s: %q is not REF=BINARY[,PROGRAM...]", extraImagesEnv, entry)
		}
		if i := strings.LastIndex(ref, ":"); i < 0 || strings.Contains(ref[i:], "/") || i == len(ref)-1 {
			return nil, fmt.Errorf("%s: image %q has no tag", extraImagesEnv, ref)
		}
		bins := strings.Split(list, ",")
		for i, bin := range bins {
			paths := []string{bin}
			if i > 0 {
				if in, host, ok := strings.Cut(bin, "="); ok {
					paths = []string{in, host}
				}
			}
			for _, p := range paths {
				if !filepath.IsAbs(p) || path.Base(p) == "/" {
					return nil, fmt.Errorf("%s: binary %q of %s is not an absolute file path", extraImagesEnv, p, ref)
				}
			}
		}
		if _, dup := out[ref]; dup {
			return nil, fmt.Errorf("%s: image %q named twice", extraImagesEnv, ref)
		}
		out[ref] = bins
	}
	return out, nil
}

// extraImageSpecs builds the images $CSIKIT_E2E_EXTRA_IMAGES asks for.
func extraImageSpecs(value string) ([]ImageSpec, error) {
	refs, err := extraImages(value)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	bb, err := busyboxFiles()
	if err != nil {
		return nil, err
	}
	var specs []ImageSpec
	for ref, bins := range refs {
		if _, err := os.Stat(bins[0]); err != nil {
			return nil, fmt.Errorf("%s: image %s: %w", extraImagesEnv, ref, err)
		}
		name := "/" + filepath.Base(bins[0])
		files := append(slices.Clone(bb), layerFile{name: name, src: bins[0]})
		for _, prog := range bins[1:] {
			in, host, ok := strings.Cut(prog, "=")
			if !ok {
				in, host = prog, prog
			}
			if _, err := os.Stat(host); err != nil {
				return nil, fmt.Errorf("%s: image %s: %w", extraImagesEnv, ref, err)
			}
			// Later entries replace earlier ones of the same name (writeLayer).
			withLibs, err := withLibraries(host, in)
			if err != nil {
				return nil, fmt.Errorf("%s: image %s: %w", extraImagesEnv, ref, err)
			}
			files = append(files, withLibs...)
		}
		specs = append(specs, ImageSpec{ref: ref, entrypoint: []string{name}, files: files})
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].ref < specs[j].ref })
	return specs, nil
}
