package validation

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// testFuncs lists the Test functions of this package's test files.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				out[fn.Name.Name] = true
			}
		}
	}
	return out
}

// requiredListsAndMaps returns the csi.v1 repeated and map fields the effective table (generated
// plus exceptions) requires, and those a lenient exception released.
func requiredListsAndMaps(t *testing.T) (required, released map[protoreflect.FullName]bool) {
	t.Helper()
	required, released = map[protoreflect.FullName]bool{}, map[protoreflect.FullName]bool{}
	add := func(set map[protoreflect.FullName]bool, msg protoreflect.FullName, field protoreflect.Name) {
		md := findMessage(t, msg)
		if md == nil {
			return
		}
		if fd := md.Fields().ByName(field); fd != nil && (fd.IsList() || fd.IsMap()) {
			set[fd.FullName()] = true
		}
	}
	for msg, fields := range CSIRules().required {
		if !strings.HasPrefix(string(msg), "csi.v1.") {
			continue
		}
		for f := range fields {
			add(required, msg, f)
		}
	}
	for _, e := range requiredExceptions {
		if e.kind == notRequired && e.deviant != "" {
			add(released, e.msg, e.field)
		}
	}
	return required, released
}

var versionRE = regexp.MustCompile(`v\d+\.\d+`)

func TestExceptionsFollowThePrinciple(t *testing.T) {
	funcs := testFuncs(t)
	t.Run("every entry gives its reason", func(t *testing.T) {
		for _, e := range requiredExceptions {
			if strings.TrimSpace(e.reason) == "" {
				t.Errorf("%s.%s: no reason", e.msg, e.field)
			}
		}
	})
	t.Run("a lenient entry names the CO or tool with versions, and a test that exists", func(t *testing.T) {
		for _, e := range requiredExceptions {
			name := string(e.msg) + "." + string(e.field)
			if (e.deviant == "") != (e.test == "") {
				t.Errorf("%s: deviant and test go together (deviant %q, test %q)", name, e.deviant, e.test)
			}
			if e.deviant != "" && !versionRE.MatchString(e.deviant) {
				t.Errorf("%s: deviant %q names no version", name, e.deviant)
			}
			if e.test != "" && !funcs[e.test] {
				t.Errorf("%s: names test %s, which does not exist", name, e.test)
			}
		}
	})
	t.Run("reading the spec is strict: alsoRequired has no deviant, emptyIsAbsent always has one", func(t *testing.T) {
		for _, e := range requiredExceptions {
			switch {
			case e.kind == alsoRequired && e.deviant != "":
				t.Errorf("%s.%s: an alsoRequired entry is strict and names no deviant", e.msg, e.field)
			case e.kind == emptyIsAbsent && e.deviant == "":
				t.Errorf("%s.%s: emptyIsAbsent relaxes the spec and must name its deviant", e.msg, e.field)
			}
		}
	})
	t.Run("emptyIsAbsent names a singular message field", func(t *testing.T) {
		for _, e := range requiredExceptions {
			if e.kind != emptyIsAbsent {
				continue
			}
			md := findMessage(t, e.msg)
			if md == nil {
				continue
			}
			fd := md.Fields().ByName(e.field)
			if fd == nil || fd.Message() == nil || fd.IsList() || fd.IsMap() {
				t.Errorf("%s.%s: not a singular message field", e.msg, e.field)
			}
		}
	})
	t.Run("every REQUIRED repeated or map field has exactly one written decision", func(t *testing.T) {
		required, released := requiredListsAndMaps(t)
		for n := range required {
			_, kept := keptStrict[n]
			_, strict := strictListsAndMaps[n]
			if kept == strict {
				t.Errorf("%s is REQUIRED and repeated or a map: write one decision for it, in keptStrict or strictListsAndMaps (kept %v, strict %v)", n, kept, strict)
			}
		}
		for _, decided := range []map[protoreflect.FullName]string{keptStrict, strictListsAndMaps} {
			for n, why := range decided {
				if !required[n] {
					t.Errorf("%s has a strict decision but is not a REQUIRED repeated or map field (released by an exception: %v)", n, released[n])
				}
				if strings.TrimSpace(why) == "" {
					t.Errorf("%s: decision without its reasoning", n)
				}
			}
		}
		t.Logf("%d REQUIRED repeated/map fields enforced, %d released for a named CO or tool", len(required), len(released))
	})
}

