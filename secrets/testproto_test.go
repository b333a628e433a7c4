package secrets

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	_ "google.golang.org/protobuf/types/known/anypb"
	_ "google.golang.org/protobuf/types/known/durationpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
	_ "google.golang.org/protobuf/types/known/wrapperspb"
)

// rawOption returns FieldOptions carrying option number num = v only as
// raw bytes, as protobuf-go leaves an option whose extension is not linked.
func rawOption(num protowire.Number, v uint64) *descriptorpb.FieldOptions {
	o := &descriptorpb.FieldOptions{}
	b := protowire.AppendTag(nil, num, protowire.VarintType)
	o.ProtoReflect().SetUnknown(protowire.AppendVarint(b, v))
	return o
}

func field(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type, label descriptorpb.FieldDescriptorProto_Label, typeName string, opts *descriptorpb.FieldOptions) *descriptorpb.FieldDescriptorProto {
	f := &descriptorpb.FieldDescriptorProto{
		Name:    proto.String(name),
		Number:  proto.Int32(num),
		Type:    typ.Enum(),
		Label:   label.Enum(),
		Options: opts,
	}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	return f
}

const (
	opt = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	rep = descriptorpb.FieldDescriptorProto_LABEL_REPEATED

	tString  = descriptorpb.FieldDescriptorProto_TYPE_STRING
	tBytes   = descriptorpb.FieldDescriptorProto_TYPE_BYTES
	tBool    = descriptorpb.FieldDescriptorProto_TYPE_BOOL
	tInt32   = descriptorpb.FieldDescriptorProto_TYPE_INT32
	tInt64   = descriptorpb.FieldDescriptorProto_TYPE_INT64
	tSint64  = descriptorpb.FieldDescriptorProto_TYPE_SINT64
	tUint32  = descriptorpb.FieldDescriptorProto_TYPE_UINT32
	tFixed64 = descriptorpb.FieldDescriptorProto_TYPE_FIXED64
	tFloat   = descriptorpb.FieldDescriptorProto_TYPE_FLOAT
	tDouble  = descriptorpb.FieldDescriptorProto_TYPE_DOUBLE
	tEnum    = descriptorpb.FieldDescriptorProto_TYPE_ENUM
	tMsg     = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
)

func mapEntryProto(name, valueType string, vt descriptorpb.FieldDescriptorProto_Type, kt descriptorpb.FieldDescriptorProto_Type) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{
		Name: proto.String(name),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("key", 1, kt, opt, "", nil),
			field("value", 2, vt, opt, valueType, nil),
		},
		Options: &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)},
	}
}

