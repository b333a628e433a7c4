package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// fuzzRequest builds one of three CSI requests from fuzzed strings. The same
// strings are deliberately reused in public fields (mount flags, parameters,
// IDs), so a secret value may legitimately appear in the output.
func fuzzRequest(kind uint8, name, k1, v1, k2, v2, pk, pv string) proto.Message {
	secrets := map[string]string{k1: v1, k2: v2}
	switch kind % 3 {
	case 0:
		return &csi.CreateVolumeRequest{
			Name: name,
			VolumeCapabilities: []*csi.VolumeCapability{{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4", MountFlags: []string{pv, name}}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}},
			Parameters:        map[string]string{pk: pv, "pool": name},
			Secrets:           secrets,
			MutableParameters: map[string]string{k1: pv},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
				Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: pk},
			}},
		}
	case 1:
		return &csi.NodePublishVolumeRequest{
			VolumeId:       name,
			PublishContext: map[string]string{k2: name},
			TargetPath:     pk,
			VolumeCapability: &csi.VolumeCapability{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: []string{pv}}},
			},
			Secrets:       secrets,
			VolumeContext: map[string]string{pk: pv},
		}
	default:
		return &csi.ControllerPublishVolumeRequest{
			VolumeId:      name,
			NodeId:        pk,
			Readonly:      true,
			Secrets:       secrets,
			VolumeContext: map[string]string{pk: pv, k2: name},
		}
	}
}

// oracle splits the strings of m into secret values and public text without
// using this package's descriptor logic: a field is secret when it carries
// csi.v1.csi_secret, read with proto.GetExtension; with the heuristic, a
// map<string,string> value under a key that LooksSecret is secret too. Map
// keys, field names and enum names are public.
func oracle(m protoreflect.Message, heuristic bool, secrets, public *[]string) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		*public = append(*public, string(fd.Name()))
		secret := proto.GetExtension(fd.Options(), csi.E_CsiSecret).(bool)
		add := func(s string, secretValue bool) {
			if secretValue {
				*secrets = append(*secrets, s)
			} else {
				*public = append(*public, s)
			}
		}
		scalar := func(fd protoreflect.FieldDescriptor, v protoreflect.Value, secretValue bool) {
			switch fd.Kind() {
			case protoreflect.StringKind:
				add(v.String(), secretValue)
			case protoreflect.EnumKind:
				if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
					*public = append(*public, string(ev.Name()))
				}
			case protoreflect.MessageKind:
				oracle(v.Message(), heuristic, secrets, public)
			}
		}
		switch {
		case fd.FullName() == "csi.v1.VolumeCapability.MountVolume.mount_flags":
			for i := range v.List().Len() {
				oracleOptions(v.List().Get(i).String(), secrets, public)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				*public = append(*public, k.String())
				isStr := fd.MapValue().Kind() == protoreflect.StringKind
				scalar(fd.MapValue(), mv, secret || (heuristic && isStr && LooksSecret(k.String())))
				return true
			})
		case fd.IsList():
			for i := range v.List().Len() {
				scalar(fd, v.List().Get(i), secret)
			}
		default:
			scalar(fd, v, secret)
		}
		return true
	})
}

// oracleOptions splits one mount_flags element the way mount(8) reads an -o list: options are
// separated by commas outside double quotes; in key=value the value (everything after the first
// '=') is secret unless empty; keys and bare flags are public. The public string is the flag
// with every such value replaced by Placeholder: what a reader may see, separators included.
func oracleOptions(s string, secrets, public *[]string) {
	var opts []string
	start, quoted := 0, false
	for i, r := range s {
		if r == '"' {
			quoted = !quoted
		}
		if r == ',' && !quoted {
			opts = append(opts, s[start:i])
			start = i + 1
		}
	}
	opts = append(opts, s[start:])
	shown := make([]string, len(opts))
	for i, o := range opts {
		shown[i] = o
		if k, v, _ := strings.Cut(o, "="); v != "" {
			*secrets = append(*secrets, v)
			shown[i] = k + "=" + Placeholder
		}
	}
	*public = append(*public, strings.Join(shown, ","))
}

// zapSafe maps s the way zap's JSON encoder does before a JSON decoder
// reads it back: every byte of invalid UTF-8 becomes U+FFFD.
func zapSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// jsonStrings collects every string in decoded JSON, keys included.
func jsonStrings(v any, out *[]string) {
	switch v := v.(type) {
	case string:
		*out = append(*out, v)
	case []any:
		for _, e := range v {
			jsonStrings(e, out)
		}
	case map[string]any:
		for k, e := range v {
			*out = append(*out, k)
			jsonStrings(e, out)
		}
	}
}

