package secrets

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestLayoutAssumptions fails loudly the day a protobuf-go upgrade changes the generated-struct
// layout the direct reads depend on (see layout.go). The process then still redacts correctly
// through protoreflect, only slower; this test is how the change gets noticed.
func TestLayoutAssumptions(t *testing.T) {
	if layoutErr != nil {
		t.Fatalf("protobuf-go's generated-struct layout changed; direct reads are off:\n%v", layoutErr)
	}
	if !directReads.Load() {
		t.Fatal("direct reads are off although the layout check passed")
	}
}

// withoutDirectReads runs fn with direct reads off, as after a failed start-up check. Plans are
// built lazily, so the fresh generation published here gets them all without direct reads.
func withoutDirectReads(t testing.TB, fn func()) {
	t.Helper()
	directReads.Store(false)
	restore := replaceMarked(defaultSensitive...)
	defer func() {
		directReads.Store(true)
		restore()
	}()
	fn()
}

// TestFallbackMatchesDirect checks the protoreflect fallback: with direct reads off, generated
// messages are walked through protoreflect and every output is the same as with them on.
func TestFallbackMatchesDirect(t *testing.T) {
	msgs := []proto.Message{
		typicalCreateVolume(),
		&csi.NodeStageVolumeRequest{VolumeId: "v", Secrets: map[string]string{"password": "pw1234"},
			VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
				MountFlags: []string{"ro", "user=bob,password=hunter2hunter", "="}}}}},
		&csi.CreateVolumeRequest{VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "src"}}}},
	}
	type result struct {
		str    string
		values []string
		scrub  string
		red    proto.Message
	}
	run := func() []result {
		var out []result
		for _, m := range msgs {
			out = append(out, result{String(m), Values(m), Scrub("err: hunter2hunter pw1234 bob", m), Redact(m)})
		}
		return out
	}
	direct := run()
	var fallback []result
	withoutDirectReads(t, func() {
		p := current.Load().planFor(msgs[0].ProtoReflect().Descriptor())
		if p.goType != nil {
			t.Fatal("a plan still reads directly with direct reads off")
		}
		fallback = run()
	})
	for i := range msgs {
		d, f := direct[i], fallback[i]
		if d.str != f.str || !reflect.DeepEqual(d.values, f.values) || d.scrub != f.scrub || !proto.Equal(d.red, f.red) {
			t.Errorf("%T: direct %+v\nfallback %+v", msgs[i], d, f)
		}
	}
}

// TestVerifyLayoutCatchesWrongOffsets corrupts a plan as a changed layout would and checks that
// verification sends the affected fields and oneofs to protoreflect.
func TestVerifyLayoutCatchesWrongOffsets(t *testing.T) {
	tests := []struct {
		name    string
		msg     proto.Message
		corrupt func(p *plan)
		check   func(t *testing.T, p *plan)
	}{
		{
			name: "two string fields with swapped offsets read back each other's value",
			msg:  &csi.NodeStageVolumeRequest{},
			corrupt: func(p *plan) {
				a, b := fieldByName(p, "volume_id"), fieldByName(p, "staging_target_path")
				a.off, b.off = b.off, a.off
			},
			check: func(t *testing.T, p *plan) {
				for _, n := range []protoreflect.Name{"volume_id", "staging_target_path"} {
					if f := fieldByName(p, n); f.acc != accReflect {
						t.Errorf("%s still read directly", n)
					}
				}
				if f := fieldByName(p, "secrets"); f.acc != accStrMap {
					t.Error("an intact field lost its direct read")
				}
			},
		},
		{
			name: "a map field at the offset of a message field",
			msg:  &csi.NodeStageVolumeRequest{},
			corrupt: func(p *plan) {
				fieldByName(p, "secrets").off = fieldByName(p, "volume_capability").off
			},
			check: func(t *testing.T, p *plan) {
				if f := fieldByName(p, "secrets"); f.acc != accReflect {
					t.Error("secrets still read directly")
				}
			},
		},
		{
			name: "a oneof whose member types are not told apart",
			msg:  &csi.VolumeCapability{},
			corrupt: func(p *plan) {
				o := &p.oneofs[0]
				o.members[0].itab, o.members[1].itab = o.members[1].itab, o.members[0].itab
			},
			check: func(t *testing.T, p *plan) {
				if p.oneofs[0].direct {
					t.Error("oneof still read directly")
				}
			},
		},
		{
			name: "a oneof read at the wrong offset",
			msg:  &csi.VolumeCapability{},
			corrupt: func(p *plan) {
				p.oneofs[0].off += unsafe.Sizeof(uintptr(0)) * 2
			},
			check: func(t *testing.T, p *plan) {
				if p.oneofs[0].direct {
					t.Error("oneof still read directly")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restore := replaceMarked(defaultSensitive...)
			defer restore()
			p := current.Load().planFor(tt.msg.ProtoReflect().Descriptor())
			tt.corrupt(p)
			verifyLayout(p)
			tt.check(t, p)
		})
	}
}

func fieldByName(p *plan, n protoreflect.Name) *fieldPlan {
	return &p.fields[p.md.Fields().ByName(n).Index()]
}
