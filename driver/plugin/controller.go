package plugin

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/internal/wire"
	"google.golang.org/grpc/status"
)

type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Plugin
	b *backendSet
}

// checkModes rejects the two alpha access modes unless the service advertises them; a CO that
// sends them anyway would otherwise get a volume the plugin does not know how to share.
func (d *Plugin) checkModes(r rpc, svc service, field string, caps ...*csi.VolumeCapability) error {
	if (svc == svcController && d.caps.controller[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER]) ||
		(svc == svcNode && d.caps.node[csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER]) {
		return nil
	}
	for i, c := range caps {
		m := driver.AccessMode(c.GetAccessMode().GetMode())
		if m == driver.SingleNodeSingleWriter || m == driver.SingleNodeMultiWriter {
			if len(caps) > 1 {
				field = fmt.Sprintf("%s[%d]", field, i)
			}
			return invalid(r, field+".access_mode", "%s needs the SINGLE_NODE_MULTI_WRITER capability, which this plugin does not advertise; use SINGLE_NODE_WRITER", m)
		}
	}
	return nil
}

func (s *controllerServer) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	f := &s.d.caps.features
	if err := s.d.checkModes(rpcCreateVolume, svcController, "volume_capabilities", req.GetVolumeCapabilities()...); err != nil {
		return nil, err
	}
	if len(req.GetMutableParameters()) > 0 && !s.d.caps.hasController(csi.ControllerServiceCapability_RPC_MODIFY_VOLUME) {
		return nil, invalid(rpcCreateVolume, "mutable_parameters", "this plugin does not advertise MODIFY_VOLUME, so it takes no mutable parameters")
	}
	topology := wire.RequirementFromCSI(req.GetAccessibilityRequirements())
	if topology != nil && !f.VolumeAccessibilityConstraints {
		return nil, invalid(rpcCreateVolume, "accessibility_requirements", "this plugin does not advertise VOLUME_ACCESSIBILITY_CONSTRAINTS, so it takes no topology")
	}
	src := wire.ContentSourceFromCSI(req.GetVolumeContentSource())
	if src.SnapshotID != "" && !s.d.caps.hasController(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT) {
		return nil, invalid(rpcCreateVolume, "volume_content_source", "this plugin cannot create volumes from snapshots (no CREATE_DELETE_SNAPSHOT capability)")
	}
	if src.VolumeID != "" && !f.CloneVolume {
		return nil, invalid(rpcCreateVolume, "volume_content_source", "this plugin cannot clone volumes (no CLONE_VOLUME capability)")
	}
	capacity := wire.CapacityFromCSI(req.GetCapacityRange())
	vol, err := s.b.controller.CreateVolume(ctx, &driver.CreateVolumeRequest{
		Name:              req.GetName(),
		Capacity:          capacity,
		Capabilities:      wire.CapabilitiesFromCSI(req.GetVolumeCapabilities()),
		Parameters:        req.GetParameters(),
		MutableParameters: req.GetMutableParameters(),
		Secrets:           req.GetSecrets(),
		Source:            src,
		Topology:          topology,
		Raw:               req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcCreateVolume, err)
	}
	if vol == nil || vol.ID == "" {
		return nil, pluginBug(rpcCreateVolume, "the backend returned no volume ID")
	}
	if vol.CapacityBytes != 0 && !capacity.Contains(vol.CapacityBytes) {
		return nil, pluginBug(rpcCreateVolume, "volume %q has %d bytes, outside the requested range %s", vol.ID, vol.CapacityBytes, capacity)
	}
	if len(vol.AccessibleTopology) > 0 && !f.VolumeAccessibilityConstraints {
		return nil, pluginBug(rpcCreateVolume, "volume %q reports a topology but the plugin does not advertise VOLUME_ACCESSIBILITY_CONSTRAINTS (set Features.VolumeAccessibilityConstraints in plugin.Config)", vol.ID)
	}
	if vol.Source.IsZero() {
		vol.Source = src
	}
	return &csi.CreateVolumeResponse{Volume: wire.CSIVolume(vol)}, nil
}

