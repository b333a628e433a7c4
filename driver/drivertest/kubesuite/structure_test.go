package kubesuite_test

import (
	"context"
	"encoding/json"
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

// e2eDefinition is e2e.test's driverDefinition of k8s.io/kubernetes v1.36.1
// (test/e2e/storage/external/external.go), field for field with the types of its DriverInfo
// (test/e2e/storage/framework/testdriver.go), copied by hand: what the generated file must
// decode into. TestTags and PerformanceTestOptions are left out: Describe writes neither.
type e2eDefinition struct {
	DriverInfo   e2eDriverInfo
	StorageClass struct {
		FromName              bool
		FromFile              string
		FromExistingClassName string
	}
	VolumeAttributesClass struct {
		FromFile              string
		FromExistingClassName string
	}
	SnapshotClass, GroupSnapshotClass struct {
		FromName              bool
		FromFile              string
		FromExistingClassName string
	}
	InlineVolumes []struct {
		Attributes map[string]string
		Shared     bool
		ReadOnly   bool
	}
	ClientNodeName string
	NodeSelectors  map[string]string
	Timeouts       map[string]string
}

type e2eDriverInfo struct {
	Name               string
	InTreePluginName   string
	MaxFileSize        int64
	SupportedSizeRange struct {
		Max string
		Min string
	}
	SupportedFsType                 map[string]struct{}
	SupportedMountOption            map[string]struct{}
	RequiredMountOption             map[string]struct{}
	Capabilities                    map[string]bool
	RequiredAccessModes             []string
	TopologyKeys                    []string
	NumAllowedTopologies            int
	StressTestOptions               *struct{ NumPods, NumRestarts int }
	VolumeSnapshotStressTestOptions *struct{ NumPods, NumSnapshots int }
	VolumeModifyStressTestOptions   *struct{ NumPods int }
	// VolumeGroupSnapshotStressTestOptions as the suite spells it.
	VolumeGroupSnapshotStressTestOptions *struct{ NumPods, NumSnapshots int }
}

// checkKeys fails for every key of the JSON value v that the Go type typ has no field of that
// exact name for: e2e.test decodes case-sensitively and ignores unknown keys, so a misspelt
// key would silently be lost.
func checkKeys(t *testing.T, path string, v any, typ reflect.Type) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch val := v.(type) {
	case map[string]any:
		if typ.Kind() == reflect.Map {
			for k, e := range val {
				checkKeys(t, path+"."+k, e, typ.Elem())
			}
			return
		}
		if typ.Kind() != reflect.Struct {
			t.Errorf("%s: an object where e2e.test has %s", path, typ)
			return
		}
		for k, e := range val {
			f, ok := typ.FieldByName(k)
			if !ok || f.Name != k {
				t.Errorf("%s.%s: e2e.test v1.36.1 has no such field", path, k)
				continue
			}
			checkKeys(t, path+"."+k, e, f.Type)
		}
	case []any:
		for i, e := range val {
			checkKeys(t, path+"["+string(rune('0'+i%10))+"]", e, typ.Elem())
		}
	}
}

