package validation

import (
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// A package of our own, built at run time, stands for volume groups or COSI joining later.
const testPkg = "csikit.validationtest.v1"

var (
	testFileOnce sync.Once
	testFileErr  error
)

func registerTestFile(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	testFileOnce.Do(func() {
		str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
		msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
		opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
		rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
		secret := &descriptorpb.FieldOptions{}
		proto.SetExtension(secret, csi.E_CsiSecret, true)
		entry := func(name, valueType string) *descriptorpb.DescriptorProto {
			v := &descriptorpb.FieldDescriptorProto{Name: proto.String("value"), Number: proto.Int32(2), Label: opt, Type: str}
			if valueType != "" {
				v.Type, v.TypeName = msg, proto.String(valueType)
			}
			return &descriptorpb.DescriptorProto{
				Name: proto.String(name),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("key"), Number: proto.Int32(1), Label: opt, Type: str},
					v,
				},
				Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
			}
		}
		fdp := &descriptorpb.FileDescriptorProto{
			Name:    proto.String("csikit/validationtest/v1/thing.proto"),
			Package: proto.String(testPkg),
			Syntax:  proto.String("proto3"),
			MessageType: []*descriptorpb.DescriptorProto{{
				Name: proto.String("Thing"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("id"), Number: proto.Int32(1), Label: opt, Type: str},
					{Name: proto.String("secrets"), Number: proto.Int32(2), Label: rep, Type: msg, TypeName: proto.String("." + testPkg + ".Thing.SecretsEntry"), Options: secret},
					{Name: proto.String("children"), Number: proto.Int32(3), Label: rep, Type: msg, TypeName: proto.String("." + testPkg + ".Thing")},
					{Name: proto.String("a"), Number: proto.Int32(4), Label: opt, Type: str, OneofIndex: proto.Int32(0)},
					{Name: proto.String("b"), Number: proto.Int32(5), Label: opt, Type: str, OneofIndex: proto.Int32(0)},
					{Name: proto.String("named"), Number: proto.Int32(6), Label: rep, Type: msg, TypeName: proto.String("." + testPkg + ".Thing.NamedEntry")},
					{Name: proto.String("count"), Number: proto.Int32(7), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()},
				},
				OneofDecl:  []*descriptorpb.OneofDescriptorProto{{Name: proto.String("kind")}},
				NestedType: []*descriptorpb.DescriptorProto{entry("SecretsEntry", ""), entry("NamedEntry", "."+testPkg+".Thing")},
			}},
		}
		fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
		if err != nil {
			testFileErr = err
			return
		}
		testFileErr = protoregistry.GlobalFiles.RegisterFile(fd)
	})
	if testFileErr != nil {
		t.Fatal(testFileErr)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(testPkg + ".Thing")
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MessageDescriptor)
}

