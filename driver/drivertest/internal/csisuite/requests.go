package csisuite

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
)

// RequireNode skips a spec that needs the node service.
func (f *Fixture) RequireNode() {
	if f.Caps.NodeID == "" {
		Skip("no node service (NodeGetInfo gave no node ID)")
	}
}

func (f *Fixture) listVolumeIDs(token string) ([]string, string, error) {
	resp, err := f.Ctrl.ListVolumes(context.Background(), &csi.ListVolumesRequest{StartingToken: token})
	var ids []string
	for _, e := range resp.GetEntries() {
		ids = append(ids, e.GetVolume().GetVolumeId())
	}
	return ids, resp.GetNextToken(), err
}

// ExpectGone checks, as far as the plugin lets us look, that a volume no longer exists.
func (f *Fixture) ExpectGone(id string) {
	GinkgoHelper()
	switch {
	case f.Caps.Has(csi.ControllerServiceCapability_RPC_GET_VOLUME):
		_, err := f.Ctrl.ControllerGetVolume(context.Background(), &csi.ControllerGetVolumeRequest{VolumeId: id})
		ExpectCode(err, codes.NotFound, "ControllerGetVolume of a deleted volume")
	case f.Caps.Has(csi.ControllerServiceCapability_RPC_LIST_VOLUMES):
		Expect(WalkPages("ListVolumes", 0, 1000, f.listVolumeIDs)).NotTo(HaveKey(id), "a deleted volume is still listed")
	}
}

// ControllerPublishReq publishes vol to this node, with csi-sanity's secrets.
func (f *Fixture) ControllerPublishReq(vol *csi.Volume) *csi.ControllerPublishVolumeRequest {
	return &csi.ControllerPublishVolumeRequest{
		VolumeId:         vol.GetVolumeId(),
		NodeId:           f.Caps.NodeID,
		VolumeCapability: f.VolumeCapability(),
		VolumeContext:    vol.GetVolumeContext(),
		Secrets:          f.SC.Secrets.ControllerPublishVolumeSecret,
	}
}

// ControllerPublish publishes the volume to this node when the plugin has the capability, and
// returns the publish context for the node calls.
func (f *Fixture) ControllerPublish(vol *csi.Volume) map[string]string {
	GinkgoHelper()
	if !f.Caps.Has(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME) {
		return nil
	}
	return f.PublishStep(context.Background(), "ControllerPublishVolume", f.ControllerPublishReq(vol)).GetPublishContext()
}

// NodeStageReq stages vol at csi-sanity's staging path, with the publish context pc.
func (f *Fixture) NodeStageReq(vol *csi.Volume, pc map[string]string) *csi.NodeStageVolumeRequest {
	return &csi.NodeStageVolumeRequest{
		VolumeId:          vol.GetVolumeId(),
		PublishContext:    pc,
		StagingTargetPath: f.SC.StagingPath,
		VolumeCapability:  f.VolumeCapability(),
		VolumeContext:     vol.GetVolumeContext(),
		Secrets:           f.SC.Secrets.NodeStageVolumeSecret,
	}
}

// NodePublishReq publishes vol at TargetPath, staged at staging ("" when the plugin does not
// stage), with the publish context pc.
func (f *Fixture) NodePublishReq(vol *csi.Volume, pc map[string]string, staging string) *csi.NodePublishVolumeRequest {
	return &csi.NodePublishVolumeRequest{
		VolumeId:          vol.GetVolumeId(),
		PublishContext:    pc,
		StagingTargetPath: staging,
		TargetPath:        f.TargetPath(),
		VolumeCapability:  f.VolumeCapability(),
		VolumeContext:     vol.GetVolumeContext(),
		Secrets:           f.SC.Secrets.NodePublishVolumeSecret,
	}
}