// TestDefinitionHasTheSuitesStructure: a definition with every field Describe writes decodes
// into e2e.test v1.36.1's driverDefinition with no key it lacks, and with the values asked
// for, including the volumeIO file size and the stress scales.
func TestDefinitionHasTheSuitesStructure(t *testing.T) {
	srv := drivertest.NewServer(t, fullConfig(newMem()))
	d, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{
		StorageClassParameters:  map[string]string{"kind": "file"},
		SnapshotClassParameters: map[string]string{"a": "b"},
		ModifyParameters:        map[string]string{"iops": "3000"},
		FSTypes:                 []string{"", "ext4"},
		MinSize:                 "1Mi",
		MaxSize:                 "1Gi",
		MaxFileSize:             "100Mi",
		Stress:                  kubesuite.Stress{Pods: 2, Restarts: 3, Snapshots: 4},
		InlineVolumes:           []kubesuite.InlineVolume{{Attributes: map[string]string{"size": "1Mi"}, Shared: true, ReadOnly: true}},
		Timeouts:                map[string]string{"PodStart": "10m"},
		ImmediateBinding:        true, // volume-modify-stress is written only for Immediate classes
	})
	if err != nil {
		t.Fatal(err)
	}
	path, err := d.WriteFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	checkKeys(t, "definition", raw, reflect.TypeFor[e2eDefinition]())
	var def e2eDefinition
	if err := json.Unmarshal(b, &def); err != nil {
		t.Fatalf("does not decode into e2e.test's types: %v", err)
	}
	di := def.DriverInfo
	if di.MaxFileSize != 100<<20 {
		t.Errorf("MaxFileSize %d, want %d", di.MaxFileSize, 100<<20)
	}
	if di.StressTestOptions == nil || *di.StressTestOptions != (struct{ NumPods, NumRestarts int }{2, 3}) ||
		di.VolumeSnapshotStressTestOptions == nil || *di.VolumeSnapshotStressTestOptions != (struct{ NumPods, NumSnapshots int }{2, 4}) ||
		di.VolumeGroupSnapshotStressTestOptions == nil || *di.VolumeGroupSnapshotStressTestOptions != (struct{ NumPods, NumSnapshots int }{2, 4}) ||
		di.VolumeModifyStressTestOptions == nil || di.VolumeModifyStressTestOptions.NumPods != 2 {
		t.Errorf("stress options %s", b)
	}
	if def.VolumeAttributesClass.FromFile == "" || def.SnapshotClass.FromFile == "" || !def.GroupSnapshotClass.FromName ||
		def.StorageClass.FromFile == "" || di.SupportedSizeRange.Max != "1Gi" || def.Timeouts["PodStart"] != "10m" ||
		len(def.InlineVolumes) != 1 || !def.InlineVolumes[0].Shared || !def.InlineVolumes[0].ReadOnly {
		t.Errorf("definition %s", b)
	}
	for _, ref := range []string{def.StorageClass.FromFile, def.SnapshotClass.FromFile, def.VolumeAttributesClass.FromFile} {
		if filepath.Dir(ref) != filepath.Dir(path) {
			t.Errorf("class file %s not beside %s", ref, path)
		}
	}
}

// TestStressFollowsTheDriver: only the stress tests the driver can run get a scale, and a
// snapshotting driver needs a snapshot count (the suite fails a stress test of none).
func TestStressFollowsTheDriver(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	plain := plugin.Config{Name: "plain.csikit.dev", VendorVersion: "1", Controller: mem, Node: mem,
		Overrides: plugin.CapabilityOverrides{
			Controller: []csi.ControllerServiceCapability_RPC_Type{csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME},
			Plugin:     []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE},
		},
		Features: driver.Features{Expansion: driver.ExpansionNone},
	}
	srv := drivertest.NewServer(t, plain)
	d, err := kubesuite.Describe(context.Background(), srv.Conn, kubesuite.Options{Stress: kubesuite.Stress{Pods: 5, Restarts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	di := d.DriverInfo
	snaps := di.VolumeSnapshotStressTestOptions != nil
	if di.StressTestOptions == nil || di.StressTestOptions.NumPods != 5 || di.VolumeModifyStressTestOptions != nil ||
		di.VolumeGroupSnapshotStressTestOptions != nil {
		t.Errorf("driver without a VolumeAttributesClass or group snapshots: %+v", di)
	}
	if snaps {
		t.Errorf("snapshot stress options without Snapshots: %+v", di.VolumeSnapshotStressTestOptions)
	}

	full := drivertest.NewServer(t, fullConfig(newMem()))
	if _, err := kubesuite.Describe(context.Background(), full.Conn, kubesuite.Options{Stress: kubesuite.Stress{Pods: 5, Restarts: 1}}); err == nil ||
		!strings.Contains(err.Error(), "Snapshots") {
		t.Errorf("snapshotting driver without a snapshot count: %v, want an error naming Snapshots", err)
	}

	// volume-modify-stress never starts the pods of its claims, so with a WaitForFirstConsumer
	// class (this driver has topology) they never bind and the class change it makes is refused.
	for _, immediate := range []bool{false, true} {
		d, err := kubesuite.Describe(context.Background(), full.Conn, kubesuite.Options{
			Stress:           kubesuite.Stress{Pods: 5, Restarts: 1, Snapshots: 1},
			ModifyParameters: map[string]string{"iops": "3000"},
			ImmediateBinding: immediate,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := d.DriverInfo.VolumeModifyStressTestOptions != nil; got != immediate {
			t.Errorf("ImmediateBinding %v: volume-modify-stress options written %v, want %v", immediate, got, immediate)
		}
	}
}
