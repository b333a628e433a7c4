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

func TestRegisterRequired(t *testing.T) {
	md := registerTestFile(t)
	old := current.Load()
	t.Cleanup(func() { current.Store(old) })

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

	// Not registered yet: not checked.
	if err := Request(thing(func(*dynamicpb.Message) {})); err != nil {
		t.Fatalf("before registration: %v", err)
	}
	if err := RegisterRequired(testPkg+".Nope", "id"); err == nil {
		t.Error("unknown message accepted")
	}
	if err := RegisterRequired(testPkg+".Thing", "nope"); err == nil {
		t.Error("unknown field accepted")
	}
	if err := RegisterRequired("csi.v1.CreateVolumeRequest.name"); err == nil {
		t.Error("a field accepted as a message")
	}
	if err := RegisterRequired(testPkg+".Thing", "id", "kind"); err != nil {
		t.Fatal(err)
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
		err := Request(tc.m)
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
	// csi.v1 keeps working after a registration.
	if err := Request(validCreateVolume()); err != nil {
		t.Fatal(err)
	}
	if err := Request(&csi.DeleteVolumeRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("csi.v1 after registration: %v", err)
	}
}
