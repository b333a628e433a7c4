package locking

import (
	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/idempotency"
)

// Resource kinds used by CSIKeys. Volume IDs and names live in different kinds, so a name that
// happens to equal some volume ID does not conflict with it.
const (
	KindVolume            = "volume"
	KindVolumeName        = "volume name"
	KindSnapshot          = "snapshot"
	KindSnapshotName      = "snapshot name"
	KindGroupSnapshot     = "group snapshot"
	KindGroupSnapshotName = "group snapshot name"
)

func excl(kind, id string) idempotency.Key { return idempotency.Key{Kind: kind, ID: id} }
func shared(kind, id string) idempotency.Key {
	return idempotency.Key{Kind: kind, ID: id, Shared: true}
}

// CSIKeys is the lock table for CSI requests. Every mutating RPC holds its volume, snapshot, group
// or create name exclusively; sources of a create are held shared, so several clones or
// snapshots of one volume run in parallel while a delete of that volume waits or is ABORTED.
// Read-only RPCs take no lock. Empty IDs are skipped (validation rejects them earlier anyway).
func CSIKeys(req any) []idempotency.Key {
	var ks []idempotency.Key
	add := func(k idempotency.Key) {
		if k.ID != "" {
			ks = append(ks, k)
		}
	}
	switch r := req.(type) {
	case *csi.CreateVolumeRequest:
		add(excl(KindVolumeName, r.GetName()))
		add(shared(KindSnapshot, r.GetVolumeContentSource().GetSnapshot().GetSnapshotId()))
		add(shared(KindVolume, r.GetVolumeContentSource().GetVolume().GetVolumeId()))
	case *csi.DeleteVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.ControllerPublishVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.ControllerUnpublishVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.ControllerExpandVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.ControllerModifyVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.CreateSnapshotRequest:
		add(excl(KindSnapshotName, r.GetName()))
		add(shared(KindVolume, r.GetSourceVolumeId()))
	case *csi.DeleteSnapshotRequest:
		add(excl(KindSnapshot, r.GetSnapshotId()))
	case *csi.NodeStageVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.NodeUnstageVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.NodePublishVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.NodeUnpublishVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.NodeExpandVolumeRequest:
		add(excl(KindVolume, r.GetVolumeId()))
	case *csi.CreateVolumeGroupSnapshotRequest:
		add(excl(KindGroupSnapshotName, r.GetName()))
		for _, id := range r.GetSourceVolumeIds() {
			add(shared(KindVolume, id))
		}
	case *csi.DeleteVolumeGroupSnapshotRequest:
		add(excl(KindGroupSnapshot, r.GetGroupSnapshotId()))
		for _, id := range r.GetSnapshotIds() {
			add(excl(KindSnapshot, id))
		}
	}
	return ks
}
