package wire

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/csikit/csikit/driver"
)

// CapabilityFromCSI reads a volume capability; a block capability carries no mount fields.
func CapabilityFromCSI(c *csi.VolumeCapability) driver.VolumeCapability {
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

// CapabilitiesFromCSI reads a list of capabilities, nil for none.
func CapabilitiesFromCSI(cs []*csi.VolumeCapability) []driver.VolumeCapability {
	if len(cs) == 0 {
		return nil
	}
	out := make([]driver.VolumeCapability, len(cs))
	for i, c := range cs {
		out[i] = CapabilityFromCSI(c)
	}
	return out
}

// OptionalCapabilityFromCSI reads a capability the CO may leave out: nil stays nil.
func OptionalCapabilityFromCSI(c *csi.VolumeCapability) *driver.VolumeCapability {
	if c == nil {
		return nil
	}
	v := CapabilityFromCSI(c)
	return &v
}

// CSICapability writes a capability; one that is not Block is a mount capability.
func CSICapability(c driver.VolumeCapability) *csi.VolumeCapability {
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

// CapacityFromCSI reads a capacity range; a missing one is zero bounds (the plugin's default).
func CapacityFromCSI(r *csi.CapacityRange) driver.CapacityRange {
	return driver.CapacityRange{RequiredBytes: r.GetRequiredBytes(), LimitBytes: r.GetLimitBytes()}
}

// TopologiesFromCSI reads topology segments, nil for none.
func TopologiesFromCSI(ts []*csi.Topology) []driver.Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]driver.Topology, len(ts))
	for i, t := range ts {
		out[i] = driver.Topology(t.GetSegments())
	}
	return out
}

// CSITopologies writes topology segments, nil for none.
func CSITopologies(ts []driver.Topology) []*csi.Topology {
	if len(ts) == 0 {
		return nil
	}
	out := make([]*csi.Topology, len(ts))
	for i, t := range ts {
		out[i] = &csi.Topology{Segments: t}
	}
	return out
}

// RequirementFromCSI returns nil for a requirement that states nothing: HashiCorp Nomad sends an
// empty accessibility_requirements message on every CreateVolume, which means the same as none
// (see middleware/validation/exceptions.go).
func RequirementFromCSI(r *csi.TopologyRequirement) *driver.TopologyRequirement {
	if len(r.GetRequisite()) == 0 && len(r.GetPreferred()) == 0 {
		return nil
	}
	return &driver.TopologyRequirement{Requisite: TopologiesFromCSI(r.GetRequisite()), Preferred: TopologiesFromCSI(r.GetPreferred())}
}

// ContentSourceFromCSI reads a volume's source; none is the zero ContentSource.
func ContentSourceFromCSI(s *csi.VolumeContentSource) driver.ContentSource {
	return driver.ContentSource{SnapshotID: s.GetSnapshot().GetSnapshotId(), VolumeID: s.GetVolume().GetVolumeId()}
}

// CSIContentSource writes a volume's source, nil for the zero ContentSource. A snapshot wins
// over a volume: the wire message holds one of them.
func CSIContentSource(s driver.ContentSource) *csi.VolumeContentSource {
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

// CSIVolume writes a volume as CreateVolume and ListVolumes answer it.
func CSIVolume(v *driver.Volume) *csi.Volume {
	return &csi.Volume{
		VolumeId:           v.ID,
		CapacityBytes:      v.CapacityBytes,
		VolumeContext:      v.Context,
		ContentSource:      CSIContentSource(v.Source),
		AccessibleTopology: CSITopologies(v.AccessibleTopology),
	}
}

// CSISnapshot writes a snapshot; a zero CreationTime is left out rather than sent as 1970.
func CSISnapshot(s *driver.Snapshot) *csi.Snapshot {
	out := &csi.Snapshot{
		SnapshotId:         s.ID,
		SourceVolumeId:     s.SourceVolumeID,
		SizeBytes:          s.SizeBytes,
		ReadyToUse:         s.ReadyToUse,
		GroupSnapshotId:    s.GroupSnapshotID,
		AccessibleTopology: CSITopologies(s.AccessibleTopology),
	}
	if !s.CreationTime.IsZero() {
		out.CreationTime = timestamppb.New(s.CreationTime)
	}
	return out
}

// CSIGroupSnapshot writes a group snapshot. Each member names the group even when the backend
// left it out, and the group is ready only when every member is.
func CSIGroupSnapshot(g *driver.GroupSnapshot) *csi.VolumeGroupSnapshot {
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
		out.Snapshots[i] = CSISnapshot(&s)
	}
	return out
}

// CSIHealth writes a volume's health conditions.
func CSIHealth(h *driver.VolumeHealth) *csi.VolumeHealth {
	out := &csi.VolumeHealth{VolumeId: h.VolumeID}
	for _, c := range h.Conditions {
		out.HealthStatuses = append(out.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{
			Status: csi.VolumeHealthErrorType(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}