func (s *controllerServer) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	err := s.b.controller.DeleteVolume(ctx, &driver.DeleteVolumeRequest{VolumeID: req.GetVolumeId(), Secrets: req.GetSecrets(), Raw: req})
	if err := mapError(ctx, rpcDeleteVolume, err); err != nil {
		return nil, err
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (s *controllerServer) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if err := s.d.checkModes(rpcControllerPublish, svcController, "volume_capability", req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if req.GetReadonly() && !s.d.caps.features.PublishReadonly {
		return nil, invalid(rpcControllerPublish, "readonly", "this plugin does not advertise PUBLISH_READONLY, so readonly must be false")
	}
	pc, err := impl[driver.ControllerPublisher](s.b.controller).ControllerPublishVolume(ctx, &driver.ControllerPublishVolumeRequest{
		VolumeID:      req.GetVolumeId(),
		NodeID:        req.GetNodeId(),
		Capability:    wire.CapabilityFromCSI(req.GetVolumeCapability()),
		Readonly:      req.GetReadonly(),
		VolumeContext: req.GetVolumeContext(),
		Secrets:       req.GetSecrets(),
		Raw:           req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcControllerPublish, err)
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: pc}, nil
}

func (s *controllerServer) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	err := impl[driver.ControllerPublisher](s.b.controller).ControllerUnpublishVolume(ctx, &driver.ControllerUnpublishVolumeRequest{
		VolumeID: req.GetVolumeId(), NodeID: req.GetNodeId(), Secrets: req.GetSecrets(), Raw: req})
	if err := mapError(ctx, rpcControllerUnpublish, err); err != nil {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms by echoing the request, as the spec asks, so a backend only
// says yes or no. Modes the plugin does not advertise are declined without asking the backend.
func (s *controllerServer) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	var declined error
	if err := s.d.checkModes(rpcValidateVolumeCaps, svcController, "volume_capabilities", req.GetVolumeCapabilities()...); err != nil {
		declined = err
	}
	if len(req.GetMutableParameters()) > 0 && !s.d.caps.hasController(csi.ControllerServiceCapability_RPC_MODIFY_VOLUME) {
		declined = invalid(rpcValidateVolumeCaps, "mutable_parameters", "this plugin does not advertise MODIFY_VOLUME")
	}
	err := s.b.controller.ValidateVolumeCapabilities(ctx, &driver.ValidateVolumeCapabilitiesRequest{
		VolumeID:          req.GetVolumeId(),
		VolumeContext:     req.GetVolumeContext(),
		Capabilities:      wire.CapabilitiesFromCSI(req.GetVolumeCapabilities()),
		Parameters:        req.GetParameters(),
		MutableParameters: req.GetMutableParameters(),
		Secrets:           req.GetSecrets(),
		Raw:               req,
	})
	if err != nil {
		if st := mapError(ctx, rpcValidateVolumeCaps, err); st != nil {
			return nil, st
		}
		// The table answers OK: the backend declined (ErrUnsupported), with err as the reason.
	}
	if declined != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: fitString(status.Convert(declined).Message())}, nil
	}
	if err != nil {
		// The backend's reason reaches the CO in a successful response, past the status
		// sanitiser: scrub it here.
		return &csi.ValidateVolumeCapabilitiesResponse{Message: fitString(s.d.redactor.Scrub(err.Error(), req))}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
		MutableParameters:  req.GetMutableParameters(),
	}}, nil
}

func (s *controllerServer) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if req.GetAccessibleTopology() != nil && !s.d.caps.features.VolumeAccessibilityConstraints {
		return nil, invalid(rpcGetCapacity, "accessible_topology", "this plugin does not advertise VOLUME_ACCESSIBILITY_CONSTRAINTS, so it takes no topology")
	}
	c, err := impl[driver.CapacityReporter](s.b.controller).GetCapacity(ctx, &driver.GetCapacityRequest{
		Capabilities: wire.CapabilitiesFromCSI(req.GetVolumeCapabilities()),
		Parameters:   req.GetParameters(),
		Topology:     driver.Topology(req.GetAccessibleTopology().GetSegments()),
		Raw:          req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcGetCapacity, err)
	}
	if c == nil || c.AvailableBytes < 0 || c.MaximumVolumeSize < 0 || c.MinimumVolumeSize < 0 {
		return nil, pluginBug(rpcGetCapacity, "the backend returned no capacity or a negative one")
	}
	resp := &csi.GetCapacityResponse{AvailableCapacity: c.AvailableBytes}
	if c.MaximumVolumeSize > 0 {
		resp.MaximumVolumeSize = wrapInt64(c.MaximumVolumeSize)
	}
	if c.MinimumVolumeSize > 0 {
		resp.MinimumVolumeSize = wrapInt64(c.MinimumVolumeSize)
	}
	return resp, nil
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return s.d.controllerCaps, nil
}

func (s *controllerServer) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	topology := wire.RequirementFromCSI(req.GetAccessibilityRequirements())
	if topology != nil && !s.d.caps.features.SnapshotAccessibilityConstraints {
		return nil, invalid(rpcCreateSnapshot, "accessibility_requirements", "this plugin does not advertise SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, so it takes no topology")
	}
	snap, err := impl[driver.Snapshotter](s.b.controller).CreateSnapshot(ctx, &driver.CreateSnapshotRequest{
		Name:           req.GetName(),
		SourceVolumeID: req.GetSourceVolumeId(),
		Parameters:     req.GetParameters(),
		Secrets:        req.GetSecrets(),
		Topology:       topology,
		Raw:            req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcCreateSnapshot, err)
	}
	if err := s.d.checkSnapshot(rpcCreateSnapshot, snap); err != nil {
		return nil, err
	}
	if snap.SourceVolumeID == "" {
		snap.SourceVolumeID = req.GetSourceVolumeId()
	}
	return &csi.CreateSnapshotResponse{Snapshot: wire.CSISnapshot(snap)}, nil
}

