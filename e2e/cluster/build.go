package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	// COSIVersion is sigs.k8s.io/container-object-storage-interface (controller and sidecar
	// logic, client and proto modules), built in tools/cosi with a runner of ours.
	COSIVersion = "v0.2.2"
	// corednsVersion is github.com/coredns/coredns, the kubelet cluster's DNS (the newest
	// release when this was written; its go.mod asks for Go 1.26, which builds it).
	corednsVersion = "v1.15.0"
)

// Binaries are the paths of the built programs. The exported ones are those the lifecycle tests
// start or replace themselves.
type Binaries struct {
	apiserver, controllerManager, scheduler string
	Provisioner, Attacher, Resizer          string // the external-* CSI sidecars
	Snapshotter, SnapshotController         string // external-snapshotter's sidecar and controller
	Hostpath, Etcd                          string // the example driver and etcd
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
	// stale, when set, is the prefix of the cache directories of earlier builds of this tool,
	// removed once a new one is built (keys that hash our own sources change with every edit).
	stale string
	// static builds with CGO_ENABLED=0: the binary goes into an image without a libc.
	static bool
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

func tools() ([]tool, error) {
	kube := kubeLDFlags()
	// tools/cosi holds code of ours (the runner and the two mains), so its cache key is the
	// hash of its sources as well as the upstream version: a change rebuilds it.
	cosiSrc, err := sourceHash("tools/cosi")
	if err != nil {
		return nil, err
	}
	cosiKey := "cosi-" + COSIVersion + "-" + cosiSrc
	nodeSrc, err := sourceHash("tools/node")
	if err != nil {
		return nil, err
	}
	nodeToolsKey := "node-tools-" + nodeSrc
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
		{cacheKey: "kubernetes-" + kubernetesVersion, bin: "kubelet", dir: "tools/kube", pkg: "k8s.io/kubernetes/cmd/kubelet", ldflags: kube},
		{cacheKey: "kubernetes-" + kubernetesVersion, bin: "kube-proxy", dir: "tools/kube", pkg: "k8s.io/kubernetes/cmd/kube-proxy", ldflags: kube},
		// CoreDNS with its own go.mod (no replace directives) and every plugin of its release;
		// static: it runs in an image of its own.
		{cacheKey: "coredns-" + corednsVersion, bin: "coredns", install: "github.com/coredns/coredns@" + corednsVersion,
			ldflags: "-s -w -X github.com/coredns/coredns/coremain.GitCommit=" + corednsVersion, static: true},
		// The node-side stand-ins of tools/node (registrar, livenessprobe, pause) go into images:
		// static, so the images need no libc.
		{cacheKey: nodeToolsKey, bin: "registrar", dir: "tools/node", pkg: "github.com/csikit/csikit/e2e/tools/node/cmd/registrar", ldflags: "-s -w", stale: "node-tools-", static: true},
		{cacheKey: nodeToolsKey, bin: "livenessprobe", dir: "tools/node", pkg: "github.com/csikit/csikit/e2e/tools/node/cmd/livenessprobe", ldflags: "-s -w", stale: "node-tools-", static: true},
		{cacheKey: nodeToolsKey, bin: "pause", dir: "tools/node", pkg: "github.com/csikit/csikit/e2e/tools/node/cmd/pause", ldflags: "-s -w", stale: "node-tools-", static: true},
		{cacheKey: nodeToolsKey, bin: "bucketclient", dir: "tools/node", pkg: "github.com/csikit/csikit/e2e/tools/node/cmd/bucketclient", ldflags: "-s -w", stale: "node-tools-", static: true},
		{cacheKey: cosiKey, bin: "cosi-controller", dir: "tools/cosi", pkg: "github.com/csikit/csikit/e2e/tools/cosi/cmd/cosi-controller", ldflags: "-s -w", stale: "cosi-"},
		{cacheKey: cosiKey, bin: "cosi-sidecar", dir: "tools/cosi", pkg: "github.com/csikit/csikit/e2e/tools/cosi/cmd/cosi-sidecar", ldflags: "-s -w", stale: "cosi-"},
	}, nil
}

