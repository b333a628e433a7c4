package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.yaml.in/yaml/v3"
)

// accessModes maps the spellings --cap accepts to CSI access modes: the spec's names in
// lower-case kebab form, plus the Kubernetes abbreviations people already type.
var accessModes = map[string]csi.VolumeCapability_AccessMode_Mode{
	"single-node-writer":        csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	"single-node-reader-only":   csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
	"multi-node-reader-only":    csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
	"multi-node-single-writer":  csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
	"multi-node-multi-writer":   csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
	"single-node-single-writer": csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
	"single-node-multi-writer":  csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER,
	"rwo":                       csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
	"rox":                       csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
	"rwx":                       csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
	"rwop":                      csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
}

// capHelp documents the --cap syntax once for every command that takes it.
const capHelp = `volume capability: [mount|block],MODE[,FSTYPE][,flag=MOUNT_FLAG...][,group=GID]; ` +
	`MODE is single-node-writer, single-node-reader-only, multi-node-reader-only, multi-node-single-writer, ` +
	`multi-node-multi-writer, single-node-single-writer, single-node-multi-writer (or rwo, rox, rwx, rwop); ` +
	`the access type defaults to mount`

// parseCap parses one --cap value such as "mount,ext4,single-node-writer" or
// "block,rwx". Items may come in any order; an access mode is required because the spec
// requires one in every capability, and it is better refused here than by the plugin.
func parseCap(s string) (*csi.VolumeCapability, error) {
	var (
		kind, fsType, group string
		flags               []string
		mode                csi.VolumeCapability_AccessMode_Mode
	)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		lower := strings.ToLower(item)
		switch {
		case item == "":
			return nil, fmt.Errorf("capability %q: empty item", s)
		case lower == "mount" || lower == "block":
			if kind != "" {
				return nil, fmt.Errorf("capability %q: access type given twice", s)
			}
			kind = lower
		case accessModes[lower] != 0:
			if mode != 0 {
				return nil, fmt.Errorf("capability %q: access mode given twice", s)
			}
			mode = accessModes[lower]
		case strings.HasPrefix(item, "flag="):
			flags = append(flags, strings.TrimPrefix(item, "flag="))
		case strings.HasPrefix(item, "group="):
			group = strings.TrimPrefix(item, "group=")
		case strings.Contains(item, "="):
			return nil, fmt.Errorf("capability %q: unknown option %q (want flag= or group=)", s, item)
		default:
			if fsType != "" {
				return nil, fmt.Errorf("capability %q: %q is not an access mode, and the filesystem type is already %q", s, item, fsType)
			}
			fsType = item
		}
	}
	if mode == 0 {
		return nil, fmt.Errorf("capability %q: no access mode (e.g. single-node-writer)", s)
	}
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if kind == "block" {
		if fsType != "" || len(flags) > 0 || group != "" {
			return nil, fmt.Errorf("capability %q: a block volume takes no filesystem type, mount flags or group", s)
		}
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		return c, nil
	}
	c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
		FsType: fsType, MountFlags: flags, VolumeMountGroup: group,
	}}
	return c, nil
}

// parseCaps parses every --cap value, requiring at least one when required is set.
func parseCaps(values []string, required bool) ([]*csi.VolumeCapability, error) {
	if required && len(values) == 0 {
		return nil, errors.New("at least one --cap is required")
	}
	out := make([]*csi.VolumeCapability, 0, len(values))
	for _, v := range values {
		c, err := parseCap(v)
		if err != nil {
			return nil, fmt.Errorf("--cap: %w", err)
		}
		out = append(out, c)
	}
	return out, nil
}

// sizeUnits are the suffixes parseSize accepts: binary (Ki, Mi, ...) as Kubernetes writes
// quantities, and decimal (K or k, M, G, ...). A trailing "B" is tolerated ("1GiB", "1GB").
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// parseSize parses a byte count: "1Gi", "512Mi", "1G", "1048576". Only whole numbers: a
// fractional size ("1.5Gi") would have to be rounded, and rounding a capacity silently is how
// a volume ends up a byte too small.
func parseSize(s string) (int64, error) {
	num := strings.TrimSpace(s)
	num = strings.TrimSuffix(num, "B")
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || num == "" || num[0] == '+' || num[0] == '-' {
		return 0, fmt.Errorf("invalid size %q: want a whole number of bytes with an optional unit, e.g. 1Gi, 512Mi, 1G or 1048576", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// formatSize prints a byte count exactly, in the largest binary unit that divides it, so a
// table shows 1Gi for 1073741824 without ever rounding.
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for i := len(sizeUnits[:6]) - 1; i >= 0; i-- {
		u := sizeUnits[i]
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// capacityRange turns --size and --limit into a CapacityRange; nil when neither is set.
func capacityRange(size, limit string) (*csi.CapacityRange, error) {
	if size == "" && limit == "" {
		return nil, nil
	}
	r := &csi.CapacityRange{}
	var err error
	if size != "" {
		if r.RequiredBytes, err = parseSize(size); err != nil {
			return nil, fmt.Errorf("--size: %w", err)
		}
	}
	if limit != "" {
		if r.LimitBytes, err = parseSize(limit); err != nil {
			return nil, fmt.Errorf("--limit: %w", err)
		}
	}
	if r.LimitBytes != 0 && r.RequiredBytes > r.LimitBytes {
		return nil, fmt.Errorf("--size %s is larger than --limit %s", size, limit)
	}
	return r, nil
}

// parseMap parses repeated key=value flags. A repeated key is an error rather than "last one
// wins", because a typo that silently drops a parameter is worse than a refusal.
func parseMap(flag string, values []string) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(values))
	for _, kv := range values {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--%s %q: want key=value", flag, kv)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("--%s: key %q given twice", flag, k)
		}
		m[k] = v
	}
	return m, nil
}

// parseTopology parses one topology flag value, "zone=a" or "zone=a,rack=r1": each value is one
// csi.Topology with one or more segments.
func parseTopology(flag, s string) (*csi.Topology, error) {
	seg, err := parseMap(flag, strings.Split(s, ","))
	if err != nil {
		return nil, err
	}
	return &csi.Topology{Segments: seg}, nil
}

func parseTopologies(flag string, values []string) ([]*csi.Topology, error) {
	var out []*csi.Topology
	for _, v := range values {
		t, err := parseTopology(flag, v)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// parseSecrets reads a secrets file: a YAML or JSON (a subset of YAML) map of string to string.
// The parser's own error is not passed on, because YAML errors quote the offending value and
// that value may be a secret.
func parseSecrets(b []byte) (map[string]string, error) {
	var m map[string]string
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, errors.New("not a YAML or JSON map of string keys to string values")
	}
	for k, v := range m {
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("value of %q is not valid UTF-8", k)
		}
	}
	return m, nil
}
