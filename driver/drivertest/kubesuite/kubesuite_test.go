package kubesuite_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
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
			want: caps("fsGroup", "volumeMountGroup", "snapshotDataSource", "pvcDataSource", "groupSnapshot", "snapshotMetadata",
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
			want: caps("snapshotDataSource", "pvcDataSource", "groupSnapshot", "snapshotMetadata",
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