// sourceHash is a short hash of the Go sources and module files under dir (tests excluded:
// they are not in the binaries).
func sourceHash(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := d.Name()
		if !(strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")) && name != "go.mod" && name != "go.sum" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(path), len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", dir, err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
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

// goCommand finds the go command that runs the tests.
func goCommand() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if goBin, err = exec.LookPath(filepath.Join(runtime.GOROOT(), "bin", "go")); err != nil {
			return "", fmt.Errorf("no go command: %w", err)
		}
	}
	return goBin, nil
}

// BuildTools builds the named tools that are missing from the cache (minutes the first time:
// kube-apiserver alone takes several) and returns the path of each by name.
func BuildTools(ctx context.Context, t testing.TB, names ...string) (map[string]string, error) {
	cache, err := cacheDir()
	if err != nil {
		return nil, err
	}
	goBin, err := goCommand()
	if err != nil {
		return nil, err
	}
	all, err := tools()
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, tl := range all {
		if !slices.Contains(names, tl.bin) {
			continue
		}
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
		if tl.stale != "" {
			pruneStale(t, cache, tl.stale, tl.cacheKey)
		}
	}
	for _, n := range names {
		if _, ok := paths[n]; !ok {
			return nil, fmt.Errorf("no tool %q", n)
		}
	}
	return paths, nil
}

// pruneStale removes the cache directories named prefix* other than keep: builds of sources
// that have changed since.
func pruneStale(t testing.TB, cache, prefix, keep string) {
	old, _ := filepath.Glob(filepath.Join(cache, prefix+"*"))
	for _, d := range old {
		if filepath.Base(d) == keep {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			t.Logf("remove stale %s: %v", d, err)
			continue
		}
		t.Logf("removed stale %s", d)
	}
}

// BuildExample builds an example driver from this checkout into dir (always: it is the code
// under test).
func BuildExample(ctx context.Context, t testing.TB, dir, name string) (string, error) {
	goBin, err := goCommand()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	start := time.Now()
	if err := run(ctx, "..", nil, goBin, "build", "-o", out, "./examples/"+name); err != nil {
		return "", fmt.Errorf("build %s: %w", name, err)
	}
	t.Logf("built %s from this checkout in %s", name, time.Since(start).Round(time.Second))
	return out, nil
}

// BuildAll builds what the CSI lifecycle needs: the control plane and the CSI sidecars (from
// the cache when there) and hostpath.
func BuildAll(ctx context.Context, t testing.TB, work string) (*Binaries, error) {
	paths, err := BuildTools(ctx, t, "csi-provisioner", "csi-attacher", "csi-resizer", "csi-snapshotter",
		"snapshot-controller", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
	if err != nil {
		return nil, err
	}
	b := &Binaries{
		apiserver: paths["kube-apiserver"], controllerManager: paths["kube-controller-manager"], scheduler: paths["kube-scheduler"],
		Provisioner: paths["csi-provisioner"], Attacher: paths["csi-attacher"], Resizer: paths["csi-resizer"],
		Snapshotter: paths["csi-snapshotter"], SnapshotController: paths["snapshot-controller"],
	}
	if b.Hostpath, err = BuildExample(ctx, t, work, "hostpath"); err != nil {
		return nil, err
	}
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
		env := []string{"GOFLAGS=", "GOBIN=" + gobin, "GOWORK=off"}
		if tl.static {
			env = append(env, "CGO_ENABLED=0")
		}
		if err := run(ctx, os.TempDir(), env, goBin, "install", "-ldflags", tl.ldflags, tl.install); err != nil {
			return fmt.Errorf("build %s: %w", tl.install, err)
		}
		return os.Rename(filepath.Join(gobin, tl.bin), out)
	}
	tmp := out + ".tmp"
	defer os.Remove(tmp)
	env := []string{"GOFLAGS=-mod=readonly", "GOWORK=off"}
	if tl.static {
		env = append(env, "CGO_ENABLED=0")
	}
	if err := run(ctx, tl.dir, env, goBin, "build", "-ldflags", tl.ldflags, "-o", tmp, tl.pkg); err != nil {
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
