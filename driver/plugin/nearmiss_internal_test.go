package plugin

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/volumegroup"
)

// anyBackend is every required backend interface at once and no optional one: the base each
// near-miss fixture adds one misspelt ability to, so that one fixture fits every Config field
// whose backend kind looks for that interface. Its embedded interfaces are nil; New refuses the
// fixtures before anything could call them.
type anyBackend struct {
	driver.Controller
	driver.Node
	driver.GroupController
	driver.SnapshotMetadata
	groupController
	bucket.Provisioner
}

// groupController names volumegroup.Controller apart from driver.Controller in anyBackend.
type groupController = volumegroup.Controller

// One fixture per optional interface, each with the kind of slip a vendor makes: a value for a
// pointer, a pointer for a value, a forgotten error or context, a result of the wrong type, a
// missing sibling method.
type (
	nearControllerPublisher   struct{ anyBackend }
	nearVolumeLister          struct{ anyBackend }
	nearVolumePageLister      struct{ anyBackend }
	nearCapacityReporter      struct{ anyBackend }
	nearSnapshotter           struct{ anyBackend }
	nearSnapshotLister        struct{ anyBackend }
	nearSnapshotPageLister    struct{ anyBackend }
	nearSnapshotGetter        struct{ anyBackend }
	nearVolumeExpander        struct{ anyBackend }
	nearVolumeGetter          struct{ anyBackend }
	nearVolumeModifier        struct{ anyBackend }
	nearVolumeHealthGetter    struct{ anyBackend }
	nearVolumeHealthLister    struct{ anyBackend }
	nearNodeStager            struct{ anyBackend }
	nearVolumeStatsReporter   struct{ anyBackend }
	nearNodeExpander          struct{ anyBackend }
	nearNodeVolumeHealth      struct{ anyBackend }
	nearStorageHealthReporter struct{ anyBackend }
	nearVolumeGroupGetter     struct{ anyBackend }
	nearVolumeGroupLister     struct{ anyBackend }
	nearVolumeGroupPageLister struct{ anyBackend }
	nearBucketGetter          struct{ anyBackend }
	nearBucketAccessGranter   struct{ anyBackend }
	nearProber                struct{ anyBackend }
)

func (nearControllerPublisher) ControllerPublishVolume(context.Context, *driver.ControllerPublishVolumeRequest) map[string]string {
	return nil
}

func (nearControllerPublisher) ControllerUnpublishVolume(context.Context, *driver.ControllerUnpublishVolumeRequest) error {
	return nil
}

func (nearVolumeLister) ListVolumes(context.Context, *driver.ListVolumesRequest) ([]*driver.VolumeEntry, error) {
	return nil, nil
}

func (nearVolumePageLister) ListVolumesPage(context.Context, driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	return nil, nil
}

func (nearCapacityReporter) GetCapacity(context.Context, *driver.GetCapacityRequest) (int64, error) {
	return 0, nil
}

func (nearSnapshotter) CreateSnapshot(context.Context, *driver.CreateSnapshotRequest) (driver.Snapshot, error) {
	return driver.Snapshot{}, nil
}

func (nearSnapshotter) DeleteSnapshot(context.Context, *driver.DeleteSnapshotRequest) error {
	return nil
}

func (nearSnapshotLister) ListSnapshots(context.Context, *driver.ListSnapshotsRequest) ([]*driver.Snapshot, error) {
	return nil, nil
}

func (nearSnapshotPageLister) ListSnapshotsPage(*driver.ListSnapshotsRequest) ([]driver.Snapshot, error) {
	return nil, nil
}

func (nearSnapshotGetter) GetSnapshot(context.Context, string) (*driver.Snapshot, error) {
	return nil, nil
}

func (nearVolumeExpander) ControllerExpandVolume(context.Context, *driver.ControllerExpandVolumeRequest) (int64, error) {
	return 0, nil
}

func (nearVolumeGetter) ControllerGetVolume(context.Context, *driver.ControllerGetVolumeRequest) (*driver.Volume, error) {
	return nil, nil
}

func (nearVolumeModifier) ControllerModifyVolume(context.Context, *driver.ControllerModifyVolumeRequest) (map[string]string, error) {
	return nil, nil
}

func (nearVolumeHealthGetter) ControllerGetVolumeHealth(context.Context, *driver.ControllerGetVolumeHealthRequest) (driver.VolumeHealth, error) {
	return driver.VolumeHealth{}, nil
}

func (nearVolumeHealthLister) ControllerListVolumeHealth(context.Context, *driver.ControllerListVolumeHealthRequest) ([]*driver.VolumeHealth, error) {
	return nil, nil
}

// NodeStageVolume is right; NodeUnstageVolume is missing.
func (nearNodeStager) NodeStageVolume(context.Context, *driver.NodeStageVolumeRequest) error {
	return nil
}

