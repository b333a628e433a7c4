package cluster

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLddLibraries(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"dynamic", "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f6a)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f6a)\n",
			[]string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}},
		{"not found", "\tlibfoo.so.1 => not found\n", nil},
		{"static", "\tnot a dynamic executable\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lddLibraries(tc.out); !slices.Equal(got, tc.want) {
				t.Errorf("lddLibraries = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzLddLibraries: whatever ldd prints, only absolute paths come out.
func FuzzLddLibraries(f *testing.F) {
	f.Add("\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x1)\n\t/lib64/ld-linux-x86-64.so.2 (0x2)\n")
	f.Add("\tlinux-vdso.so.1 (0x1)\n=> /x\n")
	f.Fuzz(func(t *testing.T, out string) {
		for _, l := range lddLibraries(out) {
			if !strings.HasPrefix(l, "/") {
				t.Errorf("%q is not absolute", l)
			}
		}
	})
}

// TestOCIArchive writes an image and reads it back as ctr would: index.json names the manifest
// under the full image name, the manifest the config and the layer, each blob matches its
// digest, and the layer holds the files, links and parent directories.
func TestOCIArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img := ImageSpec{ref: "registry.example/a/b:v1.2", entrypoint: []string{"/usr/bin/prog"},
		files: []layerFile{{name: "/usr/bin/prog", src: bin}, {name: "/bin/alias", link: "../usr/bin/prog"}, {name: "/tmp"}}}
	out := filepath.Join(dir, "img.tar")
	if err := writeOCIArchive(img, out); err != nil {
		t.Fatal(err)
	}
	blobs := readTar(t, out)
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	unmarshal(t, blobs["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != img.ref ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2" {
		t.Fatalf("index.json: %s", blobs["index.json"])
	}
	blob := func(digest string) []byte {
		t.Helper()
		data, ok := blobs["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
		if !ok {
			t.Fatalf("no blob %s", digest)
		}
		sum := sha256.Sum256(data)
		if "sha256:"+hex.EncodeToString(sum[:]) != digest {
			t.Fatalf("blob %s does not match its digest", digest)
		}
		return data
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	unmarshal(t, blob(index.Manifests[0].Digest), &manifest)
	var config struct {
		Config struct{ Entrypoint []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	unmarshal(t, blob(manifest.Config.Digest), &config)
	if !slices.Equal(config.Config.Entrypoint, img.entrypoint) || len(manifest.Layers) != 1 ||
		!slices.Equal(config.RootFS.DiffIDs, []string{manifest.Layers[0].Digest}) {
		t.Fatalf("config %+v, manifest %+v", config, manifest)
	}
	layer := tar.NewReader(strings.NewReader(string(blob(manifest.Layers[0].Digest))))
	var names []string
	for {
		h, err := layer.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "usr/bin/prog":
			if h.Mode != 0o755 || h.Size != 12 {
				t.Errorf("prog: mode %o size %d", h.Mode, h.Size)
			}
		case "bin/alias":
			if h.Typeflag != tar.TypeSymlink || h.Linkname != "../usr/bin/prog" {
				t.Errorf("alias: %+v", h)
			}
		case "tmp/":
			if h.Mode != 0o1777 {
				t.Errorf("tmp: mode %o", h.Mode)
			}
		}
		names = append(names, h.Name)
	}
	if want := []string{"bin/", "bin/alias", "tmp/", "usr/", "usr/bin/", "usr/bin/prog"}; !slices.Equal(names, want) {
		t.Errorf("layer entries %q, want %q", names, want)
	}
}

func TestOCIArchiveRefusesRelativeNames(t *testing.T) {
	err := writeOCIArchive(ImageSpec{ref: "x:1", files: []layerFile{{name: "relative"}}}, filepath.Join(t.TempDir(), "img.tar"))
	if err == nil || !strings.Contains(err.Error(), "not absolute") {
		t.Fatalf("err = %v, want a refusal of the relative name", err)
	}
}

func readTar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
	}
}

func unmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

func TestExtraImages(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        map[string][]string
		wantErr     string
	}{
		{"empty", "  ", map[string][]string{}, ""},
		{"two", "registry.k8s.io/e2e-test-images/agnhost:2.63.0=/cache/agnhost  reg:5000/x:v1=/bin/x",
			map[string][]string{"registry.k8s.io/e2e-test-images/agnhost:2.63.0": {"/cache/agnhost"}, "reg:5000/x:v1": {"/bin/x"}}, ""},
		{"with programs", "reg/glibc:2.0.0=/bin/busybox,/usr/bin/dd,/bin/sh=/usr/bin/dash",
			map[string][]string{"reg/glibc:2.0.0": {"/bin/busybox", "/usr/bin/dd", "/bin/sh=/usr/bin/dash"}}, ""},
		{"relative image path", "reg/a:1=/bin/x,bin/sh=/usr/bin/dash", nil, "not an absolute file path"},
		{"relative host path", "reg/a:1=/bin/x,/bin/sh=dash", nil, "not an absolute file path"},
		{"no equals", "registry.k8s.io/a:1", nil, "not REF=BINARY"},
		{"no ref", "=/bin/x", nil, "not REF=BINARY"},
		{"relative program", "reg/a:1=/bin/x,usr/bin/dd", nil, "not an absolute file path"},
		{"empty program", "reg/a:1=/bin/x,", nil, "not an absolute file path"},
		{"no tag", "registry.k8s.io/a=/bin/x", nil, "has no tag"},
		{"port is no tag", "reg:5000/a=/bin/x", nil, "has no tag"},
		{"empty tag", "reg/a:=/bin/x", nil, "has no tag"},
		{"relative binary", "reg/a:1=bin/x", nil, "not an absolute file path"},
		{"root as binary", "reg/a:1=/", nil, "not an absolute file path"},
		{"twice", "reg/a:1=/bin/x reg/a:1=/bin/y", nil, "named twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := extraImages(tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("extraImages(%q) = %v, %v; want an error with %q", tc.value, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("extraImages(%q) = %v, %v; want %v", tc.value, got, err, tc.want)
			}
		})
	}
}

// FuzzExtraImages: whatever the variable holds, an accepted entry has a tagged name and an
// absolute binary path.
func FuzzExtraImages(f *testing.F) {
	f.Add("registry.k8s.io/e2e-test-images/agnhost:2.63.0=/cache/agnhost")
	f.Add("a:1=/x b=c ==")
	f.Fuzz(func(t *testing.T, value string) {
		got, err := extraImages(value)
		if err != nil {
			return
		}
		for ref, bins := range got {
			if !strings.Contains(ref, ":") || len(bins) == 0 {
				t.Errorf("accepted %q=%q", ref, bins)
			}
			for _, bin := range bins {
				if !filepath.IsAbs(bin) {
					t.Errorf("accepted %q=%q", ref, bins)
				}
			}
		}
	})
}

// TestExtraImageSpecsPrograms: a PROGRAM of an extra image is in it at its own path (or the one
// named), replacing busybox's entry there, with the shared libraries it loads, beside busybox
// and the entrypoint binary.
func TestExtraImageSpecsPrograms(t *testing.T) {
	for _, tool := range []string{"busybox", "ldd"} {
		if _, err := exec.LookPath(tool); err != nil {
			SkipOrFail(t, "%s: %v", tool, err)
		}
	}
	bb, _ := exec.LookPath("busybox")
	dd, err := filepath.EvalSymlinks("/usr/bin/dd")
	if err != nil {
		SkipOrFail(t, "GNU dd: %v", err)
	}
	dash, err := filepath.EvalSymlinks("/usr/bin/dash")
	if err != nil {
		SkipOrFail(t, "dash: %v", err)
	}
	specs, err := extraImageSpecs("reg/glibc:2.0.0=" + bb + "," + dd + ",/bin/sh=" + dash)
	if err != nil || len(specs) != 1 {
		t.Fatalf("extraImageSpecs: %v, %v", specs, err)
	}
	img := specs[0]
	if !slices.Equal(img.entrypoint, []string{"/busybox"}) {
		t.Errorf("entrypoint %v, want [/busybox]", img.entrypoint)
	}
	// The last entry of a name is the one writeLayer writes.
	names := map[string]string{}
	for _, f := range img.files {
		names[f.name] = f.src
	}
	if names[dd] != dd || names["/busybox"] != bb || names["/bin/sh"] != dash {
		t.Errorf("image files: %s=%q, /busybox=%q, /bin/sh=%q; want %s, busybox and %s", dd, names[dd], names["/busybox"], names["/bin/sh"], dd, dash)
	}
	libc := false
	for name := range names {
		libc = libc || strings.Contains(path.Base(name), "libc.so")
	}
	if !libc {
		t.Errorf("no libc among the image's files: %v", names)
	}
}
