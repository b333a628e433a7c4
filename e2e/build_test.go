package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Versions of everything the suite builds from the Go module proxy. The tools/ modules pin the
// same versions with their go.sum; a change here goes with a change there.
const (
	kubernetesVersion  = "v1.36.1"
	provisionerVersion = "v6.3.0"
	attacherVersion    = "v4.12.0"
	resizerVersion     = "v2.3.0"
	snapshotterVersion = "v8.4.0"
)

// binaries are the paths of the built programs.
type binaries struct {
	apiserver, controllerManager, scheduler string
	provisioner, attacher, resizer          string
	snapshotter, snapshotController         string
	hostpath, etcd                          string
}

// tool is one program built from the module proxy.
type tool struct {
	cacheKey string // directory under the cache: name and version
	bin      string // file name
	// Either dir (a module under tools/ whose go.mod and go.sum pin the tool and all its
	// dependencies) and pkg, or install (pkg@version for go install, which uses the tool's own
	// go.mod; possible only for modules without replace directives).
	dir, pkg, install string
	ldflags           string
}

func kubeLDFlags() string {
	var b strings.Builder
	b.WriteString("-s -w")
	minor := strings.Split(strings.TrimPrefix(kubernetesVersion, "v"), ".")[1]
	// Without these the binaries call themselves v0.0.0-master and the API server's
	// compatibility checks and /version say so.
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&b, " -X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean", p, kubernetesVersion, p, p, minor, p)
	}
	return b.String()
}

func tools() []tool {
	kube := kubeLDFlags()
	// The sidecars first: they build in a minute or two each, the control plane takes longest.
	return []tool{
		{cacheKey: "external-provisioner-" + provisionerVersion, bin: "csi-provisioner", dir: "tools/provisioner",
			pkg: "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner", ldflags: "-s -w -X main.version=" + provisionerVersion},
		{cacheKey: "external-attacher-" + attacherVersion, bin: "csi-attacher", dir: "tools/attacher",
			pkg: "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher", ldflags: "-s -w -X main.version=" + attacherVersion},
		{cacheKey: "external-resizer-" + resizerVersion, bin: "csi-resizer",
			install: "github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer@" + resizerVersion, ldflags: "-s -w -X main.version=" + resizerVersion},
		{cacheKey: "external-snapshotter-" + snapshotterVersion, bin: "csi-snapshotter", dir: "tools/snapshotter",
			pkg: "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter", ldflags: "-s -w -X main.version=" + snapshotterVersion},
		{cacheKey: "external-snapshotter-" + snapshotterVersion, bin: "snapshot-controller", dir: "tools/snapshotter",
			pkg: "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller", ldflags: "-s -w -X main.version=" + snapshotterVersion},
		{cacheKey: "kubernetes-" + kubernetesVersion, bin: "kube-apiserver", dir: "tools/kube", pkg: "k8s.io/kubernetes/cmd/kube-apiserver", ldflags: kube},
		{cacheKey: "kubernetes-" + kubernetesVersion, bin: "kube-controller-manager", dir: "tools/kube", pkg: "k8s.io/kubernetes/cmd/kube-controller-manager", ldflags: kube},
		{cacheKey: "kubernetes-" + kubernetesVersion, bin: "kube-scheduler", dir: "tools/kube", pkg: "k8s.io/kubernetes/cmd/kube-scheduler", ldflags: kube},
	}
}

// cacheDir is where built tools are kept between runs: $CSIKIT_E2E_CACHE, else
// /var/cache/csikit-e2e as root, else the user's cache directory.
func cacheDir() (string, error) {
	if d := os.Getenv("CSIKIT_E2E_CACHE"); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/cache/csikit-e2e", nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %w; set CSIKIT_E2E_CACHE", err)
	}
	return filepath.Join(d, "csikit-e2e"), nil
}

// buildAll builds what is missing from the cache (minutes the first time: kube-apiserver
// alone takes several) and hostpath from this checkout (always: it is the code under test).
func buildAll(ctx context.Context, t *testing.T, work string) (*binaries, error) {
	cache, err := cacheDir()
	if err != nil {
		return nil, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		if goBin, err = exec.LookPath(filepath.Join(runtime.GOROOT(), "bin", "go")); err != nil {
			return nil, fmt.Errorf("no go command: %w", err)
		}
	}
	paths := map[string]string{}
	for _, tl := range tools() {
		out := filepath.Join(cache, tl.cacheKey, tl.bin)
		paths[tl.bin] = out
		if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
			continue
		}
		start := time.Now()
		if err := buildTool(ctx, goBin, tl, out); err != nil {
			return nil, err
		}
		t.Logf("built %s %s in %s", tl.bin, tl.cacheKey, time.Since(start).Round(time.Second))
	}
	b := &binaries{
		apiserver: paths["kube-apiserver"], controllerManager: paths["kube-controller-manager"], scheduler: paths["kube-scheduler"],
		provisioner: paths["csi-provisioner"], attacher: paths["csi-attacher"], resizer: paths["csi-resizer"],
		snapshotter: paths["csi-snapshotter"], snapshotController: paths["snapshot-controller"],
		hostpath: filepath.Join(work, "hostpath"),
	}
	start := time.Now()
	if err := run(ctx, "..", nil, goBin, "build", "-o", b.hostpath, "./examples/hostpath"); err != nil {
		return nil, fmt.Errorf("build hostpath: %w", err)
	}
	t.Logf("built hostpath from this checkout in %s", time.Since(start).Round(time.Second))
	return b, nil
}

// buildTool builds one tool into a temporary file next to out and renames it, so that an
// interrupted build never leaves a truncated binary that later runs would trust.
func buildTool(ctx context.Context, goBin string, tl tool, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if tl.install != "" {
		// go install pkg@version: outside any module, with the tool's own go.mod. GOFLAGS is
		// cleared because -mod cannot be combined with pkg@version.
		gobin, err := os.MkdirTemp(filepath.Dir(out), ".install-")
		if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		defer os.RemoveAll(gobin)
		if err := run(ctx, os.TempDir(), []string{"GOFLAGS=", "GOBIN=" + gobin, "GOWORK=off"}, goBin, "install", "-ldflags", tl.ldflags, tl.install); err != nil {
			return fmt.Errorf("build %s: %w", tl.install, err)
		}
		return os.Rename(filepath.Join(gobin, tl.bin), out)
	}
	tmp := out + ".tmp"
	defer os.Remove(tmp)
	if err := run(ctx, tl.dir, []string{"GOFLAGS=-mod=readonly", "GOWORK=off"}, goBin, "build", "-ldflags", tl.ldflags, "-o", tmp, tl.pkg); err != nil {
		return fmt.Errorf("build %s: %w", tl.pkg, err)
	}
	return os.Rename(tmp, out)
}

// run runs a command in dir and returns its output in the error when it fails.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return nil
}
