package hostpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/volumegroup"
)

// Volume groups (the volumegroup.Controller service the IBM volume-group operator speaks) are
// named sets of this driver's volumes. A volume is in at most one group; deleting the group
// deletes its volumes, and a member cannot be deleted alone.
//
// Membership is kept as two indexes beside the volume records, so a change writes only the
// volumes that join or leave, and DeleteVolume asks one key whether a volume is a member.
const (
	bVolumeGroups       = "volume-groups"        // group ID -> volumeGroupRecord
	bVolumeGroupNames   = "volume-group-names"   // create name -> group ID
	bVolumeGroupMembers = "volume-group-members" // group ID + "/" + volume ID -> ""
	bVolumeGroupOf      = "volume-group-of"      // volume ID -> group ID
)

type volumeGroupRecord struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Fingerprint string    `json:"fp"`
	Created     time.Time `json:"created"`
	// Deleting is set once a delete has checked that no member is published: from then on no
	// volume may be published from it or join it, so the members it checked are the ones it
	// removes. A delete cut short leaves it set; the CO's retry finishes the delete.
	Deleting bool `json:"deleting,omitempty"`
}

// getVolumeGroup reads a group record; an ID this driver cannot have made is ErrNotFound.
func getVolumeGroup(tx *bolt.Tx, id string) (*volumeGroupRecord, error) {
	if !validID(id) || !strings.HasPrefix(id, "vg-") {
		return nil, fmt.Errorf("volume group %q: %w", id, driver.ErrNotFound)
	}
	var g volumeGroupRecord
	if err := getJSON(tx, bVolumeGroups, id, &g); errors.Is(err, errNoRecord) {
		return nil, fmt.Errorf("volume group %q: %w", id, driver.ErrNotFound)
	} else if err != nil {
		return nil, err
	}
	return &g, nil
}

// members returns a group's volume IDs in ID order: a prefix scan, O(members).
func members(tx *bolt.Tx, groupID string) []string {
	prefix := []byte(groupID + "/")
	var out []string
	cur := tx.Bucket([]byte(bVolumeGroupMembers)).Cursor()
	for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
		out = append(out, string(k[len(prefix):]))
	}
	return out
}

func join(tx *bolt.Tx, groupID, volumeID string) error {
	if err := putString(tx, bVolumeGroupMembers, groupID+"/"+volumeID, ""); err != nil {
		return err
	}
	return putString(tx, bVolumeGroupOf, volumeID, groupID)
}

func leave(tx *bolt.Tx, groupID, volumeID string) error {
	if err := del(tx, bVolumeGroupMembers, groupID+"/"+volumeID); err != nil {
		return err
	}
	return del(tx, bVolumeGroupOf, volumeID)
}

// notBeingDeleted refuses to publish a volume whose group is being deleted.
func notBeingDeleted(tx *bolt.Tx, volumeID string) error {
	id := getString(tx, bVolumeGroupOf, volumeID)
	if id == "" {
		return nil
	}
	g, err := getVolumeGroup(tx, id)
	if err != nil {
		return err
	}
	if g.Deleting {
		return fmt.Errorf("volume %q is being deleted with volume group %q: %w", volumeID, id, driver.ErrFailedPrecondition)
	}
	return nil
}

// checkJoin refuses n new members for a group that is missing, being deleted or would exceed the
// member limit.
func (c *Controller) checkJoin(tx *bolt.Tx, groupID string, n int) error {
	g, err := getVolumeGroup(tx, groupID)
	if err != nil {
		return err
	}
	if g.Deleting {
		return fmt.Errorf("volume group %q is being deleted: %w", g.ID, driver.ErrFailedPrecondition)
	}
	if limit := c.cfg.MaxGroupMembers; limit > 0 {
		if have := len(members(tx, g.ID)); have+n > limit {
			return fmt.Errorf("volume group %q has %d of at most %d volumes: %w", g.ID, have, limit, driver.ErrResourceExhausted)
		}
	}
	return nil
}

