package memdriver

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/volumegroup"
)

// volumeGroup is one volume group: its members, and what a repeated create is compared with.
type volumeGroup struct {
	id, name    string
	fingerprint string
	params      map[string]string
	members     []string // volume IDs, in the order they joined
}

func (d *Driver) publicVolumeGroup(g *volumeGroup) *volumegroup.Group {
	out := &volumegroup.Group{ID: g.id, Context: map[string]string{"name": g.name}}
	for _, id := range g.members {
		out.Volumes = append(out.Volumes, *d.volumes[id].public())
	}
	return out
}

// CreateVolumeGroup creates an empty volume group, idempotently by name.
func (d *Driver) CreateVolumeGroup(_ context.Context, req *volumegroup.CreateVolumeGroupRequest) (*volumegroup.Group, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.volGroupNames[req.Name]; ok {
		g := d.publicVolumeGroup(d.volGroups[id])
		if err := req.CheckExisting(d.volGroups[id].fingerprint, g); err != nil {
			return nil, err
		}
		return g, nil
	}
	d.seq++
	g := &volumeGroup{id: fmt.Sprintf("vg-%d", d.seq), name: req.Name, fingerprint: req.Fingerprint(), params: maps.Clone(req.Parameters)}
	d.volGroups[g.id] = g
	d.volGroupNames[g.name] = g.id
	return d.publicVolumeGroup(g), nil
}

// DeleteVolumeGroup deletes a group and its volumes, refusing while any member is in use: the
// group goes whole or not at all.
func (d *Driver) DeleteVolumeGroup(_ context.Context, req *volumegroup.DeleteVolumeGroupRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.volGroups[req.GroupID]
	if !ok {
		return fmt.Errorf("volume group %q: %w", req.GroupID, driver.ErrNotFound)
	}
	for _, id := range g.members {
		if err := d.inUse(d.volumes[id]); err != nil {
			return fmt.Errorf("volume group %q: %w", g.id, err)
		}
	}
	for _, id := range g.members {
		delete(d.names, d.volumes[id].name)
		delete(d.volumes, id)
		delete(d.memberOf, id)
	}
	delete(d.volGroups, g.id)
	delete(d.volGroupNames, g.name)
	return nil
}

// ModifyVolumeGroupMembership sets the members to exactly the requested volumes. It checks every
// volume before it changes anything, so a refused request leaves the group as it was, and it
// touches only the volumes that join or leave.
func (d *Driver) ModifyVolumeGroupMembership(_ context.Context, req *volumegroup.ModifyVolumeGroupMembershipRequest) (*volumegroup.Group, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.volGroups[req.GroupID]
	if !ok {
		return nil, fmt.Errorf("volume group %q: %w", req.GroupID, driver.ErrNotFound)
	}
	if limit := d.opts.MaxGroupMembers; limit > 0 && len(req.VolumeIDs) > limit {
		return nil, fmt.Errorf("volume group %q can hold %d volumes, %d were asked for: %w", g.id, limit, len(req.VolumeIDs), driver.ErrResourceExhausted)
	}
	for _, id := range req.VolumeIDs {
		if _, ok := d.volumes[id]; !ok {
			return nil, fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
		}
		if other, ok := d.memberOf[id]; ok && other != g.id {
			return nil, fmt.Errorf("volume %q is already in volume group %q: %w", id, other, driver.ErrUnsupported)
		}
	}
	for _, id := range g.members {
		if !slices.Contains(req.VolumeIDs, id) {
			delete(d.memberOf, id)
		}
	}
	for _, id := range req.VolumeIDs {
		d.memberOf[id] = g.id
	}
	g.members = slices.Clone(req.VolumeIDs)
	return d.publicVolumeGroup(g), nil
}

// ControllerGetVolumeGroup returns one group.
func (d *Driver) ControllerGetVolumeGroup(_ context.Context, req *volumegroup.ControllerGetVolumeGroupRequest) (*volumegroup.Group, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.volGroups[req.GroupID]
	if !ok {
		return nil, fmt.Errorf("volume group %q: %w", req.GroupID, driver.ErrNotFound)
	}
	return d.publicVolumeGroup(g), nil
}

// ListVolumeGroups returns every group; the library sorts and pages them.
func (d *Driver) ListVolumeGroups(context.Context, *volumegroup.ListVolumeGroupsRequest) ([]volumegroup.Group, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]volumegroup.Group, 0, len(d.volGroups))
	for _, g := range d.volGroups {
		out = append(out, *d.publicVolumeGroup(g))
	}
	return out, nil
}

// ParamVolumeGroup names a volume group, by ID or by name. As a CreateVolume parameter it makes
// the new volume a member of that group; as a CreateVolumeGroupSnapshot parameter it asks for a
// snapshot of exactly that group's members, which source_volume_ids must list.
const ParamVolumeGroup = "volumegroup.csikit.dev/group"

// namedVolumeGroup resolves ParamVolumeGroup; the caller holds d.mu. A group that does not exist
// is ErrInvalidArgument: for CreateVolume the spec keeps NOT_FOUND for a missing content source.
func (d *Driver) namedVolumeGroup(params map[string]string) (*volumeGroup, error) {
	ref, ok := params[ParamVolumeGroup]
	if !ok {
		return nil, nil
	}
	if g, ok := d.volGroups[ref]; ok {
		return g, nil
	}
	if id, ok := d.volGroupNames[ref]; ok {
		return d.volGroups[id], nil
	}
	return nil, fmt.Errorf("parameter %s=%q names no volume group: %w", ParamVolumeGroup, ref, driver.ErrInvalidArgument)
}

// joinTarget returns the group a new volume is to join, refusing a full one; the caller holds
// d.mu.
func (d *Driver) joinTarget(params map[string]string) (*volumeGroup, error) {
	g, err := d.namedVolumeGroup(params)
	if err != nil || g == nil {
		return g, err
	}
	if limit := d.opts.MaxGroupMembers; limit > 0 && len(g.members) >= limit {
		return nil, fmt.Errorf("volume group %q has %d of at most %d volumes: %w", g.id, len(g.members), limit, driver.ErrResourceExhausted)
	}
	return g, nil
}

// checkWholeGroup refuses a group snapshot that names a volume group whose members are not
// exactly the source volumes; the caller holds d.mu.
func (d *Driver) checkWholeGroup(params map[string]string, sources []string) error {
	g, err := d.namedVolumeGroup(params)
	if err != nil || g == nil {
		return err
	}
	var missing, extra []string
	for _, id := range g.members {
		if !slices.Contains(sources, id) {
			missing = append(missing, id)
		}
	}
	for _, id := range sources {
		if d.memberOf[id] != g.id {
			extra = append(extra, id)
		}
	}
	if len(missing)+len(extra) > 0 {
		return fmt.Errorf("source_volume_ids must be exactly the members of volume group %q: missing %v, not members %v: %w", g.id, missing, extra, driver.ErrInvalidArgument)
	}
	return nil
}