// testFile is a proto3 file exercising every kind of field on the
// reflective (dynamicpb) path, with secrets marked by raw options:
//
//	enum Color { RED = 0; GREEN = 1; }
//	message Leaf { string token = 1 [vg_csi_secret]; string note = 2; int64 pin = 3 [csi_secret]; }
//	message All { ... see the field list below ... }
//	message Node { Node next = 1; repeated Node kids = 2; map<string, Node> named = 3; Leaf leaf = 4; }
//	message Loop { Loop self = 1; string name = 2; }
var testFile = func() protoreflect.FileDescriptor {
	vg := func() *descriptorpb.FieldOptions { return rawOption(1101, 1) }
	csiOpt := func() *descriptorpb.FieldOptions { return rawOption(1059, 1) }
	all := &descriptorpb.DescriptorProto{
		Name: proto.String("All"),
		Field: []*descriptorpb.FieldDescriptorProto{
			field("s", 1, tString, opt, "", nil),
			field("b", 2, tBytes, opt, "", nil),
			field("t", 3, tBool, opt, "", nil),
			field("i32", 4, tInt32, opt, "", nil),
			field("s64", 5, tSint64, opt, "", nil),
			field("u32", 6, tUint32, opt, "", nil),
			field("f64", 7, tFixed64, opt, "", nil),
			field("fl", 8, tFloat, opt, "", nil),
			field("db", 9, tDouble, opt, "", nil),
			field("color", 10, tEnum, opt, ".secretstest.Color", nil),
			field("colors", 11, tEnum, rep, ".secretstest.Color", nil),
			field("blobs", 12, tBytes, rep, "", nil),
			field("by_num", 13, tMsg, rep, ".secretstest.All.ByNumEntry", nil),
			field("by_bool", 14, tMsg, rep, ".secretstest.All.ByBoolEntry", nil),
			field("leaves", 15, tMsg, rep, ".secretstest.All.LeavesEntry", nil),
			field("at", 16, tMsg, opt, ".google.protobuf.Timestamp", nil),
			field("took", 17, tMsg, opt, ".google.protobuf.Duration", nil),
			field("maybe", 18, tMsg, opt, ".google.protobuf.StringValue", nil),
			field("extra", 19, tMsg, opt, ".google.protobuf.Any", nil),
			field("leaf", 20, tMsg, opt, ".secretstest.Leaf", nil),
			field("secret_leaf", 21, tMsg, opt, ".secretstest.Leaf", vg()),
			field("secret_list", 22, tString, rep, "", vg()),
			field("secret_bytes", 23, tBytes, opt, "", vg()),
			field("secret_leaves", 24, tMsg, rep, ".secretstest.All.SecretLeavesEntry", vg()),
			field("name", 25, tString, opt, "", nil),
			field("picked", 26, tMsg, opt, ".secretstest.Leaf", nil),
			field("opt", 27, tString, opt, "", nil),
			field("children", 28, tMsg, rep, ".secretstest.All", nil),
			field("params", 29, tMsg, rep, ".secretstest.All.ParamsEntry", nil),
			field("secret_num", 30, tInt32, opt, "", csiOpt()),
			field("by_u32", 31, tMsg, rep, ".secretstest.All.ByU32Entry", nil),
		},
		NestedType: []*descriptorpb.DescriptorProto{
			mapEntryProto("ByNumEntry", "", tString, tInt32),
			mapEntryProto("ByBoolEntry", "", tString, tBool),
			mapEntryProto("LeavesEntry", ".secretstest.Leaf", tMsg, tString),
			mapEntryProto("SecretLeavesEntry", ".secretstest.Leaf", tMsg, tString),
			mapEntryProto("ParamsEntry", "", tString, tString),
			mapEntryProto("ByU32Entry", "", tString, tUint32),
		},
		OneofDecl: []*descriptorpb.OneofDescriptorProto{{Name: proto.String("choice")}, {Name: proto.String("_opt")}},
	}
	all.Field[24].OneofIndex = proto.Int32(0)
	all.Field[25].OneofIndex = proto.Int32(0)
	all.Field[26].OneofIndex = proto.Int32(1)
	all.Field[26].Proto3Optional = proto.Bool(true)

	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("secretstest/test.proto"),
		Package: proto.String("secretstest"),
		Syntax:  proto.String("proto3"),
		Dependency: []string{
			"google/protobuf/timestamp.proto", "google/protobuf/duration.proto",
			"google/protobuf/wrappers.proto", "google/protobuf/any.proto",
		},
		EnumType: []*descriptorpb.EnumDescriptorProto{{
			Name: proto.String("Color"),
			Value: []*descriptorpb.EnumValueDescriptorProto{
				{Name: proto.String("RED"), Number: proto.Int32(0)},
				{Name: proto.String("GREEN"), Number: proto.Int32(1)},
			},
		}},
		MessageType: []*descriptorpb.DescriptorProto{
			{
				Name: proto.String("Leaf"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("token", 1, tString, opt, "", vg()),
					field("note", 2, tString, opt, "", nil),
					field("pin", 3, tInt64, opt, "", csiOpt()),
				},
			},
			all,
			{
				Name: proto.String("Node"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("next", 1, tMsg, opt, ".secretstest.Node", nil),
					field("kids", 2, tMsg, rep, ".secretstest.Node", nil),
					field("named", 3, tMsg, rep, ".secretstest.Node.NamedEntry", nil),
					field("leaf", 4, tMsg, opt, ".secretstest.Leaf", nil),
				},
				NestedType: []*descriptorpb.DescriptorProto{mapEntryProto("NamedEntry", ".secretstest.Node", tMsg, tString)},
			},
			{
				Name: proto.String("Loop"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("self", 1, tMsg, opt, ".secretstest.Loop", nil),
					field("name", 2, tString, opt, "", nil),
				},
			},
			{
				// Ping and Pong are mutually recursive; the secret is in Pong.
				Name: proto.String("Ping"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("pong", 1, tMsg, opt, ".secretstest.Pong", nil),
				},
			},
			{
				Name: proto.String("Pong"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("ping", 1, tMsg, opt, ".secretstest.Ping", nil),
					field("key", 2, tString, opt, "", rawOption(1115, 1)),
				},
			},
		},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		panic(err)
	}
	return fd
}()

func testMsg(name protoreflect.Name) *dynamicpb.Message {
	return dynamicpb.NewMessage(testFile.Messages().ByName(name))
}

// optionsFile builds a file whose only message has fields carrying options
// given as resolved extensions of an options file "vgtest" declaring
// `bool vg_csi_secret = 1101` and `bool other = 1102`, or raw bytes.
func optionsFile(t *testing.T) protoreflect.MessageDescriptor {
	t.Helper()
	ext := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("vgtest/ext.proto"),
		Package:    proto.String("vgtest"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/descriptor.proto"},
		Extension: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("vg_csi_secret"), Number: proto.Int32(1101), Type: tBool.Enum(), Label: opt.Enum(), Extendee: proto.String(".google.protobuf.FieldOptions")},
			{Name: proto.String("not_a_secret"), Number: proto.Int32(1059), Type: tBool.Enum(), Label: opt.Enum(), Extendee: proto.String(".google.protobuf.FieldOptions")},
		},
	}
	efd, err := protodesc.NewFile(ext, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	withExt := func(i int, v bool) *descriptorpb.FieldOptions {
		o := &descriptorpb.FieldOptions{}
		proto.SetExtension(o, dynamicpb.NewExtensionType(efd.Extensions().Get(i)), v)
		return o
	}
	lengthDelimited := &descriptorpb.FieldOptions{}
	lengthDelimited.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 1101, protowire.BytesType), []byte{1}))
	other := &descriptorpb.FieldOptions{}
	other.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 50000, protowire.VarintType), 1))

	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("vgtest/use.proto"),
		Package: proto.String("vgtest"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("Req"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("ext_true", 1, tString, opt, "", withExt(0, true)),
				field("ext_false", 2, tString, opt, "", withExt(0, false)),
				field("ext_wrong_name", 3, tString, opt, "", withExt(1, true)),
				field("raw_vg", 4, tString, opt, "", rawOption(1101, 1)),
				field("raw_vg_zero", 5, tString, opt, "", rawOption(1101, 0)),
				field("raw_csi", 6, tString, opt, "", rawOption(1059, 1)),
				field("raw_cosi", 7, tString, opt, "", rawOption(1115, 1)),
				field("raw_bytes", 8, tString, opt, "", lengthDelimited),
				field("raw_other", 9, tString, opt, "", other),
				field("plain", 10, tString, opt, "", nil),
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	return fd.Messages().Get(0)
}
