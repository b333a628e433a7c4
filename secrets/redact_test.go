package secrets

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestRedactCSI(t *testing.T) {
	req := typicalCreateVolume()
	before := proto.Clone(req)
	got := Redact(req).(*csi.CreateVolumeRequest)

	if !proto.Equal(req, before) {
		t.Fatal("Redact modified its input")
	}
	want := proto.Clone(req).(*csi.CreateVolumeRequest)
	want.Secrets = map[string]string{"username": Placeholder, "password": Placeholder}
	if !proto.Equal(got, want) {
		t.Errorf("Redact =\n%v\nwant\n%v", got, want)
	}

	heur := NewRedactor(WithHeuristic(true)).Redact(&csi.NodePublishVolumeRequest{
		VolumeId:      "v",
		VolumeContext: map[string]string{"password": "pw", "size": "1Gi"},
		Secrets:       map[string]string{"k": "v"},
	})
	wantHeur := &csi.NodePublishVolumeRequest{
		VolumeId:      "v",
		VolumeContext: map[string]string{"password": Placeholder, "size": "1Gi"},
		Secrets:       map[string]string{"k": Placeholder},
	}
	if !proto.Equal(heur, wantHeur) {
		t.Errorf("heuristic Redact =\n%v\nwant\n%v", heur, wantHeur)
	}

	if Redact(nil) != nil {
		t.Error("Redact(nil) != nil")
	}
	if got := Redact((*csi.CreateVolumeRequest)(nil)); got.ProtoReflect().IsValid() {
		t.Error("Redact(typed nil) is a valid message")
	}
}

func TestRedactDropsUnknownFields(t *testing.T) {
	req := &csi.CreateVolumeRequest{Name: "n", CapacityRange: &csi.CapacityRange{RequiredBytes: 1}}
	// A field from a newer spec that this binary does not know, perhaps secret.
	unknown := protowire.AppendString(protowire.AppendTag(nil, 99, protowire.BytesType), "new-secret")
	req.ProtoReflect().SetUnknown(unknown)
	req.CapacityRange.ProtoReflect().SetUnknown(unknown)

	got := Redact(req).(*csi.CreateVolumeRequest)
	if len(got.ProtoReflect().GetUnknown()) != 0 || len(got.CapacityRange.ProtoReflect().GetUnknown()) != 0 {
		t.Error("unknown fields survived Redact")
	}
	if len(req.ProtoReflect().GetUnknown()) == 0 {
		t.Error("Redact modified its input")
	}
}

func TestRedactAllKinds(t *testing.T) {
	m := allMessage()
	got := Redact(m)
	gm := got.ProtoReflect()
	fd := func(n protoreflect.Name) protoreflect.FieldDescriptor { return gm.Descriptor().Fields().ByName(n) }
	leafField := func(l protoreflect.Message, n protoreflect.Name) protoreflect.Value {
		return l.Get(l.Descriptor().Fields().ByName(n))
	}

	if gm.Has(fd("secret_num")) {
		t.Error("secret number not cleared")
	}
	if s := gm.Get(fd("secret_bytes")).Bytes(); string(s) != Placeholder {
		t.Errorf("secret bytes = %q", s)
	}
	sl := gm.Get(fd("secret_list")).List()
	if sl.Len() != 2 || sl.Get(0).String() != Placeholder || sl.Get(1).String() != Placeholder {
		t.Error("secret list not redacted element by element")
	}
	sleaf := gm.Get(fd("secret_leaf")).Message()
	if leafField(sleaf, "token").String() != Placeholder || leafField(sleaf, "note").String() != Placeholder ||
		sleaf.Has(sleaf.Descriptor().Fields().ByName("pin")) {
		t.Error("secret message not redacted throughout")
	}
	z := gm.Get(fd("secret_leaves")).Map().Get(protoreflect.ValueOfString("z").MapKey())
	if !z.IsValid() || leafField(z.Message(), "note").String() != Placeholder {
		t.Error("secret map lost its key or kept a value")
	}
	leaf := gm.Get(fd("leaf")).Message()
	if leafField(leaf, "token").String() != Placeholder || leafField(leaf, "note").String() != "note" {
		t.Error("nested secret field not redacted, or public field changed")
	}
	if gm.Get(fd("s")).String() != "str" || gm.Get(fd("params")).Map().Len() != 2 {
		t.Error("public fields changed")
	}

	var a anypb.Any
	b, err := proto.Marshal(gm.Get(fd("extra")).Message().Interface())
	if err != nil {
		t.Fatal(err)
	}
	var inner csi.NodeStageVolumeRequest
	if err := proto.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if err := a.UnmarshalTo(&inner); err != nil {
		t.Fatal(err)
	}
	if inner.VolumeId != "v1" || inner.Secrets["k"] != Placeholder {
		t.Errorf("Any payload not redacted: %v", &inner)
	}

	// The original keeps its values.
	om := m.ProtoReflect()
	if om.Get(fd("secret_num")).Int() != 1234 || string(om.Get(fd("secret_bytes")).Bytes()) != "sb" {
		t.Error("Redact modified its input")
	}
}

func TestRedactUnresolvableAny(t *testing.T) {
	a := &anypb.Any{TypeUrl: "example.com/unknown.Type", Value: []byte("\x0a\x03abc")}
	got := Redact(a).(*anypb.Any)
	if got.TypeUrl != a.TypeUrl || len(got.Value) != 0 {
		t.Errorf("unresolvable Any = %v, want type kept and payload dropped", got)
	}
}
