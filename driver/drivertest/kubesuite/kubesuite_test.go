package kubesuite_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/drivertest/kubesuite"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// TestKubernetesDefinitionFollowsTheDriver: the capabilities of the generated definition are
// what the served driver advertises, each one switched by its own CSI capability, with the
// options adding what CSI does not tell.
func TestKubernetesDefinitionFollowsTheDriver(t *testing.T) {
	// always are on for every csikit driver; the rest of every case is listed in full.
	always := map[string]bool{"persistence": true, "exec": true, "multipods": true, "multiplePVsSameID": true, "seLinuxMount": false}
	caps := func(on ...string) map[string]bool {
		m := maps.Clone(always)
		for _, k := range []string{"block", "fsGroup", "volumeMountGroup", "snapshotDataSource", "pvcDataSource", "groupSnapshot",
			"snapshotMetadata", "RWX", "capReadOnlyMany", "controllerExpansion", "nodeExpansion", "onlineExpansion",
			"offlineExpansion", "volumeLimits", "singleNodeVolume", "topology", "capacity", "readWriteOncePod",
			"FSResizeFromSourceNotSupported"} {
			m[k] = false
		}
		for _, k := range on {
			m[k] = true
		}
		return m
	}
	onlyCreate := func(cfg plugin.Config) plugin.Config {
		cfg.Overrides = plugin.CapabilityOverrides{
			Controller: []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME},
			Node:       []csi.NodeServiceCapability_RPC_Type{},
			Plugin:     []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE},
		}
		cfg.Features = driver.Features{Expansion: driver.ExpansionNone}
		cfg.GroupController, cfg.SnapshotMetadata, cfg.VolumeGroups = nil, nil, nil
		return cfg
	}
	cases := []struct {
		name     string
		cfg      plugin.Config
		opts     kubesuite.Options
		want     map[string]bool
		topology []string
	}{
		{
			name: "only create and delete",
			cfg:  onlyCreate(fullConfig(memdriver.New(memdriver.Options{}))),
			want: caps(),
		},
		{
			name: "only create and delete, with what CSI does not tell",
			cfg:  onlyCreate(fullConfig(memdriver.New(memdriver.Options{}))),
			opts: kubesuite.Options{Block: true, FSGroup: true, NoExec: true, MultiNode: true, ReadOnlyMany: true,
				SingleNodeVolumes: true, FSResizeFromSourceNotSupported: true},
			want: func() map[string]bool {
				m := caps("block", "fsGroup", "RWX", "capReadOnlyMany", "singleNodeVolume", "FSResizeFromSourceNotSupported")
				m["exec"] = false
				return m
			}(),
		},
		{
			name: "everything the in-memory driver does, with a limit and two topology keys",
			cfg: func() plugin.Config {
				cfg := fullConfig(memdriver.New(memdriver.Options{MaxVolumesPerNode: 8, MutableParameters: []string{"iops"},
					Topology: driver.Topology{"topology.mem.csikit.dev/zone": "z1", "topology.mem.csikit.dev/rack": "r1"}}))
				cfg.Features.VolumeMountGroup = true
				return cfg
			}(),
			// snapshotMetadata stays off though the driver serves it: e2e.test v1.36.1 cannot test
			// it with an external definition.
			want: caps("fsGroup", "volumeMountGroup", "snapshotDataSource", "pvcDataSource", "groupSnapshot",
				"controllerExpansion", "nodeExpansion", "onlineExpansion", "offlineExpansion", "volumeLimits", "topology",
				"capacity", "readWriteOncePod"),
			topology: []string{"topology.mem.csikit.dev/rack", "topology.mem.csikit.dev/zone"},
		},
		{
			name: "offline expansion only, and the deployment turns capacity off",
			cfg: func() plugin.Config {
				cfg := fullConfig(memdriver.New(memdriver.Options{Topology: driver.Topology{"k": "v"}}))
				cfg.Features.Expansion = driver.ExpansionOffline
				return cfg
			}(),
			opts: kubesuite.Options{Capabilities: map[string]bool{"capacity": false}},
			want: caps("snapshotDataSource", "pvcDataSource", "groupSnapshot",
				"controllerExpansion", "nodeExpansion", "offlineExpansion", "topology", "readWriteOncePod"),
			topology: []string{"k"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := drivertest.NewServer(t, tc.cfg)
			d, err := kubesuite.Describe(context.Background(), srv.Conn, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got, ok := d.DriverInfo.Capabilities[k]; !ok || got != v {
					t.Errorf("capability %s = %v (present %v), want %v", k, got, ok, v)
				}
			}
			for k := range d.DriverInfo.Capabilities {
				if _, ok := tc.want[k]; !ok {
					t.Errorf("capability %s not expected", k)
				}
			}
			if strings.Join(d.DriverInfo.TopologyKeys, ",") != strings.Join(tc.topology, ",") {
				t.Errorf("topology keys %v, want %v", d.DriverInfo.TopologyKeys, tc.topology)
			}
			// A driver with topology or capacity is tested as it is deployed: WaitForFirstConsumer.
			wantFile := tc.want["topology"] || tc.want["capacity"]
			if got := d.StorageClass.FromFile != ""; got != wantFile || d.StorageClass.FromName == wantFile {
				t.Errorf("storage class %+v, want from a file (WaitForFirstConsumer): %v", d.StorageClass, wantFile)
			}
			if d.DriverInfo.Name != tc.cfg.Name {
				t.Errorf("name %q, want %q", d.DriverInfo.Name, tc.cfg.Name)
			}
		})
	}
}