func (nearVolumeStatsReporter) NodeGetVolumeStats(context.Context, *driver.NodeGetVolumeStatsRequest) (*driver.VolumeUsage, error) {
	return nil, nil
}

func (nearNodeExpander) NodeExpandVolume(context.Context, *driver.NodeExpandVolumeRequest) (int64, bool, error) {
	return 0, false, nil
}

func (nearNodeVolumeHealth) NodeGetVolumeHealth(context.Context, *driver.NodeGetVolumeHealthRequest) (driver.VolumeHealth, error) {
	return driver.VolumeHealth{}, nil
}

func (nearStorageHealthReporter) NodeGetStorageHealth(context.Context) ([]driver.StorageHealth, error) {
	return nil, nil
}

func (nearVolumeGroupGetter) ControllerGetVolumeGroup(context.Context, *volumegroup.ControllerGetVolumeGroupRequest) (volumegroup.Group, error) {
	return volumegroup.Group{}, nil
}

func (nearVolumeGroupLister) ListVolumeGroups(context.Context, *volumegroup.ListVolumeGroupsRequest) ([]*volumegroup.Group, error) {
	return nil, nil
}

func (nearVolumeGroupPageLister) ListVolumeGroupsPage(context.Context, volumegroup.ListVolumeGroupsRequest) ([]volumegroup.Group, error) {
	return nil, nil
}

func (nearBucketGetter) GetBucket(context.Context, *bucket.GetBucketRequest) (bucket.Bucket, error) {
	return bucket.Bucket{}, nil
}

// GrantBucketAccess answers a value where a pointer is expected: a slip once made in memorys3, which
// once turned the RPC into UNIMPLEMENTED without a word.
func (nearBucketAccessGranter) GrantBucketAccess(context.Context, *bucket.GrantBucketAccessRequest) (bucket.Access, error) {
	return bucket.Access{}, nil
}

func (nearBucketAccessGranter) RevokeBucketAccess(context.Context, *bucket.RevokeBucketAccessRequest) error {
	return nil
}

func (nearProber) Probe(context.Context) bool { return true }

// nearMissFixtures maps every optional interface to its fixture. The test below fails for an
// interface the library looks for and this map lacks.
var nearMissFixtures = map[reflect.Type]any{
	typeOf[driver.ControllerPublisher]():    nearControllerPublisher{},
	typeOf[driver.VolumeLister]():           nearVolumeLister{},
	typeOf[driver.VolumePageLister]():       nearVolumePageLister{},
	typeOf[driver.CapacityReporter]():       nearCapacityReporter{},
	typeOf[driver.Snapshotter]():            nearSnapshotter{},
	typeOf[driver.SnapshotLister]():         nearSnapshotLister{},
	typeOf[driver.SnapshotPageLister]():     nearSnapshotPageLister{},
	typeOf[driver.SnapshotGetter]():         nearSnapshotGetter{},
	typeOf[driver.VolumeExpander]():         nearVolumeExpander{},
	typeOf[driver.VolumeGetter]():           nearVolumeGetter{},
	typeOf[driver.VolumeModifier]():         nearVolumeModifier{},
	typeOf[driver.VolumeHealthGetter]():     nearVolumeHealthGetter{},
	typeOf[driver.VolumeHealthLister]():     nearVolumeHealthLister{},
	typeOf[driver.NodeStager]():             nearNodeStager{},
	typeOf[driver.VolumeStatsReporter]():    nearVolumeStatsReporter{},
	typeOf[driver.NodeExpander]():           nearNodeExpander{},
	typeOf[driver.NodeVolumeHealthGetter](): nearNodeVolumeHealth{},
	typeOf[driver.StorageHealthReporter]():  nearStorageHealthReporter{},
	typeOf[volumegroup.Getter]():            nearVolumeGroupGetter{},
	typeOf[volumegroup.Lister]():            nearVolumeGroupLister{},
	typeOf[volumegroup.PageLister]():        nearVolumeGroupPageLister{},
	typeOf[bucket.Getter]():                 nearBucketGetter{},
	typeOf[bucket.AccessGranter]():          nearBucketAccessGranter{},
	typeOf[driver.Prober]():                 nearProber{},
}

// contractPackages are the import paths whose interfaces type a backend field of Config.
var contractPackages = []string{
	typeOf[driver.Controller]().PkgPath(),
	typeOf[bucket.Provisioner]().PkgPath(),
}

// backendFields lists the path ("Controller", "COSI.Provisioner") of every field of t, and of the
// structs its pointer fields point to, that is typed by a contract interface.
func backendFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Type.Kind() == reflect.Interface && slices.Contains(contractPackages, f.Type.PkgPath()) && f.Name != "Prober":
			out = append(out, prefix+f.Name)
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && f.Type.Elem().PkgPath() == t.PkgPath():
			out = append(out, backendFields(f.Type.Elem(), prefix+f.Name+".")...)
		}
	}
	return out
}

