package plugin

import (
	"context"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/internal/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Plugin
	b *backendSet
}

// checkMountGroup rejects a mount group the plugin would silently ignore.
func (d *Plugin) checkMountGroup(r rpc, c *csi.VolumeCapability) error {
	if c.GetMount().GetVolumeMountGroup() != "" && !d.caps.features.VolumeMountGroup {
		return invalid(r, "volume_capability.mount.volume_mount_group", "this plugin does not advertise VOLUME_MOUNT_GROUP")
	}
	return nil
}

func (s *nodeServer) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if err := s.d.checkModes(rpcNodeStage, svcNode, "volume_capability", req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if err := s.d.checkMountGroup(rpcNodeStage, req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	err := impl[driver.NodeStager](s.b.node).NodeStageVolume(ctx, &driver.NodeStageVolumeRequest{
		VolumeID:          req.GetVolumeId(),
		StagingTargetPath: req.GetStagingTargetPath(),
		Capability:        wire.CapabilityFromCSI(req.GetVolumeCapability()),
		PublishContext:    req.GetPublishContext(),
		VolumeContext:     req.GetVolumeContext(),
		Secrets:           req.GetSecrets(),
		Raw:               req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcNodeStage, err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	err := impl[driver.NodeStager](s.b.node).NodeUnstageVolume(ctx, &driver.NodeUnstageVolumeRequest{
		VolumeID: req.GetVolumeId(), StagingTargetPath: req.GetStagingTargetPath(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcNodeUnstage, err)
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if err := s.d.checkModes(rpcNodePublish, svcNode, "volume_capability", req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if err := s.d.checkMountGroup(rpcNodePublish, req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	// Inline ephemeral volumes are never staged: kubelet publishes them with an empty staging path.
	ephemeral := req.GetVolumeContext()[driver.EphemeralContextKey] == "true"
	if req.GetStagingTargetPath() == "" && !ephemeral && s.d.caps.hasNode(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) {
		return nil, status.Error(codes.FailedPrecondition,
			"staging_target_path is empty: this plugin stages volumes (STAGE_UNSTAGE_VOLUME), so NodeStageVolume must succeed first and its path be passed here")
	}
	err := s.b.node.NodePublishVolume(ctx, &driver.NodePublishVolumeRequest{
		VolumeID:          req.GetVolumeId(),
		StagingTargetPath: req.GetStagingTargetPath(),
		TargetPath:        req.GetTargetPath(),
		Capability:        wire.CapabilityFromCSI(req.GetVolumeCapability()),
		Readonly:          req.GetReadonly(),
		PublishContext:    req.GetPublishContext(),
		VolumeContext:     req.GetVolumeContext(),
		Secrets:           req.GetSecrets(),
		Raw:               req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcNodePublish, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

func (s *nodeServer) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	err := s.b.node.NodeUnpublishVolume(ctx, &driver.NodeUnpublishVolumeRequest{VolumeID: req.GetVolumeId(), TargetPath: req.GetTargetPath(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcNodeUnpublish, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// notAtPath answers a relative volume_path: no volume can live there, and the spec's error table
// for "volume does not exist on the specified path" is NOT_FOUND.
func notAtPath(r rpc, path string) error {
	if filepath.IsAbs(path) {
		return nil
	}
	return status.Errorf(codes.NotFound, "%s: volume_path %q is not an absolute path, so no volume is there", r, path)
}

func (s *nodeServer) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := notAtPath(rpcNodeGetVolumeStats, req.GetVolumePath()); err != nil {
		return nil, err
	}
	usage, err := impl[driver.VolumeStatsReporter](s.b.node).NodeGetVolumeStats(ctx, &driver.NodeGetVolumeStatsRequest{
		VolumeID: req.GetVolumeId(), VolumePath: req.GetVolumePath(), StagingTargetPath: req.GetStagingTargetPath(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcNodeGetVolumeStats, err)
	}
	resp := &csi.NodeGetVolumeStatsResponse{Usage: make([]*csi.VolumeUsage, len(usage))}
	for i, u := range usage {
		if u.Total < 0 || u.Used < 0 || u.Available < 0 || (u.Unit != driver.UsageBytes && u.Unit != driver.UsageInodes) {
			return nil, pluginBug(rpcNodeGetVolumeStats, "usage entry %d has an unknown unit or a negative figure", i)
		}
		resp.Usage[i] = &csi.VolumeUsage{Unit: csi.VolumeUsage_Unit(u.Unit), Total: u.Total, Used: u.Used, Available: u.Available}
	}
	return resp, nil
}

func (s *nodeServer) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := notAtPath(rpcNodeExpand, req.GetVolumePath()); err != nil {
		return nil, err
	}
	if c := req.GetVolumeCapability(); c != nil {
		if err := s.d.checkModes(rpcNodeExpand, svcNode, "volume_capability", c); err != nil {
			return nil, err
		}
	}
	capacity := wire.CapacityFromCSI(req.GetCapacityRange())
	size, err := impl[driver.NodeExpander](s.b.node).NodeExpandVolume(ctx, &driver.NodeExpandVolumeRequest{
		VolumeID:          req.GetVolumeId(),
		VolumePath:        req.GetVolumePath(),
		StagingTargetPath: req.GetStagingTargetPath(),
		Capacity:          capacity,
		Capability:        wire.OptionalCapabilityFromCSI(req.GetVolumeCapability()),
		Secrets:           req.GetSecrets(),
		Raw:               req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcNodeExpand, err)
	}
	if size < 0 {
		return nil, pluginBug(rpcNodeExpand, "negative capacity %d", size)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return s.d.nodeCaps, nil
}

func (s *nodeServer) NodeGetInfo(ctx context.Context, _ *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	info, err := s.b.node.NodeGetInfo(ctx)
	if err != nil {
		return nil, mapError(ctx, rpcNodeGetInfo, err)
	}
	if info == nil || info.NodeID == "" {
		return nil, pluginBug(rpcNodeGetInfo, "the backend returned no node ID")
	}
	if info.MaxVolumesPerNode < 0 {
		return nil, pluginBug(rpcNodeGetInfo, "negative max_volumes_per_node %d", info.MaxVolumesPerNode)
	}
	resp := &csi.NodeGetInfoResponse{NodeId: info.NodeID, MaxVolumesPerNode: info.MaxVolumesPerNode}
	if len(info.AccessibleTopology) > 0 {
		if !s.d.caps.features.VolumeAccessibilityConstraints {
			return nil, pluginBug(rpcNodeGetInfo, "the node reports a topology but the plugin does not advertise VOLUME_ACCESSIBILITY_CONSTRAINTS (set Features.VolumeAccessibilityConstraints in plugin.Config)")
		}
		resp.AccessibleTopology = &csi.Topology{Segments: info.AccessibleTopology}
	}
	return resp, nil
}

func (s *nodeServer) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	h, err := impl[driver.NodeVolumeHealthGetter](s.b.node).NodeGetVolumeHealth(ctx, &driver.NodeGetVolumeHealthRequest{
		VolumeID: req.GetVolumeId(), VolumePublishPath: req.GetVolumePublishPath(), StagingTargetPath: req.GetStagingTargetPath(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcNodeGetHealth, err)
	}
	if h == nil {
		h = &driver.VolumeHealth{}
	}
	if h.VolumeID == "" {
		h.VolumeID = req.GetVolumeId()
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: wire.CSIHealth(h)}, nil
}

func (s *nodeServer) NodeGetStorageHealth(ctx context.Context, req *csi.NodeGetStorageHealthRequest) (*csi.NodeGetStorageHealthResponse, error) {
	hs, err := impl[driver.StorageHealthReporter](s.b.node).NodeGetStorageHealth(ctx, &driver.NodeGetStorageHealthRequest{Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcNodeGetStorageHealth, err)
	}
	resp := &csi.NodeGetStorageHealthResponse{}
	for _, h := range hs {
		e := &csi.NodeGetStorageHealthResponse_StorageBackendHealth{
			Status: csi.StorageHealthErrorType(h.Status), Reason: h.Reason, Message: h.Message}
		if h.Capability != nil {
			e.VolumeCapability = wire.CSICapability(*h.Capability)
		}
		resp.BackendHealth = append(resp.BackendHealth, e)
	}
	return resp, nil
}