// TestKubernetesDefinitionFiles: classes with parameters are written beside the definition and
// named by absolute path; classes without are FromName; the files decode as the suite spells
// them (case-sensitive field names).
func TestKubernetesDefinitionFiles(t *testing.T) {
	srv := drivertest.NewServer(t, fullConfig(newMem()))
	d, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{
		StorageClassParameters: map[string]string{"kind": "file"},
		ModifyParameters:       map[string]string{"iops": "3000"},
		FSTypes:                []string{"", "ext4"},
		MinSize:                "2Mi",
		InlineVolumes:          []kubesuite.InlineVolume{{Attributes: map[string]string{"size": "1Mi"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, err := d.WriteFiles(filepath.Join(dir, "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		StorageClass, SnapshotClass, GroupSnapshotClass, VolumeAttributesClass struct {
			FromName bool
			FromFile string
		}
		InlineVolumes []struct{ Attributes map[string]string }
		DriverInfo    struct {
			Name               string
			SupportedSizeRange struct{ Min, Max string }
			SupportedFsType    map[string]struct{}
			Capabilities       map[string]bool
		}
	}
	readJSON(t, path, &def)
	if def.SnapshotClass.FromName != true || def.GroupSnapshotClass.FromName != true {
		t.Errorf("snapshot classes %+v %+v, want FromName", def.SnapshotClass, def.GroupSnapshotClass)
	}
	if def.DriverInfo.SupportedSizeRange.Min != "2Mi" || len(def.DriverInfo.SupportedFsType) != 2 ||
		len(def.InlineVolumes) != 1 || def.InlineVolumes[0].Attributes["size"] != "1Mi" || !def.DriverInfo.Capabilities["persistence"] {
		t.Errorf("definition %+v", def)
	}
	for _, c := range []struct {
		ref        string
		kind, name string
	}{{def.StorageClass.FromFile, "StorageClass", "provisioner"}, {def.VolumeAttributesClass.FromFile, "VolumeAttributesClass", "driverName"}} {
		if !filepath.IsAbs(c.ref) || filepath.Dir(c.ref) != filepath.Join(dir, "e2e") {
			t.Errorf("%s file %q, want an absolute path beside the definition", c.kind, c.ref)
			continue
		}
		var obj map[string]any
		readJSON(t, c.ref, &obj)
		if obj["kind"] != c.kind || obj[c.name] != "mem.csikit.dev" || obj["parameters"] == nil {
			t.Errorf("%s: %v", c.kind, obj)
		}
		if c.kind == "StorageClass" && obj["volumeBindingMode"] != "WaitForFirstConsumer" {
			t.Errorf("StorageClass of a driver with topology: %v, want WaitForFirstConsumer", obj)
		}
	}
}

// TestKubernetesDefinitionRefuses a driver the suite cannot test: one that provisions nothing
// (a node plugin alone).
func TestKubernetesDefinitionRefuses(t *testing.T) {
	cfg := plugin.Config{Name: "node-only.csikit.dev", VendorVersion: "1", Node: memdriver.New(memdriver.Options{})}
	srv := drivertest.NewServer(t, cfg)
	if _, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{}); err == nil ||
		!strings.Contains(err.Error(), "CREATE_DELETE_VOLUME") {
		t.Fatalf("got %v, want a refusal naming CREATE_DELETE_VOLUME", err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// fullConfig is every memdriver backend and feature, as drivertest's own tests use it.
func fullConfig(backend *memdriver.Driver) plugin.Config {
	return plugin.Config{
		Name:             "mem.csikit.dev",
		VendorVersion:    "1.0.0",
		Controller:       backend,
		Node:             backend,
		GroupController:  backend,
		SnapshotMetadata: backend,
		VolumeGroups:     &plugin.VolumeGroupConfig{Controller: backend},
		Features: driver.Features{
			CloneVolume:                    true,
			PublishReadonly:                true,
			ListVolumesPublishedNodes:      true,
			SingleNodeMultiWriter:          true,
			VolumeAccessibilityConstraints: true,
		},
	}
}

func newMem() *memdriver.Driver {
	return memdriver.New(memdriver.Options{MutableParameters: []string{"iops"}, Topology: driver.Topology{"topology.mem.csikit.dev/zone": "zone-1"}})
}

// TestImmediateBindingKeepsTheSuitesClass: with ImmediateBinding, a driver with topology is
// tested with the class the suite makes itself (Immediate).
func TestImmediateBindingKeepsTheSuitesClass(t *testing.T) {
	srv := drivertest.NewServer(t, fullConfig(newMem()))
	d, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{ImmediateBinding: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.StorageClass.FromName || d.StorageClass.FromFile != "" {
		t.Errorf("storage class %+v, want FromName", d.StorageClass)
	}
}

// splitConfigs are fullConfig's driver as two processes: the controller services alone and the
// node service alone, each as a plugin.Config serves it (the node process makes no controller
// promises).
func splitConfigs(name string, backend *memdriver.Driver) (controller, node plugin.Config) {
	controller = fullConfig(backend)
	controller.Name, controller.Node = name, nil
	node = plugin.Config{Name: name, VendorVersion: "1.0.0", Node: backend,
		Features: driver.Features{VolumeAccessibilityConstraints: true, SingleNodeMultiWriter: true}}
	return controller, node
}

// TestDescribeSplitDeployment: a driver whose controller and node run apart is described from
// the two endpoints exactly as from one process serving both; endpoints of two different drivers,
// or swapped, are refused with an error naming the endpoint at fault.
func TestDescribeSplitDeployment(t *testing.T) {
	opts := kubesuite.Options{Block: true, ModifyParameters: map[string]string{"iops": "3000"}}
	backend := func() *memdriver.Driver {
		return memdriver.New(memdriver.Options{MaxVolumesPerNode: 4, MutableParameters: []string{"iops"},
			Topology: driver.Topology{"topology.mem.csikit.dev/zone": "zone-1"}})
	}
	together, err := kubesuite.Describe(context.Background(), drivertest.NewServer(t, fullConfig(backend())).Conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctrlCfg, nodeCfg := splitConfigs("mem.csikit.dev", backend())
	ctrl, node := drivertest.NewServer(t, ctrlCfg), drivertest.NewServer(t, nodeCfg)
	_, otherCfg := splitConfigs("other.csikit.dev", backend())
	other := drivertest.NewServer(t, otherCfg)

	split, err := kubesuite.DescribeSplit(context.Background(), ctrl.Conn, node.Conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(split, together) {
		t.Errorf("split deployment described as\n%+v\nwant as one process:\n%+v", split, together)
	}
	// The node's own answers are in it (not only the controller's): limit and topology keys.
	if !split.DriverInfo.Capabilities["volumeLimits"] || !split.DriverInfo.Capabilities["nodeExpansion"] ||
		strings.Join(split.DriverInfo.TopologyKeys, ",") != "topology.mem.csikit.dev/zone" {
		t.Errorf("split definition lacks the node's answers: %+v", split.DriverInfo)
	}

	for _, tc := range []struct {
		name             string
		controller, node *drivertest.Server
		want             []string
	}{
		{"two drivers", ctrl, other, []string{`"mem.csikit.dev"`, `"other.csikit.dev"`, "not one driver"}},
		{"node endpoint as the controller's", node, node, []string{"the controller endpoint", "CREATE_DELETE_VOLUME"}},
		{"controller endpoint as the node's", ctrl, ctrl, []string{"the node endpoint", "NodeGetCapabilities"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kubesuite.DescribeSplit(context.Background(), tc.controller.Conn, tc.node.Conn, opts)
			if err == nil {
				t.Fatal("described, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %s", err, w)
				}
			}
		})
	}

	// One endpoint serving the controller alone: the error points at the split form.
	if _, err := kubesuite.Describe(context.Background(), ctrl.Conn, opts); err == nil || !strings.Contains(err.Error(), "DescribeSplit") {
		t.Errorf("Describe of a controller alone: %v, want an error naming DescribeSplit", err)
	}
}

// TestModifyParametersNeedModifyVolume: a VolumeAttributesClass for a driver that does not
// advertise MODIFY_VOLUME is refused, not written for every volume-modify spec to fail on.
func TestModifyParametersNeedModifyVolume(t *testing.T) {
	cfg := fullConfig(newMem())
	cfg.Overrides.Controller = []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}
	// Without publishing, the promises about publishing cannot be kept.
	cfg.Features.PublishReadonly, cfg.Features.ListVolumesPublishedNodes = false, false
	srv := drivertest.NewServer(t, cfg)
	_, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{ModifyParameters: map[string]string{"iops": "1"}})
	if err == nil || !strings.Contains(err.Error(), "MODIFY_VOLUME") {
		t.Fatalf("got %v, want a refusal naming MODIFY_VOLUME", err)
	}
	// Without parameters the same driver is described, without a class.
	d, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.VolumeAttributesClass != (kubesuite.ClassRef{}) {
		t.Errorf("VolumeAttributesClass %+v, want none", d.VolumeAttributesClass)
	}
}

// TestOptionsValidate: what the suite would ignore or misread is refused before any call, each
// mistake named; sound options pass.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    kubesuite.Options
		want string // "" = valid
	}{
		{"zero", kubesuite.Options{}, ""},
		{"everything sound", kubesuite.Options{Capabilities: map[string]bool{"capacity": false, "snapshotMetadata": true},
			Timeouts: map[string]string{"PodStart": "10m", "ClaimProvision": "90s"}, MinSize: "1Mi", MaxSize: "10Gi",
			ModifyParameters: map[string]string{"iops": "3000"}}, ""},
		{"equal sizes", kubesuite.Options{MinSize: "1Gi", MaxSize: "1024Mi"}, ""},
		{"decimal and exponent sizes", kubesuite.Options{MinSize: "1e6", MaxSize: "1.5G"}, ""},
		{"misspelt capability", kubesuite.Options{Capabilities: map[string]bool{"Capacity": false}}, `capability "Capacity"`},
		{"unknown timeout", kubesuite.Options{Timeouts: map[string]string{"PodStartup": "1m"}}, `timeout "PodStartup"`},
		{"timeout not a duration", kubesuite.Options{Timeouts: map[string]string{"PodStart": "10"}}, `timeout PodStart="10"`},
		{"negative timeout", kubesuite.Options{Timeouts: map[string]string{"PodStart": "-1m"}}, `timeout PodStart="-1m"`},
		{"size not a quantity", kubesuite.Options{MinSize: "1MB"}, `MinSize "1MB"`},
		{"size zero", kubesuite.Options{MaxSize: "0"}, `MaxSize "0": a size must be positive`},
		{"min above max", kubesuite.Options{MinSize: "2Gi", MaxSize: "1Gi"}, "MinSize 2Gi is larger than MaxSize 1Gi"},
		{"nameless modify parameter", kubesuite.Options{ModifyParameters: map[string]string{"": "1"}}, "needs a name"},
		{"file size", kubesuite.Options{MaxFileSize: "100Mi", Stress: kubesuite.Stress{Pods: 1, Restarts: 1}}, ""},
		{"fractional file size", kubesuite.Options{MaxFileSize: "1.5"}, `MaxFileSize "1.5": a file size must be a positive whole number of bytes`},
		{"zero file size", kubesuite.Options{MaxFileSize: "0"}, `MaxFileSize "0"`},
		{"file size not a quantity", kubesuite.Options{MaxFileSize: "1GB"}, `MaxFileSize "1GB": not a Kubernetes quantity`},
		{"file size beyond int64", kubesuite.Options{MaxFileSize: "16Ei"}, `MaxFileSize "16Ei"`},
		{"negative stress", kubesuite.Options{Stress: kubesuite.Stress{Pods: -1}}, "cannot be negative"},
		{"stress counts without pods", kubesuite.Options{Stress: kubesuite.Stress{Snapshots: 2}}, "need Pods"},
		{"stress pods without restarts", kubesuite.Options{Stress: kubesuite.Stress{Pods: 2, Snapshots: 2}}, "needs Restarts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %s", err, tc.want)
			}
		})
	}
	// Describe validates before it calls the driver: a nil connection is never used.
	if _, err := kubesuite.Describe(context.Background(), nil, kubesuite.Options{MinSize: "x"}); err == nil {
		t.Error("Describe accepted an invalid MinSize")
	}
}