// checkNoLeak is the redaction property: a secret value s may appear in the
// redacted output only where it cannot be told apart from public text, that
// is when s is a substring of some public string of the message or of
// Placeholder. Strings are compared as a JSON decoder sees zap's output.
func checkNoLeak(t *testing.T, what string, out any, secrets, public []string) {
	t.Helper()
	var got []string
	jsonStrings(out, &got)
	safePublic := []string{Placeholder}
	for _, p := range public {
		safePublic = append(safePublic, zapSafe(p))
	}
	for _, s := range secrets {
		s = zapSafe(s)
		if s == "" || slices.ContainsFunc(safePublic, func(p string) bool { return strings.Contains(p, s) }) {
			continue
		}
		for _, g := range got {
			if strings.Contains(g, s) {
				t.Fatalf("%s: secret %q leaked in %q", what, s, g)
			}
		}
	}
}

func checkRedaction(t *testing.T, m proto.Message) {
	for _, heuristic := range []bool{false, true} {
		r := NewRedactor(WithHeuristic(heuristic))
		var secrets, public []string
		oracle(m.ProtoReflect(), heuristic, &secrets, &public)
		before := proto.Clone(m)

		// String
		s := r.String(m)
		var fromString any
		if err := json.Unmarshal([]byte(s), &fromString); err != nil {
			t.Fatalf("String is not JSON: %v\n%s", err, s)
		}
		checkNoLeak(t, "String", fromString, secrets, public)

		// A zap JSON log line carries the same object.
		var buf bytes.Buffer
		logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.DebugLevel))
		logger.Debug("call", r.Field("request", m))
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, buf.Bytes())
		}
		checkNoLeak(t, "log line", line["request"], secrets, public)
		if !reflect.DeepEqual(line["request"], fromString) {
			t.Fatalf("log line object differs from String:\n%s\n%s", buf.Bytes(), s)
		}

		// Redact: same public content, every secret value replaced.
		red := r.Redact(m)
		var rs, rp []string
		oracle(red.ProtoReflect(), heuristic, &rs, &rp)
		for _, v := range rs {
			if v != Placeholder {
				t.Fatalf("Redact kept secret value %q", v)
			}
		}
		if len(rs) != len(secrets) || !slices.Equal(sorted(rp), sorted(public)) {
			t.Fatalf("Redact changed the shape or public content:\n%v\n%v", m, red)
		}
		if !proto.Equal(m, before) {
			t.Fatal("Redact or String modified the message")
		}

		// Values: exactly the non-empty secret values.
		var want []string
		for _, v := range secrets {
			if v != "" && !slices.Contains(want, v) {
				want = append(want, v)
			}
		}
		// Values may add the inside of a quoted option value, so an error message that quotes it
		// differently is scrubbed too; nothing else.
		got := r.Values(m)
		for _, v := range want {
			if !slices.Contains(got, v) {
				t.Fatalf("Values = %q, want %q", got, want)
			}
		}
		for _, v := range got {
			if !slices.ContainsFunc(want, func(w string) bool { return strings.Contains(w, v) }) {
				t.Fatalf("Values = %q, want %q", got, want)
			}
		}

		// Scrub: a text made of every secret and public string.
		text := strings.Join(append(slices.Clone(secrets), public...), "|")
		checkScrubbed(t, r.Scrub(text, m), secrets)
	}
}

func checkScrubbed(t *testing.T, out string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && !strings.Contains(Placeholder, s) && strings.Contains(out, s) {
			t.Fatalf("Scrub left %q in %q", s, out)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func FuzzRedact(f *testing.F) {
	f.Add(uint8(0), "pvc-1", "username", "admin", "password", "hunter2", "pool", "gold")
	f.Add(uint8(1), "vol", "password", "pw", "token", "pw", "password", "other")
	f.Add(uint8(2), "v", "a", "same", "b", "same", "same", "same")
	f.Add(uint8(0), "stripped", "k", "strip", "k2", "***", "p", "ped")
	f.Add(uint8(1), "", "", "", "", "", "", "")
	f.Add(uint8(2), "\xff", "k\x00", "\xfe\xff", "\"", "\\\"", "<", "\u2028")
	f.Add(uint8(0), "name", "volume_id", "secrets", "mount_flags", "SINGLE_NODE_WRITER", "x", "y")
	f.Add(uint8(1), "abc", "key", "abcdef", "secret-key", "cdefgh", "encryptionKey", "bcd")
	f.Add(uint8(0), "ro", "k", "v", "k2", "v2", "p", "user=bob,password=hunter2hunter")
	f.Add(uint8(1), "=", "k", "v", "k2", "v2", "p", "=")
	f.Add(uint8(0), "a=,b=c,", "k", "v", "k2", "v2", "p", `context="s0:c1,c2",uid=0`)
	f.Fuzz(func(t *testing.T, kind uint8, name, k1, v1, k2, v2, pk, pv string) {
		m := fuzzRequest(kind, name, k1, v1, k2, v2, pk, pv)
		checkRedaction(t, m)
		checkAgainstReference(t, m)
	})
}

// TestRedactProperty runs the FuzzRedact property over pseudo-random
// requests drawn from a small alphabet, where collisions between secret and
// public strings are frequent.
func TestRedactProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "*", "s", "key", "password", "\xff", "\"", "é", "str", "ipped", "=", ","}
	word := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 500 {
		checkRedaction(t, fuzzRequest(uint8(rng.IntN(3)), word(), word(), word(), word(), word(), word(), word()))
	}
}

