package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/validation"
)

// Volume groups (the volumegroup.Controller service of github.com/IBM/csi-volume-group, which
// the IBM volume-group operator speaks) keep several volumes consistent together. A backend
// implements VolumeGroupController, and optionally VolumeGroupGetter and VolumeGroupLister or
// VolumeGroupPageLister; Config.VolumeGroups serves it on the same socket as the CSI services.
// The proto has no capability RPC, so the library lists the served group RPCs in
// GetPluginInfo's manifest under ManifestVolumeGroupRPCs and answers UNIMPLEMENTED for the rest.

// ManifestVolumeGroupRPCs is the GetPluginInfo manifest key listing, comma-separated, the
// volume-group RPCs the plugin serves.
const ManifestVolumeGroupRPCs = "volumegroup.csikit.dev/rpcs"

// VolumeGroupController is the required part of a volume-group backend.
type VolumeGroupController interface {
	// CreateVolumeGroup creates an empty group or, for a name it has seen, returns the existing
	// group when the request is compatible (CreateVolumeGroupRequest.CheckExisting) and an error
	// wrapping ErrAlreadyExists otherwise. Parameters it does not accept are ErrInvalidArgument.
	CreateVolumeGroup(ctx context.Context, req *CreateVolumeGroupRequest) (*VolumeGroup, error)
	// DeleteVolumeGroup deletes a group and the volumes in it; ErrNotFound counts as success, a
	// group whose volumes are still in use is ErrInUse.
	DeleteVolumeGroup(ctx context.Context, req *DeleteVolumeGroupRequest) error
	// ModifyVolumeGroupMembership sets the group's members to exactly VolumeIDs: volumes not yet
	// in it join, members not listed leave, an empty list empties it. It returns the group as it
	// is afterwards. A missing group or volume is ErrNotFound; a volume that cannot join (another
	// group, another kind of storage) is ErrUnsupported or ErrInvalidArgument; the member limit
	// reached is ErrResourceExhausted. A failure must leave the membership as it was.
	ModifyVolumeGroupMembership(ctx context.Context, req *ModifyVolumeGroupMembershipRequest) (*VolumeGroup, error)
}

// VolumeGroupGetter reports one group (ControllerGetVolumeGroup).
type VolumeGroupGetter interface {
	// ControllerGetVolumeGroup returns the group with its members; a missing group is
	// ErrNotFound.
	ControllerGetVolumeGroup(ctx context.Context, req *GetVolumeGroupRequest) (*VolumeGroup, error)
}

// VolumeGroupLister returns every group; the library sorts, filters and pages the answer
// (ListVolumeGroups).
type VolumeGroupLister interface {
	// ListVolumeGroups returns all groups; After and Limit of the request are to be ignored.
	ListVolumeGroups(ctx context.Context, req *ListVolumeGroupsRequest) ([]VolumeGroup, error)
}

// VolumeGroupPageLister returns one page of groups after a cursor, so a page costs O(page)
// (ListVolumeGroups).
type VolumeGroupPageLister interface {
	// ListVolumeGroupsPage returns at most Limit groups (0 = no limit) whose IDs sort strictly
	// after After, in ascending ID order.
	ListVolumeGroupsPage(ctx context.Context, req *ListVolumeGroupsRequest) ([]VolumeGroup, error)
}

// VolumeGroup is what a backend reports about one group.
type VolumeGroup struct {
	// ID is the plugin-chosen identifier; required.
	ID string
	// Context is opaque data the CO passes back on later calls about the group.
	Context map[string]string
	// Volumes are the members.
	Volumes []Volume
}

// CreateVolumeGroupRequest asks for a new, empty volume group.
type CreateVolumeGroupRequest struct {
	// Name is the CO's name for the group; the same name must always give the same group.
	Name string
	// Parameters are the opaque group-class parameters.
	Parameters map[string]string
	// Secrets are the credentials the CO passed (vg_csi_secret); never log them.
	Secrets Secrets
	// Raw is the original request; backends must not modify it.
	Raw *volumegroup.CreateVolumeGroupRequest
}

