package validation

import (
	"bytes"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// marker is a valid string that tests replace, on the wire, by invalidBytes of the same length, so
// that every length prefix stays right. proto.Marshal refuses to encode invalid UTF-8 itself.
const (
	marker       = "MARK"
	invalidBytes = "\xff\xfeM\x80"
)

// withInvalidUTF8 marshals m and turns every marker in it into invalid UTF-8.
func withInvalidUTF8(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(marker)) {
		t.Fatal("the message holds no marker")
	}
	return bytes.ReplaceAll(b, []byte(marker), []byte(invalidBytes))
}

func TestInvalidUTF8(t *testing.T) {
	cases := []struct {
		name string
		msg  proto.Message
		want string // "" means no invalid string: nil
	}{
		{"a valid request has no invalid field", validCreateVolume(), ""},
		{"a bad name is named",
			cv(func(r *csi.CreateVolumeRequest) { r.Name = marker }),
			"CreateVolume: name: must be valid UTF-8"},
		{"a bad element of a nested list is named with its indexes",
			cv(func(r *csi.CreateVolumeRequest) {
				r.VolumeCapabilities[0] = mountCap()
				r.VolumeCapabilities[1] = mountCap()
				r.VolumeCapabilities[1].GetMount().MountFlags[1] = marker
			}),
			"CreateVolume: volume_capabilities[1].mount.mount_flags[1]: must be valid UTF-8"},
		{"a bad secret value is named by its key, never shown",
			cv(func(r *csi.CreateVolumeRequest) { r.Secrets = map[string]string{"password": marker} }),
			`CreateVolume: secrets["password"]: must be valid UTF-8`},
		{"a bad map key is named quoted",
			cv(func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{marker: "v"} }),
			`CreateVolume: parameters["\xff\xfeM\x80"]: map key must be valid UTF-8`},
		{"a bad topology value deep down is named",
			cv(func(r *csi.CreateVolumeRequest) {
				r.AccessibilityRequirements = &csi.TopologyRequirement{Preferred: []*csi.Topology{topo("Z1"), topo(marker)}}
			}),
			`CreateVolume: accessibility_requirements.preferred[1].segments["zone"]: must be valid UTF-8`},
		{"a bad path is named",
			np(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "/" + marker }),
			"NodePublishVolume: target_path: must be valid UTF-8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var wire []byte
			if tc.want == "" {
				var err error
				if wire, err = proto.Marshal(tc.msg); err != nil {
					t.Fatal(err)
				}
			} else {
				wire = withInvalidUTF8(t, tc.msg)
			}
			md := tc.msg.ProtoReflect().Descriptor()
			err := InvalidUTF8(md, wire)
			// What protobuf-go itself decides: the helper must agree.
			uerr := proto.Unmarshal(wire, tc.msg.ProtoReflect().New().Interface())
			if tc.want == "" {
				if err != nil || uerr != nil {
					t.Fatalf("InvalidUTF8 %v, Unmarshal %v; want both nil", err, uerr)
				}
				return
			}
			if uerr == nil || !strings.Contains(uerr.Error(), "invalid UTF-8") {
				t.Fatalf("protobuf-go accepted the wire or failed otherwise: %v", uerr)
			}
			st, _ := status.FromError(err)
			if st.Code() != codes.InvalidArgument || st.Message() != tc.want {
				t.Fatalf("got %v %q, want InvalidArgument %q", st.Code(), st.Message(), tc.want)
			}
			if strings.Contains(st.Message(), "MARK") || strings.Contains(st.Message(), "\xff") {
				t.Fatalf("message shows raw bytes: %q", st.Message())
			}
		})
	}
	t.Run("malformed wire finds nothing and does not panic", func(t *testing.T) {
		wire := withInvalidUTF8(t, cv(func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{"k": marker} }))
		for i := range wire {
			_ = InvalidUTF8((&csi.CreateVolumeRequest{}).ProtoReflect().Descriptor(), wire[:i])
		}
		if err := InvalidUTF8(nil, wire); err != nil {
			t.Fatalf("nil descriptor: %v", err)
		}
	})
}

// FuzzInvalidUTF8 holds InvalidUTF8 to protobuf-go's own decision: a message protobuf-go decodes
// has no invalid field, and one it refuses for invalid UTF-8 has one, reported as
// INVALID_ARGUMENT.
func FuzzInvalidUTF8(f *testing.F) {
	types := requestTypes(f)
	for i, mt := range types {
		for _, m := range validRequests() {
			if m.ProtoReflect().Descriptor() != mt.Descriptor() {
				continue
			}
			b, err := proto.Marshal(m)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(append([]byte{byte(i)}, b...))
			f.Add(append([]byte{byte(i)}, bytes.ReplaceAll(b, []byte("a"), []byte("\xff"))...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mt := types[int(data[0])%len(types)]
		md := mt.Descriptor()
		wire := data[1:]
		err := InvalidUTF8(md, wire)
		uerr := proto.Unmarshal(wire, mt.New().Interface())
		switch {
		case uerr == nil && err != nil:
			t.Fatalf("protobuf-go decodes it, yet InvalidUTF8 says %v", err)
		case uerr != nil && strings.Contains(uerr.Error(), "invalid UTF-8") && err == nil:
			t.Fatalf("protobuf-go refuses it (%v), yet InvalidUTF8 finds nothing", uerr)
		case err != nil:
			if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), strings.TrimSuffix(string(md.Name()), "Request")+": ") {
				t.Fatalf("bad status %v %q", st.Code(), st.Message())
			}
		}
	})
}
