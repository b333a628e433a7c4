package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Output formats.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// none fills an empty table cell, as kubectl does, so columns never collapse.
const none = "<none>"

// table is a tabwriter with a row helper; it must be flushed.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)}
}

// newStreamTable is a table flushed once per streamed message. Each flush aligns only its own
// rows, so the columns get a fixed minimum width that fits any offset up to a petabyte and the
// rows of successive messages line up.
func newStreamTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 16, 8, 2, ' ', 0)}
}

func (t *table) row(cols ...string) {
	for i, c := range cols {
		if c == "" {
			cols[i] = none
		}
	}
	fmt.Fprintln(t.tw, strings.Join(cols, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// print writes one response in the chosen format; fill draws it as a table.
func (a *app) print(msg proto.Message, fill func(*table)) error {
	if a.output == outputTable {
		t := newTable(a.stdout)
		fill(t)
		if err := t.flush(); err != nil {
			return callError{fmt.Errorf("write output: %w", err)}
		}
		return nil
	}
	b, err := encode(msg, a.output)
	if err != nil {
		return callError{err}
	}
	if _, err := a.stdout.Write(b); err != nil {
		return callError{fmt.Errorf("write output: %w", err)}
	}
	return nil
}

// done reports a call whose response carries nothing (delete, unpublish...): a sentence in a
// table, the empty message in json or yaml so that scripts always get a document.
func (a *app) done(msg proto.Message, format string, args ...any) error {
	return a.print(msg, func(t *table) { fmt.Fprintf(t.tw, format+"\n", args...) })
}

// encode renders msg as protojson with the proto field names, or as YAML converted from that
// JSON, so both formats name fields the same way (volume_id, not volumeId).
func encode(msg proto.Message, format string) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", msg.ProtoReflect().Descriptor().FullName(), err)
	}
	// protojson deliberately varies its whitespace between builds so nobody depends on it;
	// re-indenting with encoding/json gives output that is stable (and diffable).
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return nil, fmt.Errorf("indent json: %w", err)
	}
	buf.WriteByte('\n')
	if format == outputJSON {
		return buf.Bytes(), nil
	}
	return jsonToYAML(buf.Bytes())
}

// jsonToYAML converts a JSON document to block-style YAML, keeping the key order. Going
// through yaml.Node rather than a Go map is what keeps the order.
func jsonToYAML(js []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(js, &n); err != nil {
		return nil, fmt.Errorf("convert json to yaml: %w", err)
	}
	blockStyle(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return buf.Bytes(), nil
}

// blockStyle clears the flow and quoting styles the JSON syntax left on every node, so the
// encoder picks plain YAML and quotes only what needs it (e.g. "1073741824", a string in
// protojson, stays quoted so it reads back as a string).
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// Cell formatters.

func kv(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func topologies(ts []*csi.Topology) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, kv(t.GetSegments()))
	}
	return strings.Join(parts, ";")
}

func when(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

func yesNo(b bool) string { return strconv.FormatBool(b) }

func source(s *csi.VolumeContentSource) string {
	switch {
	case s.GetSnapshot() != nil:
		return "snapshot:" + s.GetSnapshot().GetSnapshotId()
	case s.GetVolume() != nil:
		return "volume:" + s.GetVolume().GetVolumeId()
	}
	return ""
}

// capability renders a VolumeCapability in the --cap syntax, so a table cell can be pasted back
// into a command line.
func capability(c *csi.VolumeCapability) string {
	var parts []string
	if m := c.GetMount(); m != nil {
		parts = append(parts, "mount")
		if m.GetFsType() != "" {
			parts = append(parts, m.GetFsType())
		}
		for _, f := range m.GetMountFlags() {
			parts = append(parts, "flag="+f)
		}
		if m.GetVolumeMountGroup() != "" {
			parts = append(parts, "group="+m.GetVolumeMountGroup())
		}
	} else if c.GetBlock() != nil {
		parts = append(parts, "block")
	}
	if mode := c.GetAccessMode().GetMode(); mode != csi.VolumeCapability_AccessMode_UNKNOWN {
		parts = append(parts, strings.ReplaceAll(strings.ToLower(mode.String()), "_", "-"))
	}
	return strings.Join(parts, ",")
}

func capabilities(cs []*csi.VolumeCapability) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, capability(c))
	}
	return strings.Join(parts, ";")
}

func volumeHeader(t *table) { t.row("ID", "CAPACITY", "SOURCE", "TOPOLOGY", "CONTEXT") }

func volumeRow(t *table, v *csi.Volume) {
	t.row(v.GetVolumeId(), formatSize(v.GetCapacityBytes()), source(v.GetContentSource()), topologies(v.GetAccessibleTopology()), kv(v.GetVolumeContext()))
}

func snapshotHeader(t *table) {
	t.row("ID", "SOURCE", "SIZE", "CREATED", "READY", "GROUP")
}

func snapshotRow(t *table, s *csi.Snapshot) {
	t.row(s.GetSnapshotId(), s.GetSourceVolumeId(), formatSize(s.GetSizeBytes()), when(s.GetCreationTime()), yesNo(s.GetReadyToUse()), s.GetGroupSnapshotId())
}

func healthHeader(t *table) { t.row("VOLUME", "STATUS", "REASON", "MESSAGE") }

// healthRows prints one row per health entry; a volume with none is healthy and says so.
func healthRows(t *table, h *csi.VolumeHealth) {
	if len(h.GetHealthStatuses()) == 0 {
		t.row(h.GetVolumeId(), "OK", "", "")
		return
	}
	for _, e := range h.GetHealthStatuses() {
		t.row(h.GetVolumeId(), e.GetStatus().String(), e.GetReason(), e.GetMessage())
	}
}