// joinParameter reads the group a new volume is to join, under either of its keys.
func joinParameter(params map[string]string) (string, bool, error) {
	ref, ok := params[ParamVolumeGroup]
	alias, aliased := params[ParamVolumeGroupOperator]
	switch {
	case ok && aliased && ref != alias:
		return "", false, fmt.Errorf("parameters %s and %s name different volume groups: %w", ParamVolumeGroup, ParamVolumeGroupOperator, driver.ErrInvalidArgument)
	case aliased:
		return alias, true, nil
	}
	return ref, ok, nil
}

// resolveVolumeGroup finds the group a CreateVolume parameter names by ID or by name.
func (c *Controller) resolveVolumeGroup(ref string) (string, error) {
	var id string
	err := c.st.view(func(tx *bolt.Tx) error {
		if _, err := getVolumeGroup(tx, ref); err == nil {
			id = ref
			return nil
		} else if !errors.Is(err, driver.ErrNotFound) {
			return err
		}
		id = getString(tx, bVolumeGroupNames, ref)
		return nil
	})
	if err != nil {
		return "", err
	}
	if id == "" {
		// INVALID_ARGUMENT rather than NOT_FOUND: for CreateVolume the spec keeps NOT_FOUND for a
		// missing content source.
		return "", fmt.Errorf("parameter %s=%q names no volume group: %w", ParamVolumeGroup, ref, driver.ErrInvalidArgument)
	}
	return id, nil
}

// publicVolumeGroup reports a group with its members, read in one transaction.
func (c *Controller) publicVolumeGroup(tx *bolt.Tx, g *volumeGroupRecord) (*volumegroup.Group, error) {
	out := &volumegroup.Group{ID: g.ID}
	for _, id := range members(tx, g.ID) {
		var rec volumeRecord
		if err := getJSON(tx, bVolumes, id, &rec); err != nil {
			return nil, fmt.Errorf("member %q of volume group %q: %w", id, g.ID, err)
		}
		out.Volumes = append(out.Volumes, *c.public(&rec))
	}
	return out, nil
}

// viewVolumeGroup reports one group as it is now.
func (c *Controller) viewVolumeGroup(id string) (*volumegroup.Group, error) {
	var out *volumegroup.Group
	err := c.st.view(func(tx *bolt.Tx) error {
		g, err := getVolumeGroup(tx, id)
		if err != nil {
			return err
		}
		out, err = c.publicVolumeGroup(tx, g)
		return err
	})
	return out, err
}

// CreateVolumeGroup creates an empty group, idempotently by name. The driver knows no group
// parameters, so any is refused rather than ignored.
func (c *Controller) CreateVolumeGroup(ctx context.Context, req *volumegroup.CreateVolumeGroupRequest) (*volumegroup.Group, error) {
	existing, err := byName[volumeGroupRecord](c.st, bVolumeGroupNames, bVolumeGroups, req.Name)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		g, err := c.viewVolumeGroup(existing.ID)
		if err != nil {
			return nil, err
		}
		if err := req.CheckExisting(existing.Fingerprint, g); err != nil {
			return nil, err
		}
		return g, nil
	}
	if len(req.Parameters) > 0 {
		return nil, fmt.Errorf("volume group parameter %q is not known to this driver: %w", sortedKeys(req.Parameters)[0], driver.ErrInvalidArgument)
	}
	g := &volumeGroupRecord{ID: newID("vg"), Name: req.Name, Fingerprint: req.Fingerprint(), Created: time.Now().UTC()}
	err = c.st.update(func(tx *bolt.Tx) error {
		if getString(tx, bVolumeGroupNames, g.Name) != "" {
			return fmt.Errorf("volume group %q was created concurrently: %w", g.Name, driver.ErrPending)
		}
		if err := putJSON(tx, bVolumeGroups, g.ID, g); err != nil {
			return err
		}
		return putString(tx, bVolumeGroupNames, g.Name, g.ID)
	})
	if err != nil {
		return nil, err
	}
	return &volumegroup.Group{ID: g.ID}, nil
}