// Fingerprint is a stable digest of what must be the same when a group is created again under
// the same name: its parameters, never secrets. Store it with the group.
func (r *CreateVolumeGroupRequest) Fingerprint() string {
	return idempotency.Fingerprint(r.Raw, "name", "secrets")
}

// CheckExisting decides a repeated CreateVolumeGroup: nil when the stored fingerprint matches, an
// error wrapping ErrAlreadyExists otherwise.
func (r *CreateVolumeGroupRequest) CheckExisting(fingerprint string, existing *VolumeGroup) error {
	if existing == nil || fingerprint == r.Fingerprint() {
		return nil
	}
	return fmt.Errorf("volume group %q (%s) was created with other parameters: %w", r.Name, existing.ID, ErrAlreadyExists)
}

// DeleteVolumeGroupRequest asks to delete a group and its volumes.
type DeleteVolumeGroupRequest struct {
	// GroupID is the group to delete.
	GroupID string
	// Secrets are the credentials the CO passed; never log them.
	Secrets Secrets
	// Raw is the original request; backends must not modify it.
	Raw *volumegroup.DeleteVolumeGroupRequest
}

// ModifyVolumeGroupMembershipRequest asks to set a group's members to exactly VolumeIDs.
type ModifyVolumeGroupMembershipRequest struct {
	// GroupID is the group to change.
	GroupID string
	// VolumeIDs are the members it must have afterwards, without duplicates.
	VolumeIDs []string
	// Secrets are the credentials the CO passed; never log them.
	Secrets Secrets
	// Raw is the original request; backends must not modify it.
	Raw *volumegroup.ModifyVolumeGroupMembershipRequest
}

// GetVolumeGroupRequest asks for one group.
type GetVolumeGroupRequest struct {
	// GroupID is the group asked for.
	GroupID string
	// Secrets are the credentials the CO passed; never log them.
	Secrets Secrets
	// Raw is the original request; backends must not modify it.
	Raw *volumegroup.ControllerGetVolumeGroupRequest
}

// ListVolumeGroupsRequest asks for groups. A VolumeGroupLister ignores After and Limit; a
// VolumeGroupPageLister returns at most Limit groups (0 = no limit) whose IDs sort strictly after
// After, in ascending ID order.
type ListVolumeGroupsRequest struct {
	// After is the cursor: the last group ID of the previous page, or "".
	After string
	// Limit is the most groups to return; 0 means no limit.
	Limit int
	// Secrets are the credentials the CO passed; never log them.
	Secrets Secrets
	// Raw is the original request; backends must not modify it.
	Raw *volumegroup.ListVolumeGroupsRequest
}

// The required fields of seed 001 ("This field is REQUIRED"), checked like csi.v1's.
func init() {
	for msg, fields := range map[string][]string{
		"volumegroup.CreateVolumeGroupRequest":            {"name"},
		"volumegroup.DeleteVolumeGroupRequest":            {"volume_group_id"},
		"volumegroup.ModifyVolumeGroupMembershipRequest":  {"volume_group_id"},
		"volumegroup.ControllerGetVolumeGroupRequest":     {"volume_group_id"},
		"volumegroup.CreateVolumeGroupResponse":           {"volume_group"},
		"volumegroup.ModifyVolumeGroupMembershipResponse": {"volume_group"},
		"volumegroup.ControllerGetVolumeGroupResponse":    {"volume_group"},
		"volumegroup.VolumeGroup":                         {"volume_group_id"},
		"volumegroup.VgVolume":                            {"volume_id"},
	} {
		names := make([]protoreflect.Name, len(fields))
		for i, f := range fields {
			names[i] = protoreflect.Name(f)
		}
		if err := validation.RegisterRequired(protoreflect.FullName(msg), names...); err != nil {
			// The bindings are linked into this package: a failure is a build mismatch.
			panic(fmt.Sprintf("csikit: volume group validation: %v", err))
		}
	}
}

