package plugin

import (
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Conversions between the CSI wire types and the backend's plain Go types. Maps are shared, not
// copied: the request is not used again after the backend returns.

func capabilityFromCSI(c *csi.VolumeCapability) driver.VolumeCapability {
	out := driver.VolumeCapability{AccessMode: driver.AccessMode(c.GetAccessMode().GetMode())}
	if c.GetBlock() != nil {
		out.Block = true
		return out
	}
	if m := c.GetMount(); m != nil {
		out.FSType = m.GetFsType()
		out.MountFlags = m.GetMountFlags()
		out.MountGroup = m.GetVolumeMountGroup()
	}
	return out
}

func capabilitiesFromCSI(cs []*csi.VolumeCapability) []driver.VolumeCapability {
	if len(cs) == 0 {
		return nil
	}
	out := make([]driver.VolumeCapability, len(cs))
	for i, c := range cs {
		out[i] = capabilityFromCSI(c)
	}
	return out
}

func optionalCapabilityFromCSI(c *csi.VolumeCapability) *driver.VolumeCapability {
	if c == nil {
		return nil
	}
	v := capabilityFromCSI(c)
	return &v
}

func capabilityToCSI(c driver.VolumeCapability) *csi.VolumeCapability {
	out := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{
		Mode: csi.VolumeCapability_AccessMode_Mode(c.AccessMode)}}
	if c.Block {
		out.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
	} else {
		out.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
			FsType: c.FSType, MountFlags: c.MountFlags, VolumeMountGroup: c.MountGroup}}
	}
	return out
}

func capacityFromCSI(r *csi.CapacityRange) driver.CapacityRange {
	return driver.CapacityRange{RequiredBytes: r.GetRequiredBytes(), LimitBytes: r.GetLimitBytes()}
}

func topologiesFromCSI(ts []*csi.Topology) []driver.Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]driver.Topology, len(ts))
	for i, t := range ts {
		out[i] = driver.Topology(t.GetSegments())
	}
	return out
}

func topologiesToCSI(ts []driver.Topology) []*csi.Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*csi.Topology, len(ts))
	for i, t := range ts {
		out[i] = &csi.Topology{Segments: t}
	}
	return out
}

// requirementFromCSI returns nil for a requirement that states nothing: HashiCorp Nomad sends an
// empty accessibility_requirements message on every CreateVolume, which means the same as none
// (see middleware/validation/exceptions.go).
func requirementFromCSI(r *csi.TopologyRequirement) *driver.TopologyRequirement {
	if len(r.GetRequisite()) == 0 && len(r.GetPreferred()) == 0 {
		return nil
	}
	return &driver.TopologyRequirement{Requisite: topologiesFromCSI(r.GetRequisite()), Preferred: topologiesFromCSI(r.GetPreferred())}
}

func sourceFromCSI(s *csi.VolumeContentSource) driver.ContentSource {
	return driver.ContentSource{SnapshotID: s.GetSnapshot().GetSnapshotId(), VolumeID: s.GetVolume().GetVolumeId()}
}

func sourceToCSI(s driver.ContentSource) *csi.VolumeContentSource {
	switch {
	case s.SnapshotID != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: s.SnapshotID}}}
	case s.VolumeID != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: s.VolumeID}}}
	}
	return nil
}

func volumeToCSI(v *driver.Volume) *csi.Volume {
	return &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		VolumeContext:      v.Context,
		ContentSource:      sourceToCSI(v.Source),
		AccessibleTopology: topologiesToCSI(v.AccessibleTopology),
	}
}

func snapshotToCSI(s *driver.Snapshot) *csi.Snapshot {
	out := &csi.Snapshot{
		SnapshotId:         s.ID,
		SourceVolumeId:     s.SourceVolumeID,
		SizeBytes:          s.SizeBytes,
		ReadyToUse:         s.ReadyToUse,
		GroupSnapshotId:    s.GroupSnapshotID,
		AccessibleTopology: topologiesToCSI(s.AccessibleTopology),
	}
	if !s.CreationTime.IsZero() {
		out.CreationTime = timestamppb.New(s.CreationTime)
	}
	return out
}

func groupSnapshotToCSI(g *driver.GroupSnapshot) *csi.VolumeGroupSnapshot {
	out := &csi.VolumeGroupSnapshot{GroupSnapshotId: g.ID, ReadyToUse: g.ReadyToUse}
	if !g.CreationTime.IsZero() {
		out.CreationTime = timestamppb.New(g.CreationTime)
	}
	out.Snapshots = make([]*csi.Snapshot, len(g.Snapshots))
	for i := range g.Snapshots {
		s := g.Snapshots[i]
		if s.GroupSnapshotID == "" {
			s.GroupSnapshotID = g.ID
		}
		if !s.ReadyToUse {
			out.ReadyToUse = false
		}
		out.Snapshots[i] = snapshotToCSI(&s)
	}
	return out
}

func healthToCSI(h *driver.VolumeHealth) *csi.VolumeHealth {
	out := &csi.VolumeHealth{VolumeId: h.VolumeID}
	for _, c := range h.Conditions {
		out.HealthStatuses = append(out.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// maxString is the CSI size limit of a string field, which binds responses too.
const maxString = 128

// fitString cuts free text (a message field) to the CSI string limit on a character boundary.
func fitString(s string) string {
	if len(s) <= maxString {
		return s
	}
	const ellipsis = "…"
	cut := maxString - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
