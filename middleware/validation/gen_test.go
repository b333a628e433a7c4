package validation

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/csikit/csikit/internal/testenv"
	"github.com/csikit/csikit/middleware/validation/internal/protoreq"
)

const specModule = "github.com/container-storage-interface/spec"

// parseSpec runs the generator's logic on the csi.proto of the spec module in the build list.
func parseSpec(t *testing.T) (*protoreq.Result, string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Skip(t, "the go command is needed to find csi.proto: %v", err)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}\n{{.Version}}", specModule).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", specModule, err)
	}
	parts := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(parts) != 2 || parts[0] == "" {
		t.Fatalf("go list -m %s: unexpected output %q", specModule, out)
	}
	src, err := os.ReadFile(filepath.Join(parts[0], "csi.proto"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := protoreq.Parse(src)
	if err != nil {
		t.Fatalf("parse csi.proto: %v", err)
	}
	return res, parts[1]
}

func TestRequiredTableUpToDate(t *testing.T) {
	res, version := parseSpec(t)
	want, err := protoreq.Render(res, "validation", specModule+"@"+version, version)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("required_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("required_gen.go is stale for %s@%s: run go generate ./middleware/validation", specModule, version)
	}
	if requiredSpecVersion != version {
		t.Fatalf("requiredSpecVersion %s, spec module %s", requiredSpecVersion, version)
	}
	// Every comment the generator could not classify has been read by a person.
	seen := map[string]bool{}
	for _, h := range res.Unclear {
		seen[h.Where] = true
		if _, ok := reviewedComments[h.Where]; !ok {
			t.Errorf("%s %s mentions REQUIRED outside the recognised phrases; review it and add it to reviewedComments in exceptions.go: %s", h.Kind, h.Where, h.Text)
		}
	}
	for w := range reviewedComments {
		if !seen[w] {
			t.Errorf("reviewedComments has %s, which csi.proto no longer flags; remove it", w)
		}
	}
}

func findMessage(t *testing.T, name protoreflect.FullName) protoreflect.MessageDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return nil
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		t.Errorf("%s is not a message", name)
		return nil
	}
	return md
}

func TestRequiredNamesResolve(t *testing.T) {
	nfields := 0
	for msg, fields := range requiredGenerated {
		md := findMessage(t, msg)
		if md == nil {
			continue
		}
		for _, f := range fields {
			nfields++
			if md.Fields().ByName(f) == nil {
				t.Errorf("%s has no field %s", msg, f)
			}
		}
	}
	t.Logf("generated table: %d messages, %d fields", len(requiredGenerated), nfields)
	for _, e := range requiredExceptions {
		if e.reason == "" {
			t.Errorf("exception %s.%s has no reason", e.msg, e.field)
		}
		md := findMessage(t, e.msg)
		if md == nil {
			continue
		}
		fd, od := md.Fields().ByName(e.field), md.Oneofs().ByName(e.field)
		if fd == nil && od == nil {
			t.Errorf("exception %s.%s: no such field or oneof", e.msg, e.field)
		}
		if e.kind == alsoRequired && fd != nil {
			for _, f := range requiredGenerated[e.msg] {
				if f == e.field {
					t.Errorf("exception %s.%s: already in the generated table, remove the exception", e.msg, e.field)
				}
			}
			switch fd.Kind() {
			case protoreflect.BoolKind, protoreflect.Int32Kind, protoreflect.Int64Kind:
				t.Errorf("exception %s.%s: a scalar cannot be checked for presence", e.msg, e.field)
			}
		}
	}
	// The rule tables name real fields too.
	for _, names := range []map[protoreflect.FullName]bool{nameFields, csiKnownEnumFields, positiveFields, outOfRangeFields, csiPluginNameFields, topologySegmentFields} {
		for n := range names {
			checkFieldName(t, n)
		}
	}
	for _, limits := range []map[protoreflect.FullName]int{csiMaxLenOverrides, totalLimitFields} {
		for n := range limits {
			checkFieldName(t, n)
		}
	}
	for n := range messageRules {
		findMessage(t, n)
	}
}

func checkFieldName(t *testing.T, n protoreflect.FullName) {
	t.Helper()
	md := findMessage(t, n.Parent())
	if md != nil && md.Fields().ByName(n.Name()) == nil {
		t.Errorf("rule names %s, which does not exist", n)
	}
}

// Every csi.v1 message has a plan, and the fast accessors were found for the generated types.
func TestPlansCompiled(t *testing.T) {
	r := CSIRules()
	n, fast := 0, 0
	for md, p := range r.plans {
		if md.ParentFile().Package() != "csi.v1" {
			if p != nil {
				t.Errorf("%s: plan for a message outside csi.v1", md.FullName())
			}
			continue
		}
		if p == nil {
			t.Errorf("%s: nil plan", md.FullName())
			continue
		}
		n++
		needed := false
		for _, r := range p.fields {
			needed = needed || r.kind == kStringList || r.kind == kStringMap || r.kind == kMessageList
		}
		if p.goType != nil {
			fast++
		} else if needed {
			t.Errorf("%s: no fast accessor", md.FullName())
		}
	}
	t.Logf("%d plans, %d with fast list/map accessors", n, fast)
	if n < 90 {
		t.Errorf("only %d plans", n)
	}
}