type volumeGroupServer struct {
	volumegroup.UnimplementedControllerServer
	d *Driver
	b *backendSet
}

func (s *volumeGroupServer) CreateVolumeGroup(ctx context.Context, req *volumegroup.CreateVolumeGroupRequest) (*volumegroup.CreateVolumeGroupResponse, error) {
	g, err := s.b.volumeGroups.CreateVolumeGroup(ctx, &CreateVolumeGroupRequest{
		Name: req.GetName(), Parameters: req.GetParameters(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(rpcCreateVolumeGroup, err)
	}
	vg, err := volumeGroupToProto(rpcCreateVolumeGroup, g)
	if err != nil {
		return nil, err
	}
	return &volumegroup.CreateVolumeGroupResponse{VolumeGroup: vg}, nil
}

func (s *volumeGroupServer) DeleteVolumeGroup(ctx context.Context, req *volumegroup.DeleteVolumeGroupRequest) (*volumegroup.DeleteVolumeGroupResponse, error) {
	err := s.b.volumeGroups.DeleteVolumeGroup(ctx, &DeleteVolumeGroupRequest{
		GroupID: req.GetVolumeGroupId(), Secrets: req.GetSecrets(), Raw: req})
	if err := mapError(rpcDeleteVolumeGroup, err); err != nil {
		return nil, err
	}
	return &volumegroup.DeleteVolumeGroupResponse{}, nil
}

func (s *volumeGroupServer) ModifyVolumeGroupMembership(ctx context.Context, req *volumegroup.ModifyVolumeGroupMembershipRequest) (*volumegroup.ModifyVolumeGroupMembershipResponse, error) {
	ids := req.GetVolumeIds()
	for i, id := range ids {
		if id == "" {
			return nil, status.Errorf(codes.InvalidArgument, "ModifyVolumeGroupMembershipRequest.volume_ids[%d]: must not be empty", i)
		}
		if slices.Contains(ids[:i], id) {
			return nil, status.Errorf(codes.InvalidArgument, "ModifyVolumeGroupMembershipRequest.volume_ids[%d]: volume %q is listed twice", i, id)
		}
	}
	g, err := s.b.volumeGroups.ModifyVolumeGroupMembership(ctx, &ModifyVolumeGroupMembershipRequest{
		GroupID: req.GetVolumeGroupId(), VolumeIDs: ids, Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(rpcModifyVolumeGroup, err)
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
	return &volumegroup.ModifyVolumeGroupMembershipResponse{VolumeGroup: vg}, nil
}

func (s *volumeGroupServer) ControllerGetVolumeGroup(ctx context.Context, req *volumegroup.ControllerGetVolumeGroupRequest) (*volumegroup.ControllerGetVolumeGroupResponse, error) {
	g, err := impl[VolumeGroupGetter](s.b.volumeGroups).ControllerGetVolumeGroup(ctx, &GetVolumeGroupRequest{
		GroupID: req.GetVolumeGroupId(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return nil, mapError(rpcGetVolumeGroup, err)
	}
	vg, err := volumeGroupToProto(rpcGetVolumeGroup, g)
	if err != nil {
		return nil, err
	}
	return &volumegroup.ControllerGetVolumeGroupResponse{VolumeGroup: vg}, nil
}

func volumeGroupID(g *VolumeGroup) string { return g.ID }

func (s *volumeGroupServer) ListVolumeGroups(ctx context.Context, req *volumegroup.ListVolumeGroupsRequest) (*volumegroup.ListVolumeGroupsResponse, error) {
	after, err := s.d.startAfter(rpcListVolumeGroups, req.GetStartingToken(), "")
	if err != nil {
		return nil, err
	}
	limit := int(req.GetMaxEntries())
	var groups []VolumeGroup
	if pager, ok := s.b.volumeGroups.(VolumeGroupPageLister); ok {
		want := 0
		if limit > 0 {
			want = limit + 1 // one more tells whether another page exists
		}
		groups, err = collectPages(rpcListVolumeGroups, after, want, volumeGroupID, func(after string, n int) ([]VolumeGroup, error) {
			page, err := pager.ListVolumeGroupsPage(ctx, &ListVolumeGroupsRequest{After: after, Limit: n, Secrets: req.GetSecrets(), Raw: req})
			return page, mapError(rpcListVolumeGroups, err)
		})
		if err != nil {
			return nil, err
		}
	} else {
		groups, err = impl[VolumeGroupLister](s.b.volumeGroups).ListVolumeGroups(ctx, &ListVolumeGroupsRequest{Secrets: req.GetSecrets(), Raw: req})
		if err != nil {
			return nil, mapError(rpcListVolumeGroups, err)
		}
		if groups, err = sortedAfter(rpcListVolumeGroups, groups, volumeGroupID, after); err != nil {
			return nil, err
		}
	}
	groups, next, err := cutPage(s.d, rpcListVolumeGroups, "", groups, volumeGroupID, limit)
	if err != nil {
		return nil, err
	}
	resp := &volumegroup.ListVolumeGroupsResponse{NextToken: next, Entries: make([]*volumegroup.ListVolumeGroupsResponse_Entry, len(groups))}
	for i := range groups {
		vg, err := volumeGroupToProto(rpcListVolumeGroups, &groups[i])
		if err != nil {
			return nil, err
		}
		resp.Entries[i] = &volumegroup.ListVolumeGroupsResponse_Entry{VolumeGroup: vg}
	}
	return resp, nil
}

// volumeGroupToProto converts a backend's group, catching the answers the CO cannot use.
func volumeGroupToProto(r rpc, g *VolumeGroup) (*volumegroup.VolumeGroup, error) {
	if g == nil || g.ID == "" {
		return nil, pluginBug(r, "the backend returned no volume group ID")
	}
	vg := &volumegroup.VolumeGroup{VolumeGroupId: g.ID, VolumeGroupContext: g.Context, Volumes: make([]*volumegroup.VgVolume, len(g.Volumes))}
	for i := range g.Volumes {
		v := &g.Volumes[i]
		if v.ID == "" {
			return nil, pluginBug(r, "volume group %q has a member without an ID", g.ID)
		}
		if slices.ContainsFunc(g.Volumes[:i], func(o Volume) bool { return o.ID == v.ID }) {
			return nil, pluginBug(r, "volume group %q lists volume %q twice", g.ID, v.ID)
		}
		pv := &volumegroup.VgVolume{CapacityBytes: v.CapacityBytes, VolumeId: v.ID, VolumeContext: v.Context}
		switch {
		case v.Source.SnapshotID != "":
			pv.ContentSource = &volumegroup.VgVolumeContentSource{Type: &volumegroup.VgVolumeContentSource_Snapshot{
				Snapshot: &volumegroup.VgVolumeContentSource_SnapshotSource{SnapshotId: v.Source.SnapshotID}}}
		case v.Source.VolumeID != "":
			pv.ContentSource = &volumegroup.VgVolumeContentSource{Type: &volumegroup.VgVolumeContentSource_Volume{
				Volume: &volumegroup.VgVolumeContentSource_VolumeSource{VolumeId: v.Source.VolumeID}}}
		}
		for _, t := range v.AccessibleTopology {
			pv.AccessibleTopology = append(pv.AccessibleTopology, &volumegroup.VgTopology{Segments: t})
		}
		vg.Volumes[i] = pv
	}
	return vg, nil
}

// servedVolumeGroupRPCs lists, for the manifest, the volume-group RPCs the backend serves.
func (d *Driver) servedVolumeGroupRPCs() string {
	var names []string
	for _, s := range rpcTable {
		if s.service == svcVolumeGroup && d.gate(s) == nil {
			names = append(names, string(s.name))
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