// configField returns the field of cfg at a path of backendFields, allocating the sub-structs on
// the way, or false when there is none.
func configField(cfg *Config, path string) (reflect.Value, bool) {
	v := reflect.ValueOf(cfg).Elem()
	for _, name := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		v = v.FieldByName(name)
		if !v.IsValid() {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// TestBackendKindsCoverEveryBackendField: every Config field typed by one of the contracts'
// interfaces (directly or in a sub-struct such as COSIConfig) holds a backend, and New must look
// for near misses on it; backendKinds is the list it walks. Config.Prober is the one exception
// (backendKinds says why).
func TestBackendKindsCoverEveryBackendField(t *testing.T) {
	fields := backendFields(typeOf[Config](), "")
	if len(fields) == 0 {
		t.Fatal("no backend field found in Config: the walk is broken")
	}
	var listed []string
	for _, k := range backendKinds {
		listed = append(listed, k.field)
		var cfg Config
		f, ok := configField(&cfg, k.field)
		if !ok {
			t.Errorf("backendKinds names Config.%s, which does not exist", k.field)
			continue
		}
		if !typeOf[anyBackend]().AssignableTo(f.Type()) {
			t.Errorf("Config.%s is a %s, which anyBackend does not implement: add it to anyBackend", k.field, f.Type())
			continue
		}
		// of must read the field it names.
		f.Set(reflect.ValueOf(anyBackend{}))
		if got := k.of(&cfg); got == nil || reflect.TypeOf(got) != typeOf[anyBackend]() {
			t.Errorf("backendKinds entry %s reads another field than Config.%s", k.field, k.field)
		}
		if len(optionalInterfaces(k.svc)) == 0 {
			t.Errorf("backendKinds entry %s names service %s, which has no optional interface (not even Prober): a wrong service", k.field, k.svc)
		}
	}
	for _, f := range fields {
		if !slices.Contains(listed, f) {
			t.Errorf("Config.%s holds a backend but backendKinds does not list it: New would accept a near miss on it", f)
		}
	}
}

// TestNewRefusesANearMissOfEveryOptionalInterface walks every optional interface of every backend
// kind, from the same table New uses, and puts that interface's fixture into the kind's Config
// field: New must refuse it, naming the field, the interface and the signature it expects of
// every method the fixture gets wrong or lacks.
func TestNewRefusesANearMissOfEveryOptionalInterface(t *testing.T) {
	for _, k := range backendKinds {
		for _, it := range optionalInterfaces(k.svc) {
			name := "Config." + k.field + "/" + it.String()
			t.Run(name, func(t *testing.T) {
				fixture, ok := nearMissFixtures[it]
				if !ok {
					t.Fatalf("no near-miss fixture for %s: add one to nearMissFixtures, so that New is proven to refuse a backend that almost implements it", it)
				}
				ft := reflect.TypeOf(fixture)
				if ft.Implements(it) {
					t.Fatalf("the fixture %s implements %s: it is no near miss", ft.Name(), it)
				}
				cfg := Config{Name: "near.example.com", VendorVersion: "1"}
				f, ok := configField(&cfg, k.field)
				if !ok {
					t.Fatalf("no Config.%s", k.field)
				}
				f.Set(reflect.ValueOf(fixture))
				if cfg.COSI != nil {
					cfg.COSI.Protocols = []bucket.Protocol{bucket.S3}
				}
				_, err := New(cfg)
				if err == nil {
					t.Fatalf("New accepted %s in Config.%s, which almost implements %s: the capability would silently disappear", ft.Name(), k.field, it)
				}
				msg := err.Error()
				for _, want := range []string{"Config." + k.field, it.String()} {
					if !strings.Contains(msg, want) {
						t.Errorf("New: %v\nwant it to name %q", err, want)
					}
				}
				for i := range it.NumMethod() {
					m := it.Method(i)
					sig := strings.TrimPrefix(m.Type.String(), "func")
					got, has := ft.MethodByName(m.Name)
					switch {
					case !has:
						if want := "missing " + m.Name + sig; !strings.Contains(msg, want) {
							t.Errorf("New: %v\nwant it to say %q", err, want)
						}
					case withoutReceiver(got.Type) != m.Type:
						if want := m.Name + " is "; !strings.Contains(msg, want) || !strings.Contains(msg, "want "+sig) {
							t.Errorf("New: %v\nwant it to show %s's signature and the expected one, %q", err, m.Name, sig)
						}
					}
				}
			})
		}
	}
}

// withoutReceiver is a concrete method's type as an interface method's: the receiver dropped.
func withoutReceiver(m reflect.Type) reflect.Type {
	in := make([]reflect.Type, 0, m.NumIn()-1)
	for i := 1; i < m.NumIn(); i++ {
		in = append(in, m.In(i))
	}
	out := make([]reflect.Type, 0, m.NumOut())
	for i := range m.NumOut() {
		out = append(out, m.Out(i))
	}
	return reflect.FuncOf(in, out, m.IsVariadic())
}