// findAndEmpty finds the field named n in m or in a message below it (first element of lists),
// and sets it to an empty, non-nil list or map. It reports whether it found the field.
func findAndEmpty(m protoreflect.Message, n protoreflect.FullName) bool {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.FullName() == n {
			switch {
			case fd.IsList():
				m.Set(fd, protoreflect.ValueOfList(m.NewField(fd).List()))
			case fd.IsMap():
				m.Set(fd, protoreflect.ValueOfMap(m.NewField(fd).Map()))
			default:
				m.Clear(fd)
			}
			return true
		}
		if fd.Message() == nil || fd.IsMap() || !m.Has(fd) {
			continue
		}
		if fd.IsList() {
			if l := m.Get(fd).List(); l.Len() > 0 && findAndEmpty(l.Get(0).Message(), n) {
				return true
			}
			continue
		}
		if findAndEmpty(m.Mutable(fd).Message(), n) {
			return true
		}
	}
	return false
}

func TestStrictListsAndMapsNeedOneElement(t *testing.T) {
	names := map[protoreflect.FullName]bool{}
	for n := range keptStrict {
		names[n] = true
	}
	for n := range strictListsAndMaps {
		names[n] = true
	}
	for n := range names {
		t.Run(string(n)+" with no element is rejected", func(t *testing.T) {
			for _, set := range []struct {
				msgs  []proto.Message
				check func(proto.Message) error
				code  codes.Code
			}{
				{validRequests(), Request, codes.InvalidArgument},
				{validResponses(), Response, codes.Internal},
			} {
				for _, fixture := range set.msgs {
					m := proto.Clone(fixture)
					if !findAndEmpty(m.ProtoReflect(), n) {
						continue
					}
					err := set.check(m)
					st, _ := status.FromError(err)
					// ".field" inside a path, or the request's own field right after "RPC: ".
					want := string(n.Name()) + ": " + problemMissing
					if msg := st.Message(); st.Code() != set.code || !(strings.HasSuffix(msg, "."+want) || strings.HasSuffix(msg, ": "+want)) {
						t.Fatalf("got %v %q, want %v ending in %q", st.Code(), st.Message(), set.code, want)
					}
					return
				}
			}
			t.Fatalf("no valid fixture holds %s", n)
		})
	}
}

// nomadCreateVolume is the CreateVolumeRequest HashiCorp Nomad (v1.1.0 through v2.0.5) sends for
// `nomad volume create` of a volume specification with one capability block, capacity_min, a
// parameter and a secret, and no topology_request, snapshot_id or clone_id.
// ClientCSIControllerCreateVolumeRequest.ToCSIRequest (client/structs/csi.go) always builds
// AccessibilityRequirements as &TopologyRequirement{Requisite: [], Preferred: []}, and
// TopologyRequirement.ToCSIRepresentation (plugins/csi/plugin.go) turns it into an empty, but
// present, csi.v1.TopologyRequirement: on the wire, field 7 with length 0. Its empty
// VolumeContentSource becomes nil (ToCSIRepresentation returns nil when neither ID is set), and
// capacity_range is left out when both bounds are zero.
func nomadCreateVolume() *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:          "database",
		CapacityRange: &csi.CapacityRange{RequiredBytes: 10 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4", MountFlags: []string{"noatime"}}},
		}},
		Parameters: map[string]string{"type": "gp3"},
		Secrets:    map[string]string{"token": "s3cr3t"},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{},
			Preferred: []*csi.Topology{},
		},
	}
}

