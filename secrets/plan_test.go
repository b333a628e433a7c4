package secrets

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestPlanLayoutCSI checks that every field of every CSI message is read
// directly, so a protobuf-go upgrade that changes generated structs shows up
// here as a test failure rather than as a silent slowdown.
func TestPlanLayoutCSI(t *testing.T) {
	fd := (&csi.CreateVolumeRequest{}).ProtoReflect().Descriptor().ParentFile()
	reg := current.Load()
	var walk func(msgs protoreflect.MessageDescriptors)
	walk = func(msgs protoreflect.MessageDescriptors) {
		for i := range msgs.Len() {
			md := msgs.Get(i)
			walk(md.Messages())
			if md.IsMapEntry() {
				continue
			}
			p := reg.planFor(md)
			if p.goType == nil {
				t.Errorf("%s: no generated type found", md.FullName())
				continue
			}
			for j := range p.fields {
				f := &p.fields[j]
				if f.acc == accReflect && !(f.card == cardList && f.sub == nil) && !(f.card == cardMap && !f.strMap) {
					t.Errorf("%s: read through protoreflect", f.fd.FullName())
				}
			}
			for _, o := range p.oneofs {
				if !o.direct {
					t.Errorf("%s: oneof read through protoreflect", o.od.FullName())
				}
			}
		}
	}
	walk(fd.Messages())
}
