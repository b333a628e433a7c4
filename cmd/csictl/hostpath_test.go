package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/hostpath/hostpath"
	"github.com/csikit/csikit/internal/testenv"
)

// startHostpath serves the hostpath example driver (controller and node in one process, as `go
// run ./examples/hostpath` does) on a fresh unix socket, with its state in a fresh directory, and
// returns a plugin whose run/ok drive csictl against it.
func startHostpath(t *testing.T) (p *testPlugin, dir string) {
	t.Helper()
	// A short directory keeps the paths the tests derive from it short.
	dir, err := os.MkdirTemp("", "csictl-hp")
	if err != nil {
		t.Fatal(err)
	}
	hp, err := hostpath.Open(hostpath.Config{
		StateDir: filepath.Join(dir, "state"), NodeID: "node-1", CapacityBytes: 8 << 30, MaxVolumesPerNode: 8,
	}, hostpath.ModeBoth)
	if err != nil {
		t.Fatalf("hostpath.Open: %v", err)
	}
	cfg := hp.Config()
	cfg.Logger, cfg.CheckResponses = zap.NewNop(), true
	// Registered first, so it runs after the server's own cleanup has stopped serving.
	t.Cleanup(func() {
		if err := hp.Close(); err != nil {
			t.Errorf("hostpath Close: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	sock := drivertest.NewServer(t, cfg).Socket
	return &testPlugin{t: t, sock: sock, env: map[string]string{envEndpoint: "unix://" + sock}}, dir
}

// ids returns the values at path (e.g. "volume", "volume_id") of every entry of a list's JSON
// output.
func ids(t *testing.T, js string, path ...string) []string {
	t.Helper()
	var out struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatalf("list output is not JSON: %v\n%s", err, js)
	}
	var got []string
	for _, e := range out.Entries {
		var v any = e
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if s, ok := v.(string); ok {
			got = append(got, s)
		}
	}
	return got
}

// TestQuickStartAgainstHostpath runs the README's quick start ("Try it with csictl") through
// csictl's own command code against the hostpath example driver: create, publish, snapshot,
// list, delete, asserting every exit code and the JSON answers. The node steps (stage, publish,
// stats, unpublish, unstage) mount a loop device and run only as root.
func TestQuickStartAgainstHostpath(t *testing.T) {
	p, dir := startHostpath(t)
	const capArg = "mount,ext4,single-node-writer"

	info := p.ok("identity", "info", "-o", "json")
	if got := field(t, info, "name"); got != hostpath.Name {
		t.Errorf("identity info name = %q, want %q", got, hostpath.Name)
	}
	if got := field(t, p.ok("node", "info", "-o", "json"), "node_id"); got != "node-1" {
		t.Errorf("node info node_id = %q, want node-1", got)
	}

	created := p.ok("volume", "create", "pvc-1", "--cap", capArg, "--size", "1Gi", "-o", "json")
	vol := field(t, created, "volume", "volume_id")
	if got := field(t, created, "volume", "capacity_bytes"); got != "1073741824" {
		t.Errorf("capacity_bytes = %s, want 1073741824 (1Gi)", got)
	}
	// The same create again is the spec's idempotent retry: the same volume.
	if again := field(t, p.ok("volume", "create", "pvc-1", "--cap", capArg, "--size", "1Gi", "-o", "json"), "volume", "volume_id"); again != vol {
		t.Errorf("repeated create gave %s, want the same volume %s", again, vol)
	}
	p.ok("volume", "publish", vol, "--node", "node-1", "--cap", capArg, "-o", "json")

	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	t.Run("node", func(t *testing.T) {
		testenv.Root(t, "node stage formats and mounts a loop device, node publish bind-mounts it")
		p := &testPlugin{t: t, sock: p.sock, env: p.env}
		if err := os.MkdirAll(staging, 0o750); err != nil { // the CO creates the staging directory
			t.Fatal(err)
		}
		// Undo the mounts if an assertion below stops the test half-way; both are idempotent.
		t.Cleanup(func() {
			p.run("node", "unpublish", vol, "--target", target)
			p.run("node", "unstage", vol, "--staging-path", staging)
		})
		p.ok("node", "stage", vol, "--staging-path", staging, "--cap", capArg)
		p.ok("node", "publish", vol, "--staging-path", staging, "--target", target, "--cap", capArg)
		if err := os.WriteFile(filepath.Join(target, "hello"), []byte("hello"), 0o600); err != nil {
			t.Fatalf("the published volume is not writable: %v", err)
		}
		stats := p.ok("volume", "stats", vol, "--path", target, "-o", "json")
		if !strings.Contains(stats, `"usage"`) {
			t.Errorf("volume stats has no usage:\n%s", stats)
		}
		p.ok("node", "unpublish", vol, "--target", target)
		p.ok("node", "unstage", vol, "--staging-path", staging)
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("target %s still there after unpublish (stat: %v)", target, err)
		}
	})

	snapped := p.ok("snapshot", "create", "snap-1", "--source", vol, "-o", "json")
	snap := field(t, snapped, "snapshot", "snapshot_id")
	if got := field(t, snapped, "snapshot", "source_volume_id"); got != vol {
		t.Errorf("snapshot source_volume_id = %q, want %q", got, vol)
	}

	if got := ids(t, p.ok("volume", "list", "-o", "json"), "volume", "volume_id"); !slices.Equal(got, []string{vol}) {
		t.Errorf("volume list = %v, want [%s]", got, vol)
	}
	if table := p.ok("volume", "list"); !strings.Contains(table, vol) {
		t.Errorf("volume list table does not name %s:\n%s", vol, table)
	}
	if got := ids(t, p.ok("snapshot", "list", "-o", "json"), "snapshot", "snapshot_id"); !slices.Equal(got, []string{snap}) {
		t.Errorf("snapshot list = %v, want [%s]", got, snap)
	}
	if yaml := p.ok("snapshot", "list", "-o", "yaml"); !strings.Contains(yaml, "snapshot_id: "+snap) {
		t.Errorf("snapshot list -o yaml does not name %s:\n%s", snap, yaml)
	}

	// A call the plugin refuses: its code and message, exit 1.
	if r := p.run("volume", "publish", "vol-missing", "--node", "node-1", "--cap", capArg); r.code != exitFail ||
		!strings.HasPrefix(r.stderr, "Error: NOT_FOUND: ") {
		t.Errorf("publish of a missing volume: exit %d, stderr %q; want 1 and Error: NOT_FOUND: ...", r.code, r.stderr)
	}
	// A command line csictl refuses: usage, exit 2, and the plugin is not called.
	if r := p.run("volume", "create", "--size", "1Gi"); r.code != exitUsage {
		t.Errorf("create without a name: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}

	p.ok("volume", "unpublish", vol, "--node", "node-1")
	p.ok("snapshot", "delete", snap)
	p.ok("volume", "delete", vol)
	// Deleting what is gone is OK (the spec's idempotent delete).
	p.ok("volume", "delete", vol)

	if got := ids(t, p.ok("volume", "list", "-o", "json"), "volume", "volume_id"); len(got) != 0 {
		t.Errorf("volume list after delete = %v, want none", got)
	}
	if got := ids(t, p.ok("snapshot", "list", "-o", "json"), "snapshot", "snapshot_id"); len(got) != 0 {
		t.Errorf("snapshot list after delete = %v, want none", got)
	}
}

// TestKubernetesTestDriverForHostpath writes hostpath's definition for Kubernetes' storage e2e
// suite with csictl, as the README tells a driver author to, and checks that it turns on what
// hostpath advertises (snapshots, clones, group snapshots, online expansion, topology, its
// attach limit, capacity, ReadWriteOncePod) plus what the flags say, and that a bad flag is a
// usage error.
func TestKubernetesTestDriverForHostpath(t *testing.T) {
	p, dir := startHostpath(t)
	out := filepath.Join(dir, "e2e")
	stdout := p.ok("kubernetes-testdriver", out, "--block", "--single-node", "--fs-resize-from-source-not-supported",
		"--fs-type", "", "--fs-type", "ext4", "--storage-class-param", "kind=dir", "--capability", "capacity=false")
	if !strings.Contains(stdout, "e2e.test -storage.testdriver="+filepath.Join(out, "testdriver.json")) {
		t.Errorf("output does not give the e2e.test command:\n%s", stdout)
	}
	var def struct {
		StorageClass struct{ FromFile string }
		DriverInfo   struct {
			Name            string
			SupportedFsType map[string]struct{}
			Capabilities    map[string]bool
			TopologyKeys    []string
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "testdriver.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"block": true, "singleNodeVolume": true, "FSResizeFromSourceNotSupported": true, "snapshotDataSource": true,
		"pvcDataSource": true, "groupSnapshot": true, "controllerExpansion": true, "nodeExpansion": true,
		"onlineExpansion": true, "topology": true, "volumeLimits": true, "readWriteOncePod": true, "capacity": false,
		"RWX": false, "persistence": true,
	}
	for k, v := range want {
		if def.DriverInfo.Capabilities[k] != v {
			t.Errorf("capability %s = %v, want %v", k, def.DriverInfo.Capabilities[k], v)
		}
	}
	if _, ok := def.DriverInfo.SupportedFsType["ext4"]; !ok || len(def.DriverInfo.SupportedFsType) != 2 {
		t.Errorf("fs types %v", def.DriverInfo.SupportedFsType)
	}
	if len(def.DriverInfo.TopologyKeys) == 0 || def.DriverInfo.Name == "" || def.StorageClass.FromFile == "" {
		t.Errorf("definition %+v", def)
	}
	if r := p.run("kubernetes-testdriver", out, "--capability", "capacity=maybe"); r.code != exitUsage || !strings.Contains(r.stderr, "true or false") {
		t.Errorf("bad --capability: exit %d, stderr %s", r.code, r.stderr)
	}
}
