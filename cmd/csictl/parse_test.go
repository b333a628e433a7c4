package main

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
)

func TestParseCap(t *testing.T) {
	mount := func(fs string, mode csi.VolumeCapability_AccessMode_Mode, flags ...string) *csi.VolumeCapability {
		return &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs, MountFlags: flags}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		}
	}
	block := func(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
		return &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
		}
	}
	for _, tc := range []struct {
		name, in string
		want     *csi.VolumeCapability
		err      string
	}{
		{"mount with fstype and mode", "mount,ext4,single-node-writer", mount("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), ""},
		{"items in any order", "single-node-writer,ext4,mount", mount("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), ""},
		{"access type defaults to mount", "rwo", mount("", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), ""},
		{"kubernetes abbreviations", "block,rwop", block(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER), ""},
		{"case-insensitive keywords", "BLOCK,Multi-Node-Multi-Writer", block(csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER), ""},
		{"mount flags repeat", "mount,xfs,flag=noatime,flag=nodev,rox", mount("xfs", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, "noatime", "nodev"), ""},
		{"an access mode is required", "mount,ext4", nil, "no access mode"},
		{"one access mode only", "rwo,rwx", nil, "access mode given twice"},
		{"one access type only", "mount,block,rwo", nil, "access type given twice"},
		{"one fstype only", "mount,ext4,xfs,rwo", nil, "already"},
		{"block takes no fstype", "block,ext4,rwo", nil, "block volume takes no"},
		{"block takes no mount flags", "block,flag=ro,rwo", nil, "block volume takes no"},
		{"unknown option", "mount,size=1,rwo", nil, "unknown option"},
		{"empty item", "mount,,rwo", nil, "empty item"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCap(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseCap(%q) error = %v, want one containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseCap(%q): %v", tc.in, err)
			}
			if !proto.Equal(got, tc.want) {
				t.Errorf("parseCap(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"0", 0, false},
		{"1048576", 1 << 20, false},
		{"1Gi", 1 << 30, false},
		{"512Mi", 512 << 20, false},
		{"1Ki", 1024, false},
		{"2Ti", 2 << 40, false},
		{"1G", 1e9, false},
		{"1k", 1000, false},
		{"1K", 1000, false},
		{"10M", 10e6, false},
		{"1GiB", 1 << 30, false},
		{"1GB", 1e9, false},
		{"7Ei", 7 << 60, false},
		{"8Ei", 0, true}, // overflows int64
		{"1.5Gi", 0, true},
		{"-1Gi", 0, true},
		{"+1Gi", 0, true},
		{"Gi", 0, true},
		{"", 0, true},
		{"1Xi", 0, true},
		{"1 Gi", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if tc.err {
				if err == nil {
					t.Fatalf("parseSize(%q) = %d, want an error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1, "1"},
		{1000, "1000"}, // decimal sizes stay exact bytes, never rounded
		{1024, "1Ki"},
		{1536, "1536"},
		{3 << 30, "3Gi"},
		{1<<30 + 1<<20, "1025Mi"},
	} {
		if got := formatSize(tc.in); got != tc.want {
			t.Errorf("formatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
		if back, err := parseSize(formatSize(tc.in)); err != nil || back != tc.in {
			t.Errorf("parseSize(formatSize(%d)) = %d, %v", tc.in, back, err)
		}
	}
}

func TestParseMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want map[string]string
		err  string
	}{
		{"none is nil", nil, nil, ""},
		{"pairs", []string{"a=1", "b=x=y"}, map[string]string{"a": "1", "b": "x=y"}, ""},
		{"empty value allowed", []string{"a="}, map[string]string{"a": ""}, ""},
		{"commas kept in values", []string{"list=a,b"}, map[string]string{"list": "a,b"}, ""},
		{"no equals sign", []string{"a"}, nil, "want key=value"},
		{"empty key", []string{"=1"}, nil, "want key=value"},
		{"repeated key is refused", []string{"a=1", "a=2"}, nil, "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMap("param", tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("parseMap(%v) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("[%q] = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestParseSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		err      bool
	}{
		{"yaml", "user: admin\npass: p4ss\n", map[string]string{"user": "admin", "pass": "p4ss"}, false},
		{"json", `{"user":"admin","pass":"p4ss"}`, map[string]string{"user": "admin", "pass": "p4ss"}, false},
		{"numbers read as text", "pin: 0123\n", map[string]string{"pin": "0123"}, false},
		{"empty file", "", nil, false},
		{"a list is no map", "- p4ss\n", nil, true},
		{"nested map", "a:\n  b: p4ss\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSecrets([]byte(tc.in))
			if tc.err {
				if err == nil {
					t.Fatalf("parseSecrets(%q) = %v, want an error", tc.in, got)
				}
				// The parser's message would quote the value; ours must not.
				if strings.Contains(err.Error(), "p4ss") {
					t.Errorf("error quotes the secret: %v", err)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("parseSecrets(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("[%q] = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestJSONToYAML(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"keys keep their order", `{"b": 1, "a": 2}`, "b: 1\na: 2\n"},
		{"numeric strings stay strings", `{"capacity_bytes": "1073741824"}`, "capacity_bytes: \"1073741824\"\n"},
		{"nested block style", `{"v": {"ids": ["x", "z"]}}`, "v:\n  ids:\n    - x\n    - z\n"},
		{"empty object", `{}`, "{}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := jsonToYAML([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("jsonToYAML(%s) =\n%s\nwant\n%s", tc.in, got, tc.want)
			}
		})
	}
}