func TestLenientNomadCreateVolumeEmptyTopology(t *testing.T) {
	wire, err := proto.Marshal(nomadCreateVolume())
	if err != nil {
		t.Fatal(err)
	}
	// The empty requirement is on the wire (tag 7, wire type 2, length 0), so a plugin sees it
	// as set, not as absent.
	if !bytes.Contains(wire, []byte{7<<3 | 2, 0}) {
		t.Fatalf("Nomad's request does not carry an empty accessibility_requirements: % x", wire)
	}
	var decoded csi.CreateVolumeRequest
	if err := proto.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.AccessibilityRequirements == nil {
		t.Fatal("decoded request lost accessibility_requirements; the test would prove nothing")
	}

	t.Run("Nomad's CreateVolume with an empty requirement is accepted", func(t *testing.T) {
		if err := Request(&decoded); err != nil {
			t.Fatal(err)
		}
		if err := Request(toDynamic(t, &decoded)); err != nil {
			t.Fatalf("dynamicpb: %v", err)
		}
	})
	t.Run("Nomad's CreateVolume reaches the handler over gRPC", func(t *testing.T) {
		p := &fakePlugin{}
		c := csi.NewControllerClient(serve(t, p))
		if _, err := c.CreateVolume(context.Background(), nomadCreateVolume()); err != nil {
			t.Fatal(err)
		}
		if p.calls.Load() != 1 {
			t.Fatalf("handler ran %d times", p.calls.Load())
		}
	})
	t.Run("an empty requirement in CreateSnapshot is accepted too", func(t *testing.T) {
		p := &fakePlugin{}
		c := csi.NewControllerClient(serve(t, p))
		req := &csi.CreateSnapshotRequest{SourceVolumeId: volID, Name: "snap", AccessibilityRequirements: &csi.TopologyRequirement{}}
		if _, err := c.CreateSnapshot(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a Nomad topology_request still gets every topology rule", func(t *testing.T) {
		req := nomadCreateVolume()
		req.AccessibilityRequirements.Requisite = append(req.AccessibilityRequirements.Requisite,
			&csi.Topology{Segments: map[string]string{"Zone/x": "us-east-1a"}})
		wantStatus(t, Request(req), codes.InvalidArgument,
			`CreateVolume: accessibility_requirements.requisite[0].segments["Zone/x"]: topology key prefix must be a lower-case domain name`)
	})
	t.Run("a requirement whose preferred topology is not requisite is still rejected", func(t *testing.T) {
		req := nomadCreateVolume()
		req.AccessibilityRequirements.Requisite = []*csi.Topology{topo("Z1")}
		req.AccessibilityRequirements.Preferred = []*csi.Topology{topo("Z2")}
		wantStatus(t, Request(req), codes.InvalidArgument,
			"CreateVolume: accessibility_requirements.preferred[0]: must also be one of the requisite topologies")
	})
}

// csi-sanity v5.6.0's GroupController specs send these requests, without snapshot_ids, and expect
// OK (delete) and NOT_FOUND (get) for the unknown group "fake-vol-id"; validation must let them
// through to the driver. Leaving out the group ID is still INVALID_ARGUMENT, as those specs also
// expect.
func TestLenientCSISanityGroupSnapshotWithoutSnapshotIDs(t *testing.T) {
	const invalidID = "fake-vol-id" // csi-sanity's DefaultIDGenerator.GenerateInvalidVolumeID
	cases := []struct {
		name string
		msg  proto.Message
		want string // "" means passed on to the driver
	}{
		{"DeleteVolumeGroupSnapshot of an unknown group without snapshot_ids reaches the driver",
			&csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: invalidID}, ""},
		{"GetVolumeGroupSnapshot of an unknown group without snapshot_ids reaches the driver",
			&csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: invalidID}, ""},
		{"DeleteVolumeGroupSnapshot without a group id is rejected",
			&csi.DeleteVolumeGroupSnapshotRequest{}, "DeleteVolumeGroupSnapshot: group_snapshot_id: required field is missing"},
		{"GetVolumeGroupSnapshot without a group id is rejected",
			&csi.GetVolumeGroupSnapshotRequest{}, "GetVolumeGroupSnapshot: group_snapshot_id: required field is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Request(tc.msg)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantStatus(t, err, codes.InvalidArgument, tc.want)
		})
	}
}
