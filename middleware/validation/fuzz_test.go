package validation

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// requestTypes lists the input types of every csi.v1 RPC, in a fixed order.
func requestTypes(t testing.TB) []protoreflect.MessageType {
	in, _ := rpcTypes()
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, string(n))
	}
	slices.Sort(names)
	out := make([]protoreflect.MessageType, len(names))
	for i, n := range names {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(n))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = mt
	}
	return out
}

// secretValues collects the values of every secret map in m, nested ones included.
func secretValues(m protoreflect.Message) []string {
	var out []string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if isSecret(fd) {
				v.Map().Range(func(_ protoreflect.MapKey, x protoreflect.Value) bool {
					out = append(out, x.String())
					return true
				})
			} else if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, x protoreflect.Value) bool {
					out = append(out, secretValues(x.Message())...)
					return true
				})
			}
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				out = append(out, secretValues(v.List().Get(i).Message())...)
			}
		case fd.Message() != nil:
			out = append(out, secretValues(v.Message())...)
		}
		return true
	})
	return out
}

// redactSecrets replaces, in place, every secret value by one of the same length and the same
// UTF-8 validity: the only two properties of a secret value that validation may depend on.
func redactSecrets(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			mp := v.Map()
			if isSecret(fd) {
				var keys []protoreflect.MapKey
				mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
					keys = append(keys, k)
					return true
				})
				for _, k := range keys {
					s := mp.Get(k).String()
					r := strings.Repeat("#", len(s))
					if !utf8.ValidString(s) {
						r = "\xff" + r[1:]
					}
					mp.Set(k, protoreflect.ValueOfString(r))
				}
			} else if fd.MapValue().Message() != nil {
				mp.Range(func(_ protoreflect.MapKey, x protoreflect.Value) bool {
					redactSecrets(x.Message())
					return true
				})
			}
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				redactSecrets(v.List().Get(i).Message())
			}
		case fd.Message() != nil:
			redactSecrets(v.Message())
		}
		return true
	})
}

func FuzzRequest(f *testing.F) {
	types := requestTypes(f)
	index := func(m proto.Message) byte {
		for i, mt := range types {
			if mt.Descriptor() == m.ProtoReflect().Descriptor() {
				return byte(i)
			}
		}
		f.Fatalf("%T is not a request type", m)
		return 0
	}
	seeds := validRequests()
	// Requests real COs send that once broke the rules: Nomad's empty topology requirement,
	// kubelet's paths longer than the general string limit.
	seeds = append(seeds, nomadCreateVolume(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: kubeletPodVolumePath, StagingTargetPath: kubeletStagingPath},
		&csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: kubeletPodVolumePath, StagingTargetPath: kubeletStagingPath})
	for _, tc := range requestCases() {
		seeds = append(seeds, tc.msg)
	}
	in, _ := rpcTypes()
	for _, m := range seeds {
		if !in[m.ProtoReflect().Descriptor().FullName()] {
			continue // not a request type (the non-CSI cases)
		}
		b, err := proto.Marshal(m)
		if err != nil {
			continue // invalid UTF-8 in a string field cannot be marshalled
		}
		f.Add(append([]byte{index(m)}, b...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		mt := types[int(data[0])%len(types)]
		m := mt.New().Interface()
		if err := proto.Unmarshal(data[1:], m); err != nil {
			return
		}
		// Neither may panic, and the size limits are a part of the rules: a message that passes
		// Response passes ResponseSizes.
		if Response(m) == nil {
			if err := ResponseSizes(m); err != nil {
				t.Fatalf("Response passes and ResponseSizes refuses: %v", err)
			}
		} else {
			_ = ResponseSizes(m)
		}
		err := Request(m)
		if err == nil {
			return
		}
		st, ok := status.FromError(err)
		if !ok {
			t.Fatalf("not a status: %v", err)
		}
		if st.Code() != codes.InvalidArgument && st.Code() != codes.OutOfRange {
			t.Fatalf("code %v: %s", st.Code(), st.Message())
		}
		if st.Message() == "" || len(st.Proto().GetDetails()) != 0 {
			t.Fatalf("empty message or non-empty details: %v", st.Proto())
		}
		// Secret values never reach the message. Precisely: redacting every secret value (same
		// length, same UTF-8 validity) changes nothing in the status, so the message is a function
		// of non-secret data only; and a secret value of 8 bytes or more appears in the message
		// only if it also appears in the message of the redacted request, i.e. in text that comes
		// from field names, map keys or fixed phrases.
		red := proto.Clone(m)
		redactSecrets(red.ProtoReflect())
		st2 := status.Convert(Request(red))
		if st2.Code() != st.Code() || st2.Message() != st.Message() {
			t.Fatalf("status depends on secret values:\n %v %q\n %v %q", st.Code(), st.Message(), st2.Code(), st2.Message())
		}
		for _, v := range secretValues(m.ProtoReflect()) {
			if len(v) >= 8 && strings.Contains(st.Message(), v) && !strings.Contains(st2.Message(), v) {
				t.Fatalf("message %q echoes secret value %q", st.Message(), v)
			}
		}
	})
}

