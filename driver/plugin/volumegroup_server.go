package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/volumegroup"
)

// ManifestVolumeGroupRPCs is the GetPluginInfo manifest key listing, comma-separated, the
// volume-group RPCs the plugin serves.
const ManifestVolumeGroupRPCs = "volumegroup.csikit.dev/rpcs"

type volumeGroupServer struct {
	vgpb.UnimplementedControllerServer
	d *Plugin
	b *backendSet
}

func (s *volumeGroupServer) CreateVolumeGroup(ctx context.Context, req *vgpb.CreateVolumeGroupRequest) (*vgpb.CreateVolumeGroupResponse, error) {
	g, err := s.b.volumeGroups.CreateVolumeGroup(ctx, &volumegroup.CreateVolumeGroupRequest{
		Name: req.GetName(), Parameters: req.GetParameters(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcCreateVolumeGroup, err)
	}
	vg, err := volumeGroupToProto(rpcCreateVolumeGroup, g)
	if err != nil {
		return nil, err
	}
	return &vgpb.CreateVolumeGroupResponse{VolumeGroup: vg}, nil
}

func (s *volumeGroupServer) DeleteVolumeGroup(ctx context.Context, req *vgpb.DeleteVolumeGroupRequest) (*vgpb.DeleteVolumeGroupResponse, error) {
	err := s.b.volumeGroups.DeleteVolumeGroup(ctx, &volumegroup.DeleteVolumeGroupRequest{
		GroupID: req.GetVolumeGroupId(), Secrets: req.GetSecrets(), Raw: req})
	if err := mapError(ctx, rpcDeleteVolumeGroup, err); err != nil {
		return nil, err
	}
	return &vgpb.DeleteVolumeGroupResponse{}, nil
}

func (s *volumeGroupServer) ModifyVolumeGroupMembership(ctx context.Context, req *vgpb.ModifyVolumeGroupMembershipRequest) (*vgpb.ModifyVolumeGroupMembershipResponse, error) {
	ids := req.GetVolumeIds()
	for i, id := range ids {
		if id == "" {
			return nil, invalid(rpcModifyVolumeGroup, fmt.Sprintf("volume_ids[%d]", i), "must not be empty")
		}
		if slices.Contains(ids[:i], id) {
			return nil, invalid(rpcModifyVolumeGroup, fmt.Sprintf("volume_ids[%d]", i), "volume %q is listed twice", id)
		}
	}
	g, err := s.b.volumeGroups.ModifyVolumeGroupMembership(ctx, &volumegroup.ModifyVolumeGroupMembershipRequest{
		GroupID: req.GetVolumeGroupId(), VolumeIDs: ids, Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcModifyVolumeGroup, err)
	}
	vg, err := volumeGroupToProto(rpcModifyVolumeGroup, g)
	if err != nil {
		return nil, err
	}
	// The answer is the membership the CO asked for; anything else is a backend bug the operator
	// would act on.
	got := make([]string, 0, len(vg.GetVolumes()))
	for _, v := range vg.GetVolumes() {
		got = append(got, v.GetVolumeId())
	}
	want := slices.Clone(ids)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return nil, pluginBug(rpcModifyVolumeGroup, "group %q has members [%s] after asking for [%s]",
			vg.GetVolumeGroupId(), strings.Join(got, ", "), strings.Join(want, ", "))
	}
	return &vgpb.ModifyVolumeGroupMembershipResponse{VolumeGroup: vg}, nil
}

