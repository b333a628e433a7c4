package plugin

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// TestRulesBuild checks the tables New compiles against the linked bindings: every message and
// field they name exists with the kind its table needs, and compiling them succeeds, so New
// cannot fail on them in production.
func TestRulesBuild(t *testing.T) {
	for msg, fields := range requiredFields {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(msg))
		if err != nil {
			t.Errorf("%s: %v", msg, err)
			continue
		}
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			t.Errorf("%s is not a message", msg)
			continue
		}
		for _, f := range fields {
			if md.Fields().ByName(protoreflect.Name(f)) == nil && md.Oneofs().ByName(protoreflect.Name(f)) == nil {
				t.Errorf("%s has no field or oneof %q", msg, f)
			}
		}
	}
	if _, err := newRules(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkNewRules is what New spends compiling its rules: csi.v1, volume groups and both COSI
// versions.
func BenchmarkNewRules(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newRules(); err != nil {
			b.Fatal(err)
		}
	}
}
