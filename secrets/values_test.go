package secrets

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
)

func TestValues(t *testing.T) {
	tests := []struct {
		name string
		r    *Redactor
		msg  proto.Message
		want []string
	}{
		{"typical", nil, typicalCreateVolume(), []string{"hunter2-s3cr3t", "admin"}},
		{"duplicates and empties", nil, &csi.NodeStageVolumeRequest{Secrets: map[string]string{"a": "x", "b": "x", "c": ""}}, []string{"x"}},
		{"no secrets in type", nil, &csi.Topology{Segments: map[string]string{"zone": "a"}}, nil},
		{"secret type, none set", nil, &csi.CreateVolumeRequest{Name: "n"}, nil},
		{"heuristic off", nil, &csi.NodePublishVolumeRequest{VolumeContext: map[string]string{"password": "pw"}}, nil},
		{"heuristic on", NewRedactor(WithHeuristic(true)), &csi.NodePublishVolumeRequest{
			VolumeContext: map[string]string{"password": "pw", "size": "1Gi"}, Secrets: map[string]string{"k": "sec"},
		}, []string{"sec", "pw"}},
		{"all kinds", nil, allMessage(), []string{"anysecret", "note2", "noteZ", "ptok", "tok2", "tokA", "tokB", "tokZ", "tok", "sb", "x1", "x2"}},
		{"nil", nil, nil, nil},
		{"typed nil", nil, (*csi.CreateVolumeRequest)(nil), nil},
	}
	for _, tt := range tests {
		if got := tt.r.Values(tt.msg); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Values = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestScrub(t *testing.T) {
	overlap := &csi.NodeStageVolumeRequest{Secrets: map[string]string{"a": "abcdef", "b": "cdefgh", "c": "ab"}}
	tests := []struct {
		name string
		text string
		msg  proto.Message
		want string
	}{
		{"typical", "login admin:hunter2-s3cr3t failed", typicalCreateVolume(), "login ***stripped***:***stripped*** failed"},
		{"none present", "volume not found", typicalCreateVolume(), "volume not found"},
		{"no secrets in type", "zone a", &csi.Topology{Segments: map[string]string{"zone": "a"}}, "zone a"},
		{"overlapping values merge", "xxabcdefghyy", overlap, "xx***stripped***yy"},
		{"touching values merge", "abcdefcdefgh!", overlap, "***stripped***!"},
		{"repeated", "ab ab ab", overlap, "***stripped*** ***stripped*** ***stripped***"},
		{"self-overlapping", "aaaaa", &csi.NodeStageVolumeRequest{Secrets: map[string]string{"a": "aa"}}, "***stripped***"},
		{"empty text", "", typicalCreateVolume(), ""},
		{"nil message", "hunter2", nil, "hunter2"},
	}
	for _, tt := range tests {
		if got := Scrub(tt.text, tt.msg); got != tt.want {
			t.Errorf("%s: Scrub = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestScrubValuesStraddle covers a value that only appears once a
// Placeholder has been inserted next to original text.
func TestScrubValuesStraddle(t *testing.T) {
	tests := []struct {
		text string
		vals []string
		want string
	}{
		{"xy", []string{"x***", "y"}, Placeholder},
		{"ay", []string{"y", "***s"}, "a" + Placeholder},       // inside the placeholder: allowed
		{"yy", []string{"******", "y"}, Placeholder},           // adjacent placeholders merge
		{"q y q", []string{"y", "d*** q"}, "q " + Placeholder}, // straddles the end
		{"hello", []string{"", "zzz"}, "hello"},                // empty and absent values
		{"ab", []string{"b", "a***stripped***"}, Placeholder},  // needs a second round
		{"abc", []string{"bc", "a***s"}, Placeholder},          // merged across rounds
	}
	for _, tt := range tests {
		if got := scrubValues(tt.text, tt.vals); got != tt.want {
			t.Errorf("scrubValues(%q, %q) = %q, want %q", tt.text, tt.vals, got, tt.want)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so pooled walkers allocate")
	}
	req := typicalCreateVolume()
	topo := &csi.Topology{Segments: map[string]string{"zone": "a"}}
	_ = String(req) // build the plans
	_ = Values(topo)
	tests := []struct {
		name string
		fn   func()
	}{
		{"Values without secret fields", func() { _ = Values(topo) }},
		{"Scrub without secret fields", func() { _ = Scrub("zone a", topo) }},
		{"HasSecrets", func() { _ = HasSecrets(req.ProtoReflect().Descriptor()) }},
		{"IsSecretField", func() { _ = IsSecretField(fieldOf(req, "secrets")) }},
		{"LooksSecret", func() { _ = LooksSecret("encryptionKey") }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.fn); n != 0 {
			t.Errorf("%s: %v allocations per call", tt.name, n)
		}
	}
}

// TestScrubCleanAllocations: scrubbing a text that holds no secret allocates nothing of its own,
// only protoreflect's view of the secrets map (one) and its copy of each entry's key and value
// (two per entry) as the map is ranged over. The request without capabilities is used, since
// searching mount options reads the capability and flag lists too.
func TestScrubCleanAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so pooled walkers allocate")
	}
	noFlags := typicalCreateVolume()
	noFlags.VolumeCapabilities = nil
	_ = Scrub("volume not found", noFlags)
	limit := float64(1 + 2*len(noFlags.Secrets))
	if n := testing.AllocsPerRun(100, func() { _ = Scrub("volume not found", noFlags) }); n > limit {
		t.Errorf("Scrub with no secret in text: %v allocations per call, want at most %v", n, limit)
	}
}

func TestMountOptionValuesAreSensitive(t *testing.T) {
	tests := []struct {
		name     string
		flags    []string
		redacted []string // what String and Redact show
		values   []string // what Values returns, longest first
	}{
		{"bare flags stay readable", []string{"ro", "noatime"}, []string{"ro", "noatime"}, nil},
		{"a key=value option hides its value and keeps its key",
			[]string{"password=hunter2"}, []string{"password=" + Placeholder}, []string{"hunter2"}},
		{"every option of a comma-separated list hides its own value",
			[]string{"user=bob,password=hunter2hunter"},
			[]string{"user=" + Placeholder + ",password=" + Placeholder}, []string{"hunter2hunter", "bob"}},
		{"short values are secret too", []string{"uid=1", "x=ab"},
			[]string{"uid=" + Placeholder, "x=" + Placeholder}, []string{"ab", "1"}},
		{"an empty value has nothing to hide and keeps the shape", []string{"=", "key=", "a=,b=c,"},
			[]string{"=", "key=", "a=,b=" + Placeholder + ","}, []string{"c"}},
		{"a value holding = is one value", []string{"opts=a=b"}, []string{"opts=" + Placeholder}, []string{"a=b"}},
		{"a quoted value's commas do not split it", []string{`context="u:r:t:s0:c1,c2",ro`},
			[]string{"context=" + Placeholder + ",ro"}, []string{`"u:r:t:s0:c1,c2"`, "u:r:t:s0:c1,c2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", VolumeCapability: &csi.VolumeCapability{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: tt.flags}}}}
			want, err := json.Marshal(tt.redacted)
			if err != nil {
				t.Fatal(err)
			}
			if text := String(req); !strings.Contains(text, `"mount_flags":`+string(want)) {
				t.Errorf("String = %s, want mount_flags %s", text, want)
			}
			red := Redact(req).(*csi.NodePublishVolumeRequest)
			if got := red.GetVolumeCapability().GetMount().GetMountFlags(); !slices.Equal(got, tt.redacted) {
				t.Errorf("Redact flags = %q, want %q", got, tt.redacted)
			}
			if got := Values(req); !slices.Equal(got, tt.values) {
				t.Errorf("Values = %q, want %q", got, tt.values)
			}
			text := "mount -o " + strings.Join(tt.flags, ",") + " failed"
			got := Scrub(text, req)
			for _, v := range tt.values {
				if strings.Contains(got, v) {
					t.Errorf("Scrub(%q) = %q: %q survived", text, got, v)
				}
			}
			if len(tt.values) == 0 && got != text {
				t.Errorf("Scrub(%q) = %q, changed a text with no secret", text, got)
			}
		})
	}
}

func TestScrubFindsQuotedForms(t *testing.T) {
	for _, secret := range []string{`pa"ss\word`, "pässwörd-ünïcode", "tab\there", "<html>&amp;"} {
		req := &csi.NodeStageVolumeRequest{Secrets: map[string]string{"password": secret}}
		for _, text := range []string{
			fmt.Sprintf("login %q failed", secret),
			fmt.Sprintf("login %+q failed", secret),
			fmt.Sprintf("login %s failed", mustJSON(t, secret)),
			"login " + secret + " failed",
		} {
			got := Scrub(text, req)
			if strings.Contains(got, secret) || !strings.Contains(got, Placeholder) {
				t.Errorf("Scrub(%q) = %q: the quoted secret survived", text, got)
			}
			for _, form := range escapedForms(secret) {
				if strings.Contains(got, form) {
					t.Errorf("Scrub(%q) = %q: the escaped form %q survived", text, got, form)
				}
			}
		}
	}
}

func mustJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