// ModifyVolumeGroupMembership sets the members to exactly req.VolumeIDs in one transaction that
// checks every volume before it writes, so a refused change leaves the group as it was. It reads
// the requested volumes and the current members and writes only those that join or leave: the
// cost does not grow with the number of volumes outside the group.
func (c *Controller) ModifyVolumeGroupMembership(ctx context.Context, req *volumegroup.ModifyVolumeGroupMembershipRequest) (*volumegroup.Group, error) {
	// A missing group is NOT_FOUND even when the list is also too long.
	if err := c.st.view(func(tx *bolt.Tx) error { _, err := getVolumeGroup(tx, req.GroupID); return err }); err != nil {
		return nil, err
	}
	if limit := c.cfg.MaxGroupMembers; limit > 0 && len(req.VolumeIDs) > limit {
		return nil, fmt.Errorf("volume group %q can hold %d volumes, %d were asked for: %w", req.GroupID, limit, len(req.VolumeIDs), driver.ErrResourceExhausted)
	}
	err := c.st.update(func(tx *bolt.Tx) error {
		g, err := getVolumeGroup(tx, req.GroupID)
		if err != nil {
			return err
		}
		if g.Deleting {
			return fmt.Errorf("volume group %q is being deleted: %w", g.ID, driver.ErrFailedPrecondition)
		}
		want := make(map[string]bool, len(req.VolumeIDs))
		var joining []string
		for _, id := range req.VolumeIDs {
			if !validID(id) || !strings.HasPrefix(id, "vol-") || tx.Bucket([]byte(bVolumes)).Get([]byte(id)) == nil {
				return fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
			}
			switch other := getString(tx, bVolumeGroupOf, id); other {
			case g.ID:
			case "":
				joining = append(joining, id)
			default:
				return fmt.Errorf("volume %q is already in volume group %q: %w", id, other, driver.ErrUnsupported)
			}
			want[id] = true
		}
		// Every check is done: the writes below cannot be left half-applied by a refusal.
		for _, id := range members(tx, g.ID) {
			if !want[id] {
				if err := leave(tx, g.ID, id); err != nil {
					return err
				}
			}
		}
		for _, id := range joining {
			if err := join(tx, g.ID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.viewVolumeGroup(req.GroupID)
}

// DeleteVolumeGroup deletes a group and its volumes. It refuses with ErrInUse while any member
// is published, staged or mounted, before it removes anything. It then marks the group as being
// deleted, removes the backings and drops every record in one transaction, so a crash leaves
// either the whole group or a marked group whose retried delete finishes the work (a member whose
// backing is gone is dropped by the reconciliation at start-up).
func (c *Controller) DeleteVolumeGroup(ctx context.Context, req *volumegroup.DeleteVolumeGroupRequest) error {
	var ids []string
	var vols []volumeRecord
	err := c.st.view(func(tx *bolt.Tx) error {
		if _, err := getVolumeGroup(tx, req.GroupID); err != nil {
			return err
		}
		ids = members(tx, req.GroupID)
		vols = make([]volumeRecord, len(ids))
		for i, id := range ids {
			if err := getJSON(tx, bVolumes, id, &vols[i]); err != nil {
				return fmt.Errorf("member %q of volume group %q: %w", id, req.GroupID, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range vols {
		if err := c.checkUnused(&vols[i]); err != nil {
			return fmt.Errorf("volume group %q: %w", req.GroupID, err)
		}
	}
	err = c.st.update(func(tx *bolt.Tx) error {
		g, err := getVolumeGroup(tx, req.GroupID)
		if err != nil {
			return err
		}
		// A CreateVolume may have joined, or a member been published, since the checks above.
		if !slices.Equal(members(tx, g.ID), ids) {
			return fmt.Errorf("volume group %q changed while it was being deleted: %w", g.ID, driver.ErrPending)
		}
		for _, id := range ids {
			var cur volumeRecord
			if err := getJSON(tx, bVolumes, id, &cur); err != nil {
				return err
			}
			if len(cur.Published) > 0 {
				return fmt.Errorf("volume group %q: volume %q is published on node %s: %w", g.ID, id, strings.Join(sortedKeys(cur.Published), ", "), driver.ErrInUse)
			}
		}
		if g.Deleting {
			return nil
		}
		g.Deleting = true
		return putJSON(tx, bVolumeGroups, g.ID, g)
	})
	if err != nil {
		return err
	}
	for i := range vols {
		if err := removeAll(c.l.backing(vols[i].Kind, vols[i].ID)); err != nil {
			return fmt.Errorf("volume group %q: %w", req.GroupID, err)
		}
	}
	if err := fail("delete-volume-group:after-backings"); err != nil {
		return err
	}
	return c.st.update(func(tx *bolt.Tx) error {
		var g volumeGroupRecord
		if err := getJSON(tx, bVolumeGroups, req.GroupID, &g); errors.Is(err, errNoRecord) {
			return nil
		} else if err != nil {
			return err
		}
		for _, id := range members(tx, g.ID) {
			var cur volumeRecord
			if err := getJSON(tx, bVolumes, id, &cur); err != nil {
				return err
			}
			if err := leave(tx, g.ID, id); err != nil {
				return err
			}
			if err := del(tx, bVolumes, id); err != nil {
				return err
			}
			if err := del(tx, bVolumeNames, cur.Name); err != nil {
				return err
			}
			if err := addCounter(tx, bMeta, metaUsed, -cur.Size); err != nil {
				return err
			}
		}
		if err := del(tx, bVolumeGroups, g.ID); err != nil {
			return err
		}
		return del(tx, bVolumeGroupNames, g.Name)
	})
}

// ControllerGetVolumeGroup returns one group with its members.
func (c *Controller) ControllerGetVolumeGroup(ctx context.Context, req *volumegroup.ControllerGetVolumeGroupRequest) (*volumegroup.Group, error) {
	return c.viewVolumeGroup(req.GroupID)
}

// ListVolumeGroups returns every group.
func (c *Controller) ListVolumeGroups(ctx context.Context, req *volumegroup.ListVolumeGroupsRequest) ([]volumegroup.Group, error) {
	return c.ListVolumeGroupsPage(ctx, &volumegroup.ListVolumeGroupsRequest{Secrets: req.Secrets, Raw: req.Raw})
}

// ListVolumeGroupsPage seeks to the cursor in the ID-ordered bucket: one page costs O(page and
// its members), however many groups there are.
func (c *Controller) ListVolumeGroupsPage(ctx context.Context, req *volumegroup.ListVolumeGroupsRequest) ([]volumegroup.Group, error) {
	var out []volumegroup.Group
	err := c.st.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket([]byte(bVolumeGroups)).Cursor()
		k, v := cur.Seek([]byte(req.After))
		if req.After != "" && bytes.Equal(k, []byte(req.After)) {
			k, v = cur.Next()
		}
		for ; k != nil && (req.Limit == 0 || len(out) < req.Limit); k, v = cur.Next() {
			var g volumeGroupRecord
			if err := jsonDecode(v, &g); err != nil {
				return err
			}
			pg, err := c.publicVolumeGroup(tx, &g)
			if err != nil {
				return err
			}
			out = append(out, *pg)
		}
		return nil
	})
	return out, err
}

// checkWholeGroup refuses source volumes that are not exactly the members of a volume group: a
// snapshot "of the group" that left a member out, or took in an outsider, would not be one.
// Both lists are read by key, O(members).
func checkWholeGroup(tx *bolt.Tx, groupID string, sources []string) error {
	g, err := getVolumeGroup(tx, groupID)
	if err != nil {
		return err
	}
	if g.Deleting {
		return fmt.Errorf("volume group %q is being deleted: %w", g.ID, driver.ErrFailedPrecondition)
	}
	var missing, outside []string
	for _, id := range members(tx, g.ID) {
		if !slices.Contains(sources, id) {
			missing = append(missing, id)
		}
	}
	for _, id := range sources {
		if getString(tx, bVolumeGroupOf, id) != g.ID {
			outside = append(outside, id)
		}
	}
	if len(missing)+len(outside) > 0 {
		return fmt.Errorf("source_volume_ids must be exactly the members of volume group %q (parameter %s): missing [%s], not members [%s]: %w",
			g.ID, ParamVolumeGroup, strings.Join(missing, ", "), strings.Join(outside, ", "), driver.ErrInvalidArgument)
	}
	return nil
}
