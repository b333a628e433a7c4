package plugin

import (
	"context"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/internal/wire"
)

type groupServer struct {
	csi.UnimplementedGroupControllerServer
	d *Plugin
	b *backendSet
}

func (s *groupServer) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	return s.d.groupCaps, nil
}

func (s *groupServer) CreateVolumeGroupSnapshot(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	g, err := s.b.group.CreateVolumeGroupSnapshot(ctx, &driver.CreateVolumeGroupSnapshotRequest{
		Name:            req.GetName(),
		SourceVolumeIDs: req.GetSourceVolumeIds(),
		Parameters:      req.GetParameters(),
		Secrets:         req.GetSecrets(),
		Raw:             req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcCreateGroupSnapshot, err)
	}
	if err := s.d.checkGroup(rpcCreateGroupSnapshot, g, req.GetSourceVolumeIds()); err != nil {
		return nil, err
	}
	return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: wire.CSIGroupSnapshot(g)}, nil
}

// checkGroup catches group answers the CO cannot use: no ID, members without IDs or times, and,
// on create, members whose source is not one of the requested volumes.
func (d *Plugin) checkGroup(r rpc, g *driver.GroupSnapshot, sources []string) error {
	if g == nil || g.ID == "" {
		return pluginBug(r, "the backend returned no group snapshot ID")
	}
	if g.CreationTime.IsZero() {
		return pluginBug(r, "group snapshot %q has no creation time", g.ID)
	}
	if len(g.Snapshots) == 0 {
		return pluginBug(r, "group snapshot %q has no member snapshots", g.ID)
	}
	for i := range g.Snapshots {
		sn := &g.Snapshots[i]
		if err := d.checkSnapshot(r, sn); err != nil {
			return err
		}
		if sn.GroupSnapshotID != "" && sn.GroupSnapshotID != g.ID {
			return pluginBug(r, "member snapshot %q names group %q, not %q", sn.ID, sn.GroupSnapshotID, g.ID)
		}
		if sn.SourceVolumeID == "" {
			return pluginBug(r, "member snapshot %q has no source volume ID", sn.ID)
		}
		if sources != nil && !slices.Contains(sources, sn.SourceVolumeID) {
			return pluginBug(r, "member snapshot %q is of volume %q, which was not requested", sn.ID, sn.SourceVolumeID)
		}
	}
	return nil
}

func (s *groupServer) DeleteVolumeGroupSnapshot(ctx context.Context, req *csi.DeleteVolumeGroupSnapshotRequest) (*csi.DeleteVolumeGroupSnapshotResponse, error) {
	err := s.b.group.DeleteVolumeGroupSnapshot(ctx, &driver.DeleteVolumeGroupSnapshotRequest{
		GroupSnapshotID: req.GetGroupSnapshotId(), SnapshotIDs: req.GetSnapshotIds(), Secrets: req.GetSecrets(), Raw: req})
	if err := mapError(ctx, rpcDeleteGroupSnapshot, err); err != nil {
		return nil, err
	}
	return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
}

func (s *groupServer) GetVolumeGroupSnapshot(ctx context.Context, req *csi.GetVolumeGroupSnapshotRequest) (*csi.GetVolumeGroupSnapshotResponse, error) {
	g, err := s.b.group.GetVolumeGroupSnapshot(ctx, &driver.GetVolumeGroupSnapshotRequest{
		GroupSnapshotID: req.GetGroupSnapshotId(), SnapshotIDs: req.GetSnapshotIds(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcGetGroupSnapshot, err)
	}
	if err := s.d.checkGroup(rpcGetGroupSnapshot, g, nil); err != nil {
		return nil, err
	}
	return &csi.GetVolumeGroupSnapshotResponse{GroupSnapshot: wire.CSIGroupSnapshot(g)}, nil
}