func (s *volumeGroupServer) ControllerGetVolumeGroup(ctx context.Context, req *vgpb.ControllerGetVolumeGroupRequest) (*vgpb.ControllerGetVolumeGroupResponse, error) {
	g, err := impl[volumegroup.Getter](s.b.volumeGroups).ControllerGetVolumeGroup(ctx, &volumegroup.ControllerGetVolumeGroupRequest{
		GroupID: req.GetVolumeGroupId(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(ctx, rpcGetVolumeGroup, err)
	}
	vg, err := volumeGroupToProto(rpcGetVolumeGroup, g)
	if err != nil {
		return nil, err
	}
	return &vgpb.ControllerGetVolumeGroupResponse{VolumeGroup: vg}, nil
}

func volumeGroupID(g *volumegroup.Group) string { return g.ID }

func (s *volumeGroupServer) ListVolumeGroups(ctx context.Context, req *vgpb.ListVolumeGroupsRequest) (*vgpb.ListVolumeGroupsResponse, error) {
	after, err := s.d.startAfter(rpcListVolumeGroups, req.GetStartingToken(), "")
	if err != nil {
		return nil, err
	}
	limit := int(req.GetMaxEntries())
	var groups []volumegroup.Group
	if pager, ok := s.b.volumeGroups.(volumegroup.PageLister); ok {
		want := 0
		if limit > 0 {
			want = limit + 1 // one more tells whether another page exists
		}
		groups, err = collectPages(rpcListVolumeGroups, after, want, volumeGroupID, func(after string, n int) ([]volumegroup.Group, error) {
			page, err := pager.ListVolumeGroupsPage(ctx, &volumegroup.ListVolumeGroupsRequest{After: after, Limit: n, Secrets: req.GetSecrets(), Raw: req})
			return page, mapError(ctx, rpcListVolumeGroups, err)
		})
		if err != nil {
			return nil, err
		}
	} else {
		groups, err = impl[volumegroup.Lister](s.b.volumeGroups).ListVolumeGroups(ctx, &volumegroup.ListVolumeGroupsRequest{Secrets: req.GetSecrets(), Raw: req})
		if err != nil {
			return nil, mapError(ctx, rpcListVolumeGroups, err)
		}
		if groups, err = sortedAfter(rpcListVolumeGroups, groups, volumeGroupID, after); err != nil {
			return nil, err
		}
	}
	groups, next, err := cutPage(s.d, rpcListVolumeGroups, "", groups, volumeGroupID, limit)
	if err != nil {
		return nil, err
	}
	resp := &vgpb.ListVolumeGroupsResponse{NextToken: next, Entries: make([]*vgpb.ListVolumeGroupsResponse_Entry, len(groups))}
	for i := range groups {
		vg, err := volumeGroupToProto(rpcListVolumeGroups, &groups[i])
		if err != nil {
			return nil, err
		}
		resp.Entries[i] = &vgpb.ListVolumeGroupsResponse_Entry{VolumeGroup: vg}
	}
	return resp, nil
}

// volumeGroupToProto converts a backend's group, catching the answers the CO cannot use.
func volumeGroupToProto(r rpc, g *volumegroup.Group) (*vgpb.VolumeGroup, error) {
	if g == nil || g.ID == "" {
		return nil, pluginBug(r, "the backend returned no volume group ID")
	}
	vg := &vgpb.VolumeGroup{VolumeGroupId: g.ID, VolumeGroupContext: g.Context, Volumes: make([]*vgpb.VgVolume, len(g.Volumes))}
	for i := range g.Volumes {
		v := &g.Volumes[i]
		if v.ID == "" {
			return nil, pluginBug(r, "volume group %q has a member without an ID", g.ID)
		}
		if slices.ContainsFunc(g.Volumes[:i], func(o driver.Volume) bool { return o.ID == v.ID }) {
			return nil, pluginBug(r, "volume group %q lists volume %q twice", g.ID, v.ID)
		}
		pv := &vgpb.VgVolume{CapacityBytes: v.CapacityBytes, VolumeId: v.ID, VolumeContext: v.Context}
		switch {
		case v.Source.SnapshotID != "":
			pv.ContentSource = &vgpb.VgVolumeContentSource{Type: &vgpb.VgVolumeContentSource_Snapshot{
				Snapshot: &vgpb.VgVolumeContentSource_SnapshotSource{SnapshotId: v.Source.SnapshotID}}}
		case v.Source.VolumeID != "":
			pv.ContentSource = &vgpb.VgVolumeContentSource{Type: &vgpb.VgVolumeContentSource_Volume{
				Volume: &vgpb.VgVolumeContentSource_VolumeSource{VolumeId: v.Source.VolumeID}}}
		}
		for _, t := range v.AccessibleTopology {
			pv.AccessibleTopology = append(pv.AccessibleTopology, &vgpb.VgTopology{Segments: t})
		}
		vg.Volumes[i] = pv
	}
	return vg, nil
}

// servedVolumeGroupRPCs lists, for the manifest, the volume-group RPCs the backend serves.
func (d *Plugin) servedVolumeGroupRPCs() string {
	var names []string
	for _, s := range rpcTable {
		if s.service == svcVolumeGroup && d.gate(s) == nil {
			names = append(names, string(s.name))
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
