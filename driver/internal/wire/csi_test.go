package wire_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/internal/wire"
)

// TestCapabilityRoundTrip is the differential test of the two directions: a contract capability
// written as CSI and read back is the same, and a CSI capability read and written back is the
// same message.
func TestCapabilityRoundTrip(t *testing.T) {
	for _, c := range []driver.VolumeCapability{
		{AccessMode: driver.SingleNodeWriter, Block: true},
		{AccessMode: driver.MultiNodeMultiWriter, FSType: "ext4", MountFlags: []string{"ro", "noatime"}, MountGroup: "1000"},
		{AccessMode: driver.SingleNodeReaderOnly},
	} {
		if back := wire.CapabilityFromCSI(wire.CSICapability(c)); !reflect.DeepEqual(back, c) {
			t.Errorf("%+v came back as %+v", c, back)
		}
	}
	for name, m := range map[string]*csi.VolumeCapability{
		"block": {AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}},
		"mount": {AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY},
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: "xfs", MountFlags: []string{"ro"}}}},
	} {
		if back := wire.CSICapability(wire.CapabilityFromCSI(m)); !proto.Equal(back, m) {
			t.Errorf("%s: %v came back as %v", name, m, back)
		}
	}
}

// TestCapabilitiesFromCSI: the list and optional forms keep nil for nothing.
func TestCapabilitiesFromCSI(t *testing.T) {
	if got := wire.CapabilitiesFromCSI(nil); got != nil {
		t.Errorf("no capabilities read as %v", got)
	}
	if got := wire.OptionalCapabilityFromCSI(nil); got != nil {
		t.Errorf("a missing capability read as %+v", got)
	}
	block := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
	if got := wire.OptionalCapabilityFromCSI(block); got == nil || !got.Block {
		t.Errorf("a block capability read as %+v", got)
	}
	if got := wire.CapabilitiesFromCSI([]*csi.VolumeCapability{block, block}); len(got) != 2 || !got[1].Block {
		t.Errorf("two block capabilities read as %+v", got)
	}
}

// TestTopologyAndSourceRoundTrip: topologies and content sources survive both directions, and
// their empty forms are nil on the wire.
func TestTopologyAndSourceRoundTrip(t *testing.T) {
	for _, ts := range [][]driver.Topology{nil, {{"zone": "a"}, {"zone": "b", "rack": "1"}}} {
		if back := wire.TopologiesFromCSI(wire.CSITopologies(ts)); !reflect.DeepEqual(back, ts) {
			t.Errorf("%v came back as %v", ts, back)
		}
	}
	for _, s := range []driver.ContentSource{{}, {SnapshotID: "snap-1"}, {VolumeID: "vol-1"}} {
		w := wire.CSIContentSource(s)
		if (w == nil) != (s == driver.ContentSource{}) {
			t.Errorf("%+v written as %v", s, w)
		}
		if back := wire.ContentSourceFromCSI(w); back != s {
			t.Errorf("%+v came back as %+v", s, back)
		}
	}
}

// TestRequirementFromCSI: a requirement that names no topology is none (Nomad sends one empty).
func TestRequirementFromCSI(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *csi.TopologyRequirement
		want *driver.TopologyRequirement
	}{
		{"missing", nil, nil},
		{"empty", &csi.TopologyRequirement{}, nil},
		{"requisite", &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{"zone": "a"}}}},
			&driver.TopologyRequirement{Requisite: []driver.Topology{{"zone": "a"}}}},
		{"preferred", &csi.TopologyRequirement{Preferred: []*csi.Topology{{Segments: map[string]string{"zone": "b"}}}},
			&driver.TopologyRequirement{Preferred: []driver.Topology{{"zone": "b"}}}},
	} {
		if got := wire.RequirementFromCSI(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestCSIAnswers: volumes, snapshots, group snapshots and health as the RPCs answer them.
func TestCSIAnswers(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	vol := wire.CSIVolume(&driver.Volume{ID: "v", CapacityBytes: 5, Context: map[string]string{"k": "v"},
		Source: driver.ContentSource{VolumeID: "src"}, AccessibleTopology: []driver.Topology{{"zone": "a"}}})
	if vol.GetVolumeId() != "v" || vol.GetCapacityBytes() != 5 || vol.GetVolumeContext()["k"] != "v" ||
		vol.GetContentSource().GetVolume().GetVolumeId() != "src" || vol.GetAccessibleTopology()[0].GetSegments()["zone"] != "a" {
		t.Errorf("volume written as %v", vol)
	}
	if s := wire.CSISnapshot(&driver.Snapshot{ID: "s"}); s.GetCreationTime() != nil {
		t.Errorf("a zero creation time was sent: %v", s)
	}
	if s := wire.CSISnapshot(&driver.Snapshot{ID: "s", CreationTime: when}); !s.GetCreationTime().AsTime().Equal(when) {
		t.Errorf("creation time written as %v", s.GetCreationTime())
	}
	for _, tc := range []struct {
		name      string
		members   []driver.Snapshot
		wantReady bool
	}{
		{"all ready", []driver.Snapshot{{ID: "a", ReadyToUse: true}, {ID: "b", ReadyToUse: true, GroupSnapshotID: "g"}}, true},
		{"one not ready", []driver.Snapshot{{ID: "a", ReadyToUse: true}, {ID: "b"}}, false},
		{"no members", nil, true},
	} {
		g := wire.CSIGroupSnapshot(&driver.GroupSnapshot{ID: "g", ReadyToUse: true, CreationTime: when, Snapshots: tc.members})
		if g.GetReadyToUse() != tc.wantReady || len(g.GetSnapshots()) != len(tc.members) {
			t.Errorf("%s: written as %v", tc.name, g)
		}
		for _, s := range g.GetSnapshots() {
			if s.GetGroupSnapshotId() != "g" {
				t.Errorf("%s: member %s does not name its group", tc.name, s.GetSnapshotId())
			}
		}
	}
	h := wire.CSIHealth(&driver.VolumeHealth{VolumeID: "v", Conditions: []driver.HealthCondition{{Reason: "r", Message: "m"}}})
	if h.GetVolumeId() != "v" || len(h.GetHealthStatuses()) != 1 || h.GetHealthStatuses()[0].GetReason() != "r" {
		t.Errorf("health written as %v", h)
	}
}