// thingRules are rules that name the test package's Thing: id and the oneof kind required.
func thingRules(t *testing.T) *Rules {
	t.Helper()
	r, err := NewRules(Config{Required: map[protoreflect.FullName][]protoreflect.Name{testPkg + ".Thing": {"id", "kind"}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NewRules refuses, at construction, a table that names what the linked protos do not declare.
func TestNewRulesRefusesBadNames(t *testing.T) {
	registerTestFile(t)
	type names = []protoreflect.FullName
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"unknown message", Config{Required: map[protoreflect.FullName][]protoreflect.Name{testPkg + ".Nope": {"id"}}}},
		{"unknown field", Config{Required: map[protoreflect.FullName][]protoreflect.Name{testPkg + ".Thing": {"nope"}}}},
		{"a field as a message", Config{Required: map[protoreflect.FullName][]protoreflect.Name{"csi.v1.CreateVolumeRequest.name": nil}}},
		{"unknown package", Config{Packages: names{"csikit.nosuch.v1"}}},
		{"unknown DNS name field", Config{DNSNames: names{testPkg + ".Thing.nope"}}},
		{"DNS name not a string", Config{DNSNames: names{testPkg + ".Thing.count"}}},
		{"object ID in an unknown message", Config{ObjectIDs: names{testPkg + ".Nope.id"}}},
		{"object ID not singular", Config{ObjectIDs: names{testPkg + ".Thing.children"}}},
		{"known enum not an enum", Config{KnownEnums: names{testPkg + ".Thing.id"}}},
		{"plugin name of a map", Config{PluginNames: names{testPkg + ".Thing.secrets"}}},
		{"length of an int", Config{MaxLen: map[protoreflect.FullName]int{testPkg + ".Thing.count": 10}}},
		{"length not positive", Config{MaxLen: map[protoreflect.FullName]int{testPkg + ".Thing.id": 0}}},
	} {
		if r, err := NewRules(tc.cfg); err == nil {
			t.Errorf("%s: accepted (%v)", tc.name, r != nil)
		}
	}
}

func TestNewRules(t *testing.T) {
	md := registerTestFile(t)

	thing := func(set func(m *dynamicpb.Message)) proto.Message {
		m := dynamicpb.NewMessage(md)
		set(m)
		return m
	}
	f := func(name protoreflect.Name) protoreflect.FieldDescriptor { return md.Fields().ByName(name) }
	valid := func(m *dynamicpb.Message) {
		m.Set(f("id"), protoreflect.ValueOfString("t1"))
		m.Set(f("a"), protoreflect.ValueOfString("x"))
	}

	// Not named by the rules: not checked.
	if err := CSIRules().Request(thing(func(*dynamicpb.Message) {})); err != nil {
		t.Fatalf("CSI rules: %v", err)
	}
	r := thingRules(t)
	// Building r changed no other value: the CSI rules still leave the package alone.
	if err := Request(thing(func(*dynamicpb.Message) {})); err != nil {
		t.Fatalf("CSI rules after NewRules: %v", err)
	}

	for _, tc := range []struct {
		name string
		m    proto.Message
		want string
	}{
		{"valid", thing(valid), ""},
		{"id", thing(func(m *dynamicpb.Message) { m.Set(f("a"), protoreflect.ValueOfString("x")) }), "Thing.id: required field is missing"},
		{"oneof", thing(func(m *dynamicpb.Message) { m.Set(f("id"), protoreflect.ValueOfString("t")) }), "Thing.kind: required field is missing (set one of a, b)"},
		{"size", thing(func(m *dynamicpb.Message) { valid(m); m.Set(f("id"), protoreflect.ValueOfString(rep('i', 129))) }), "Thing.id: 129 bytes, the limit is 128"},
		{"negative", thing(func(m *dynamicpb.Message) { valid(m); m.Set(f("count"), protoreflect.ValueOfInt64(-1)) }), "Thing.count: must not be negative"},
		{"secret key", thing(func(m *dynamicpb.Message) {
			valid(m)
			m.Mutable(f("secrets")).Map().Set(protoreflect.ValueOfString("bad key").MapKey(), protoreflect.ValueOfString("v"))
		}), `Thing.secrets["bad key"]: secret key`},
		{"child", thing(func(m *dynamicpb.Message) {
			valid(m)
			l := m.Mutable(f("children")).List()
			c := dynamicpb.NewMessage(md)
			valid(c)
			l.Append(protoreflect.ValueOfMessage(c))
			l.Append(protoreflect.ValueOfMessage(dynamicpb.NewMessage(md)))
		}), "Thing.children[1].id: required field is missing"},
		{"map value", thing(func(m *dynamicpb.Message) {
			valid(m)
			mp := m.Mutable(f("named")).Map()
			c := dynamicpb.NewMessage(md)
			valid(c)
			mp.Set(protoreflect.ValueOfString("ok").MapKey(), protoreflect.ValueOfMessage(c))
			mp.Set(protoreflect.ValueOfString("x").MapKey(), protoreflect.ValueOfMessage(dynamicpb.NewMessage(md)))
		}), `Thing.named["x"].id: required field is missing`},
	} {
		err := r.Request(tc.m)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// csi.v1 is checked by every Rules value.
	if err := r.Request(validCreateVolume()); err != nil {
		t.Fatal(err)
	}
	if err := r.Request(&csi.DeleteVolumeRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("csi.v1 with the test package's rules: %v", err)
	}
}

// The field tables of a Config reach the checks: the package alone gets the generic rules, and a
// field named as a DNS name or object ID gets that syntax and its length limit.
func TestNewRulesFieldTables(t *testing.T) {
	md := registerTestFile(t)
	id := md.Fields().ByName("id")
	withID := func(s string) proto.Message {
		m := dynamicpb.NewMessage(md)
		m.Set(id, protoreflect.ValueOfString(s))
		return m
	}
	rules := func(cfg Config) *Rules {
		r, err := NewRules(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	idName := []protoreflect.FullName{testPkg + ".Thing.id"}
	for _, tc := range []struct {
		name string
		r    *Rules
		m    proto.Message
		want string
	}{
		{"package: no required field", rules(Config{Packages: []protoreflect.FullName{testPkg}}), withID(""), ""},
		{"package: size", rules(Config{Packages: []protoreflect.FullName{testPkg}}), withID(rep('i', 129)), "Thing.id: 129 bytes, the limit is 128"},
		{"length limit", rules(Config{MaxLen: map[protoreflect.FullName]int{idName[0]: 200}}), withID(rep('i', 129)), ""},
		{"DNS name: valid", rules(Config{DNSNames: idName}), withID("bucket-1.example"), ""},
		{"DNS name: syntax", rules(Config{DNSNames: idName}), withID("Bucket"), "Thing.id: must be a DNS subdomain"},
		{"DNS name: length", rules(Config{DNSNames: idName}), withID(rep('a', 254)), "Thing.id: 254 bytes, the limit is 253"},
		{"object ID: valid", rules(Config{ObjectIDs: idName}), withID(rep('a', 2048)), ""},
		{"object ID: syntax", rules(Config{ObjectIDs: idName}), withID("a b"), "Thing.id: must contain only letters"},
		{"plugin name", rules(Config{PluginNames: idName}), withID("Not A Name"), "Thing.id: "},
	} {
		err := tc.r.Request(tc.m)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// One Rules value serves concurrent calls, including the plans it compiles on first use for
// descriptors built at run time, while other values are built.
func TestRulesConcurrentUse(t *testing.T) {
	md := registerTestFile(t)
	r := thingRules(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if i%2 == 0 {
					if _, err := NewRules(Config{Packages: []protoreflect.FullName{testPkg}}); err != nil {
						t.Error(err)
						return
					}
				}
				if err := r.Request(dynamicpb.NewMessage(md)); status.Code(err) != codes.InvalidArgument {
					t.Errorf("got %v, want INVALID_ARGUMENT", err)
					return
				}
				if err := r.Request(validCreateVolume()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestEmptyRulesCheckAsCSI: a nil *Rules and the zero Rules both check as CSIRules does, so a
// Rules value nobody built never lets every message through.
func TestEmptyRulesCheckAsCSI(t *testing.T) {
	bad := &csi.DeleteVolumeRequest{} // volume_id is REQUIRED
	for _, tc := range []struct {
		name  string
		rules *Rules
	}{
		{"nil", nil},
		{"zero", &Rules{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.rules.Request(bad); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Request(DeleteVolume without volume_id) = %v, want INVALID_ARGUMENT", err)
			}
			if err := tc.rules.Request(&csi.DeleteVolumeRequest{VolumeId: "v"}); err != nil {
				t.Fatalf("Request(a valid DeleteVolume) = %v", err)
			}
		})
	}
}