func FuzzScrub(f *testing.F) {
	f.Add("login admin:hunter2 failed", "hunter2", "admin", "")
	f.Add("xxabcdefghyy", "abcdef", "cdefgh", "ab")
	f.Add("xy", "x***", "y", "")
	f.Add("yy", "******", "y", "")
	f.Add("aaaa", "aa", "a", "aaa")
	f.Add("nothing here", "zzz", "", "")
	f.Add("", "a", "b", "c")
	f.Fuzz(func(t *testing.T, text, v1, v2, v3 string) {
		m := &csi.NodeStageVolumeRequest{VolumeId: "v", Secrets: map[string]string{"a": v1, "b": v2, "c": v3}}
		out := Scrub(text, m)
		secrets := []string{v1, v2, v3}
		checkScrubbed(t, out, secrets)
		present := slices.ContainsFunc(secrets, func(s string) bool { return s != "" && strings.Contains(text, s) })
		if !present && out != text {
			t.Fatalf("Scrub changed a text holding no secret: %q -> %q", text, out)
		}
	})
}

// TestMountFlagValuesNeverLeak is the mount-flag property: for random option
// lists, no option value appears in the redacted request, its zap log line, or an error message
// or panic report that quotes the flags once scrubbed, whatever the value's length.
func TestMountFlagValuesNeverLeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 24))
	alphabet := []string{"a", "1", "0", "=", "=", ",", ",", "\"", "user", "password", "pw", "ro", "hunter2", "é", "*"}
	word := func() string {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 1000 {
		flags := make([]string, rng.IntN(4))
		for i := range flags {
			flags[i] = word()
		}
		vc := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: flags}}}
		var values, public []string
		for _, f := range flags {
			oracleOptions(f, &values, &public)
		}
		for _, req := range []proto.Message{
			&csi.NodeStageVolumeRequest{VolumeId: "v", VolumeCapability: vc},
			&csi.NodePublishVolumeRequest{VolumeId: "v", VolumeCapability: vc},
			&csi.CreateVolumeRequest{Name: "n", VolumeCapabilities: []*csi.VolumeCapability{vc}},
			&csi.ControllerPublishVolumeRequest{VolumeId: "v", VolumeCapability: vc},
		} {
			checkRedaction(t, req)
			joined := strings.Join(flags, ",")
			for _, text := range []string{
				"mount -o " + joined + " /dev/x /mnt: exit status 32",
				fmt.Sprintf("rpc error: code = Internal desc = mount %v failed: %q", flags, joined),
				fmt.Sprintf("panic: mount options %#v\n\ngoroutine 7 [running]:\nmain.stage(%s)", flags, joined),
			} {
				checkScrubbed(t, ScrubAny(text, req), values)
			}
		}
	}
}

// FuzzMountFlags is TestMountFlagValuesNeverLeak over fuzzed option lists: no option value
// survives in the redacted request, its log line, or a scrubbed error message.
func FuzzMountFlags(f *testing.F) {
	f.Add("user=bob,password=hunter2hunter", "ro")
	f.Add("=", "")
	f.Add(`context="system_u:object_r:container_file_t:s0:c1,c2"`, "uid=0,gid=0")
	f.Add("a=,b=c,", `"x=y,z`)
	f.Fuzz(func(t *testing.T, f1, f2 string) {
		flags := []string{f1, f2}
		var values, public []string
		for _, f := range flags {
			oracleOptions(f, &values, &public)
		}
		req := &csi.NodeStageVolumeRequest{VolumeId: "v", VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: flags}}}}
		checkRedaction(t, req)
		text := fmt.Sprintf("mount -o %s,%s failed: %q %v", f1, f2, flags, flags)
		checkScrubbed(t, Scrub(text, req), values)
	})
}