// checkSnapshot catches the backend answers the CO cannot use.
func (d *Plugin) checkSnapshot(r rpc, snap *driver.Snapshot) error {
	if snap == nil || snap.ID == "" {
		return pluginBug(r, "the backend returned no snapshot ID")
	}
	if snap.CreationTime.IsZero() {
		return pluginBug(r, "snapshot %q has no creation time", snap.ID)
	}
	if len(snap.AccessibleTopology) > 0 && !d.caps.features.SnapshotAccessibilityConstraints {
		return pluginBug(r, "snapshot %q reports a topology but the plugin does not advertise SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (set Features.SnapshotAccessibilityConstraints in plugin.Config)", snap.ID)
	}
	return nil
}

func (s *controllerServer) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	err := impl[driver.Snapshotter](s.b.controller).DeleteSnapshot(ctx, &driver.DeleteSnapshotRequest{SnapshotID: req.GetSnapshotId(), Secrets: req.GetSecrets(), Raw: req})
	if err := mapError(ctx, rpcDeleteSnapshot, err); err != nil {
		return nil, err
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

func (s *controllerServer) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	snap, err := impl[driver.SnapshotGetter](s.b.controller).GetSnapshot(ctx, &driver.GetSnapshotRequest{SnapshotID: req.GetSnapshotId(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcGetSnapshot, err)
	}
	if err := s.d.checkSnapshot(rpcGetSnapshot, snap); err != nil {
		return nil, err
	}
	return &csi.GetSnapshotResponse{Snapshot: wire.CSISnapshot(snap)}, nil
}

func (s *controllerServer) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	if c := req.GetVolumeCapability(); c != nil {
		if err := s.d.checkModes(rpcControllerExpand, svcController, "volume_capability", c); err != nil {
			return nil, err
		}
	}
	capacity := wire.CapacityFromCSI(req.GetCapacityRange())
	size, nodeExpansion, err := impl[driver.VolumeExpander](s.b.controller).ControllerExpandVolume(ctx, &driver.ControllerExpandVolumeRequest{
		VolumeID:   req.GetVolumeId(),
		Capacity:   capacity,
		Capability: wire.OptionalCapabilityFromCSI(req.GetVolumeCapability()),
		Secrets:    req.GetSecrets(),
		Raw:        req,
	})
	if err != nil {
		return nil, mapError(ctx, rpcControllerExpand, err)
	}
	// A volume already bigger than asked is a valid, idempotent answer (the spec: "SHOULD reply
	// 0 OK"); only a volume smaller than required breaks the contract.
	if size < capacity.RequiredBytes {
		return nil, pluginBug(rpcControllerExpand, "volume %q has %d bytes after expansion, less than the %d required",
			req.GetVolumeId(), size, capacity.RequiredBytes)
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: size, NodeExpansionRequired: nodeExpansion}, nil
}

func (s *controllerServer) ControllerGetVolume(ctx context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	e, err := impl[driver.VolumeGetter](s.b.controller).ControllerGetVolume(ctx, &driver.ControllerGetVolumeRequest{VolumeID: req.GetVolumeId(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcControllerGetVolume, err)
	}
	if e == nil || e.Volume.ID == "" {
		return nil, pluginBug(rpcControllerGetVolume, "the backend returned no volume")
	}
	vs := &csi.ControllerGetVolumeResponse_VolumeStatus{}
	if s.d.caps.features.ListVolumesPublishedNodes {
		vs.PublishedNodeIds = e.PublishedNodeIDs
	}
	return &csi.ControllerGetVolumeResponse{Volume: wire.CSIVolume(&e.Volume), Status: vs}, nil
}

func (s *controllerServer) ControllerModifyVolume(ctx context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	err := impl[driver.VolumeModifier](s.b.controller).ControllerModifyVolume(ctx, &driver.ControllerModifyVolumeRequest{
		VolumeID: req.GetVolumeId(), MutableParameters: req.GetMutableParameters(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcControllerModify, err)
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

func (s *controllerServer) ControllerGetVolumeHealth(ctx context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	h, err := impl[driver.VolumeHealthGetter](s.b.controller).ControllerGetVolumeHealth(ctx, &driver.ControllerGetVolumeHealthRequest{VolumeID: req.GetVolumeId(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcControllerGetHealth, err)
	}
	if h == nil {
		h = &driver.VolumeHealth{}
	}
	if h.VolumeID == "" {
		h.VolumeID = req.GetVolumeId()
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: wire.CSIHealth(h)}, nil
}
