package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
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
	return startHostpathMode(t, hostpath.ModeBoth)
}

// startHostpathMode is startHostpath serving one mode: hostpath.ModeController or ModeNode as
// deploy/kubernetes/hostpath runs them apart, or ModeBoth. The mutable parameters are the
// deployed default (--mutable-parameters=iops,throughput).
func startHostpathMode(t *testing.T, mode string) (p *testPlugin, dir string) {
	t.Helper()
	// A short directory keeps the paths the tests derive from it short.
	dir, err := os.MkdirTemp("", "csictl-hp")
	if err != nil {
		t.Fatal(err)
	}
	hp, err := hostpath.Open(hostpath.Config{
		StateDir: filepath.Join(dir, "state"), NodeID: "node-1", CapacityBytes: 8 << 30, MaxVolumesPerNode: 8,
		MutableParameters: []string{"iops", "throughput"},
	}, mode)
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

// TestQuickStartAgainstHostpath runs the quick start of examples/hostpath/README.md ("Try it with
// csictl") through csictl's own command code against the hostpath example driver: create, publish,
// snapshot, list, delete, asserting every exit code and the JSON answers. The node steps (stage,
// publish, stats, unpublish, unstage) mount a loop device and run only as root.
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
// suite with csictl, as docs/proving-a-driver.md tells a driver author to, and checks that it turns on what
// hostpath advertises (snapshots, clones, group snapshots, online expansion, topology, its
// attach limit, capacity, ReadWriteOncePod) plus what the flags say, and that a bad flag is a
// usage error.
func TestKubernetesTestDriverForHostpath(t *testing.T) {
	p, dir := startHostpath(t)
	out := filepath.Join(dir, "e2e")
	stdout := p.ok("kubernetes-testdriver", out, "--block", "--single-node", "--fs-resize-from-source-not-supported",
		"--fs-type", "", "--fs-type", "ext4", "--storage-class-param", "kind=dir", "--capability", "capacity=false",
		"--max-file-size", "100Mi", "--stress-pods", "2", "--stress-restarts", "3", "--stress-snapshots", "4")
	if !strings.Contains(stdout, "e2e.test -storage.testdriver="+filepath.Join(out, "testdriver.json")) {
		t.Errorf("output does not give the e2e.test command:\n%s", stdout)
	}
	if strings.Contains(stdout, "--max-file-size") {
		t.Errorf("output warns of a file size the flags gave:\n%s", stdout)
	}
	var def struct {
		StorageClass struct{ FromFile string }
		DriverInfo   struct {
			Name            string
			SupportedFsType map[string]struct{}
			Capabilities    map[string]bool
			TopologyKeys    []string
			MaxFileSize     int64
			StressTestOptions,
			VolumeSnapshotStressTestOptions struct{ NumPods, NumRestarts, NumSnapshots int }
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
	if di := def.DriverInfo; di.MaxFileSize != 100<<20 || di.StressTestOptions.NumPods != 2 || di.StressTestOptions.NumRestarts != 3 ||
		di.VolumeSnapshotStressTestOptions.NumPods != 2 || di.VolumeSnapshotStressTestOptions.NumSnapshots != 4 {
		t.Errorf("file size and stress scale: %+v", di)
	}
	if len(def.DriverInfo.TopologyKeys) == 0 || def.DriverInfo.Name == "" || def.StorageClass.FromFile == "" {
		t.Errorf("definition %+v", def)
	}
	// Flags the suite would misread are usage errors, found before any call.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--capability", "capacity=maybe"}, "true or false"},
		{[]string{"--capability", "Capacity=false"}, `capability "Capacity": the suite has no such capability`},
		{[]string{"--min-size", "1MB"}, `MinSize "1MB": not a Kubernetes quantity`},
		{[]string{"--min-size", "2Gi", "--max-size", "1Gi"}, "MinSize 2Gi is larger than MaxSize 1Gi"},
		{[]string{"--max-file-size", "1.5Ki5"}, `MaxFileSize "1.5Ki5"`},
		{[]string{"--stress-pods", "3"}, "needs Restarts"},
	} {
		if r := p.run(append([]string{"kubernetes-testdriver", out}, tc.args...)...); r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %s; want %d and %s", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

// TestKubernetesTestDriverForSplitHostpath describes hostpath deployed as deploy/kubernetes
// runs it, a controller-only and a node-only process, through --controller-endpoint: the
// definition is the one of a process serving both, and its VolumeAttributesClass (from
// --modify-param) holds parameters hostpath accepts at CreateVolume and ControllerModifyVolume,
// while it refuses the suite's invalid class with INVALID_ARGUMENT. Endpoints of two drivers
// are refused.
func TestKubernetesTestDriverForSplitHostpath(t *testing.T) {
	flags := []string{"--block", "--single-node", "--fs-resize-from-source-not-supported", "--fs-type", "", "--fs-group",
		"--inline-volume", "", "--modify-param", "iops=3000", "--modify-param", "throughput=125"}
	both, bothDir := startHostpathMode(t, hostpath.ModeBoth)
	ctrl, _ := startHostpathMode(t, hostpath.ModeController)
	node, nodeDir := startHostpathMode(t, hostpath.ModeNode)

	// definition reads the definition csictl wrote into out, its class files by their kind.
	type classRef struct {
		FromName bool
		FromFile string
	}
	type definition struct {
		StorageClass, SnapshotClass, GroupSnapshotClass, VolumeAttributesClass classRef
		InlineVolumes                                                          []map[string]any
		DriverInfo                                                             map[string]any
	}
	read := func(out string) (definition, map[string]map[string]any) {
		t.Helper()
		var def definition
		readFile := func(path string, v any) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		readFile(filepath.Join(out, "testdriver.json"), &def)
		classes := map[string]map[string]any{}
		for _, ref := range []classRef{def.StorageClass, def.SnapshotClass, def.GroupSnapshotClass, def.VolumeAttributesClass} {
			if ref.FromFile != "" {
				var obj map[string]any
				readFile(ref.FromFile, &obj)
				classes[obj["kind"].(string)] = obj
			}
		}
		return def, classes
	}

	bothOut := filepath.Join(bothDir, "e2e")
	both.ok(append([]string{"kubernetes-testdriver", bothOut}, flags...)...)
	wantDef, wantClasses := read(bothOut)

	out := filepath.Join(nodeDir, "e2e")
	stdout := node.ok(append([]string{"kubernetes-testdriver", out, "--controller-endpoint", "unix://" + ctrl.sock}, flags...)...)
	if !strings.Contains(stdout, filepath.Join(out, "testdriver.json")) {
		t.Errorf("output does not name the definition:\n%s", stdout)
	}
	def, classes := read(out)
	if !reflect.DeepEqual(def.DriverInfo, wantDef.DriverInfo) || !reflect.DeepEqual(classes, wantClasses) ||
		!reflect.DeepEqual(def.InlineVolumes, wantDef.InlineVolumes) {
		t.Errorf("split hostpath described as\n%+v\n%v\nwant as one process:\n%+v\n%v", def, classes, wantDef, wantClasses)
	}
	vac := classes["VolumeAttributesClass"]
	if def.VolumeAttributesClass.FromFile == "" || vac["apiVersion"] != "storage.k8s.io/v1" || vac["driverName"] != hostpath.Name ||
		!reflect.DeepEqual(vac["parameters"], map[string]any{"iops": "3000", "throughput": "125"}) {
		t.Fatalf("VolumeAttributesClass %+v: %v, want storage.k8s.io/v1 for %s with iops 3000 and throughput 125",
			def.VolumeAttributesClass, vac, hostpath.Name)
	}

	// What the volume-modify specs do with that class, against the controller: create with it
	// (csi-provisioner passes it as mutable_parameters), modify to it, and to the suite's
	// invalid class (MakeInvalidVAC), which must fail as an infeasible request.
	var mutable []string
	params := vac["parameters"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(params)) {
		mutable = append(mutable, "--mutable", k+"="+params[k].(string))
	}
	vol := field(t, ctrl.ok(append([]string{"volume", "create", "pvc-vac", "--cap", "mount,single-node-writer", "--size", "1Gi", "-o", "json"},
		mutable...)...), "volume", "volume_id")
	plain := field(t, ctrl.ok("volume", "create", "pvc-plain", "--cap", "mount,single-node-writer", "--size", "1Gi", "-o", "json"),
		"volume", "volume_id")
	ctrl.ok(append([]string{"volume", "modify", plain}, mutable...)...)
	ctrl.ok(append([]string{"volume", "modify", vol}, mutable...)...)
	if r := ctrl.run("volume", "modify", plain, "--mutable", "xxInvalidParameterKey=xxInvalidParameterValue"); r.code != exitFail ||
		!strings.HasPrefix(r.stderr, "Error: INVALID_ARGUMENT: ") {
		t.Errorf("modify to the suite's invalid class: exit %d, stderr %q; want 1 and INVALID_ARGUMENT", r.code, r.stderr)
	}

	// A controller endpoint of another driver (the in-memory one) is refused, naming both.
	other := startPlugin(t)
	r := node.run(append([]string{"kubernetes-testdriver", filepath.Join(nodeDir, "e2e-other"), "--controller-endpoint", "unix://" + other.sock},
		flags...)...)
	if r.code != exitFail || !strings.Contains(r.stderr, `"mem.csikit.dev"`) || !strings.Contains(r.stderr, `"`+hostpath.Name+`"`) {
		t.Errorf("endpoints of two drivers: exit %d, stderr %q; want 1 and both names", r.code, r.stderr)
	}
	// The node endpoint alone still cannot describe the driver, and says how to.
	if r := node.run("kubernetes-testdriver", filepath.Join(nodeDir, "e2e-node")); r.code != exitFail || !strings.Contains(r.stderr, "ControllerGetCapabilities") {
		t.Errorf("node endpoint alone: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := node.run("kubernetes-testdriver", out, "--controller-endpoint", "tcp://"); r.code != exitUsage {
		t.Errorf("bad --controller-endpoint: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}