var (
	reKeyName = regexp.MustCompile(`^[A-Za-z0-9]([-_.A-Za-z0-9]{0,61}[A-Za-z0-9])?$`)
	reLabel   = `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
	rePrefix  = regexp.MustCompile(`^` + reLabel + `(\.` + reLabel + `)*$`)
	reLabelUp = `[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?`
	rePlugin  = regexp.MustCompile(`^` + reLabelUp + `(\.` + reLabelUp + `)*$`)
)

// referenceTopologyKey is the spec's key rule written the slow, obvious way.
func referenceTopologyKey(k string) bool {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name = k
	}
	if hasPrefix && (len(prefix) > 63 || !rePrefix.MatchString(prefix)) {
		return false
	}
	return reKeyName.MatchString(name)
}

func FuzzTopologyKey(f *testing.F) {
	for _, s := range []string{"zone", "topology.kubernetes.io/zone", "a/b/c", "/z", "z/", "A.b/c", "a..b/c", "a-.b/c",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("p", 63) + "/" + strings.Repeat("n", 63), "Zone_1.x-y", "\xff", "z\u00f6ne"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		got := topologyKeyProblem(k) == ""
		if want := referenceTopologyKey(k); got != want {
			t.Fatalf("topologyKeyProblem(%q) valid=%v, reference %v", k, got, want)
		}
		gotV := topologyValueProblem(k) == ""
		if wantV := reKeyName.MatchString(k); gotV != wantV {
			t.Fatalf("topologyValueProblem(%q) valid=%v, reference %v", k, gotV, wantV)
		}
	})
}

// referenceName is the spec's banned-character rule, rune by rune.
func referenceName(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r <= 0x08 || r == 0x0b || r == 0x0c || (r >= 0x0e && r <= 0x1f) || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"pvc-1", "", "a\tb\nc\rd", "a\x00", "\x7f", "\u0080", "\u009f", "\u00a0", "\xc2", "\xc2\x85", "\u4e2d\u6587", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := nameProblem(s) == "", referenceName(s); got != want {
			t.Fatalf("nameProblem(%q) valid=%v, reference %v", s, got, want)
		}
		gotPlugin := PluginName(s) == nil
		wantPlugin := len(s) <= 63 && rePlugin.MatchString(s)
		if gotPlugin != wantPlugin {
			t.Fatalf("PluginName(%q) valid=%v, reference %v", s, gotPlugin, wantPlugin)
		}
		if err := PluginName(s); err != nil && len(s) >= 4 && strings.Contains(err.Error(), s) {
			t.Fatalf("PluginName error echoes the name: %v", err)
		}
		wantSecret := s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
		if isSecretKey(s) != wantSecret {
			t.Fatalf("isSecretKey(%q) = %v", s, !wantSecret)
		}
	})
}
