package volumegroup

import (
	"context"
	"fmt"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/idempotency"
)

// Every request type carries Raw, the wire request, with its secrets (vg_csi_secret) in clear.
// So each type prints and JSON-encodes itself from Raw, with every secret value replaced. The
// methods are generated into requests_format.go by internal/reqfmt, as for package driver.
// TestFormattersAreGenerated fails until a new request type has them.

//go:generate env CSIKIT_WRITE_FORMATTERS=1 go test -run ^TestFormattersAreGenerated$ .

// Controller is the required part of a volume-group backend: create, delete and change the
// membership of groups. Getter, Lister and PageLister are optional on the same value.
type Controller interface {
	// CreateVolumeGroup creates an empty group or, for a name it has seen, returns the existing
	// group when the request is compatible (CreateVolumeGroupRequest.CheckExisting) and an error
	// wrapping driver.ErrAlreadyExists otherwise. Parameters it does not accept are
	// driver.ErrInvalidArgument.
	CreateVolumeGroup(ctx context.Context, req *CreateVolumeGroupRequest) (*Group, error)
	// DeleteVolumeGroup deletes a group and the volumes in it; ErrNotFound counts as success, a
	// group whose volumes are still in use is ErrInUse.
	DeleteVolumeGroup(ctx context.Context, req *DeleteVolumeGroupRequest) error
	// ModifyVolumeGroupMembership sets the group's members to exactly VolumeIDs: volumes not yet
	// in it join, members not listed leave, an empty list empties it. It returns the group as it
	// is afterwards. A missing group or volume is ErrNotFound; a volume that cannot join (another
	// group, another kind of storage) is ErrUnsupported or ErrInvalidArgument; the member limit
	// reached is ErrResourceExhausted. A failure must leave the membership as it was.
	ModifyVolumeGroupMembership(ctx context.Context, req *ModifyVolumeGroupMembershipRequest) (*Group, error)
}

// Getter reports one group (ControllerGetVolumeGroup).
type Getter interface {
	// ControllerGetVolumeGroup returns the group with its members; a missing group is
	// ErrNotFound.
	ControllerGetVolumeGroup(ctx context.Context, req *ControllerGetVolumeGroupRequest) (*Group, error)
}

// Lister returns every group; the plugin sorts, filters and pages the answer
// (ListVolumeGroups).
type Lister interface {
	// ListVolumeGroups returns all groups; After and Limit of the request are to be ignored.
	ListVolumeGroups(ctx context.Context, req *ListVolumeGroupsRequest) ([]Group, error)
}

// PageLister returns one page of groups after a cursor, so a page costs O(page)
// (ListVolumeGroups).
type PageLister interface {
	// ListVolumeGroupsPage returns at most Limit groups (0 = no limit) whose IDs sort strictly
	// after After, in ascending ID order.
	ListVolumeGroupsPage(ctx context.Context, req *ListVolumeGroupsRequest) ([]Group, error)
}

// Group is what a backend reports about one volume group.
type Group struct {
	// ID is the plugin-chosen identifier; required.
	ID string
	// Context is opaque data the CO passes back on later calls about the group.
	Context map[string]string
	// Volumes are the members.
	Volumes []driver.Volume
}

// CreateVolumeGroupRequest asks for a new, empty volume group.
type CreateVolumeGroupRequest struct {
	// Name is the CO's name for the group; the same name must always give the same group.
	Name string
	// Parameters are the opaque group-class parameters.
	Parameters map[string]string
	// Secrets are the credentials the CO passed (vg_csi_secret); never log them.
	Secrets driver.Secrets
	// Raw is the original request; backends must not modify it.
	Raw *vgpb.CreateVolumeGroupRequest
}

// Fingerprint is a stable digest of what must be the same when a group is created again under
// the same name: its parameters, never secrets. Store it with the group.
func (r *CreateVolumeGroupRequest) Fingerprint() string {
	return idempotency.Fingerprint(r.Raw, "name", "secrets")
}

// CheckExisting decides a repeated CreateVolumeGroup: nil when the stored fingerprint matches, an
// error wrapping ErrAlreadyExists otherwise.
func (r *CreateVolumeGroupRequest) CheckExisting(fingerprint string, existing *Group) error {
	if existing == nil || fingerprint == r.Fingerprint() {
		return nil
	}
	return fmt.Errorf("volume group %q (%s) was created with other parameters: %w", r.Name, existing.ID, driver.ErrAlreadyExists)
}

// DeleteVolumeGroupRequest asks to delete a group and its volumes.
type DeleteVolumeGroupRequest struct {
	// GroupID is the group to delete.
	GroupID string
	// Secrets are the credentials the CO passed; never log them.
	Secrets driver.Secrets
	// Raw is the original request; backends must not modify it.
	Raw *vgpb.DeleteVolumeGroupRequest
}

// ModifyVolumeGroupMembershipRequest asks to set a group's members to exactly VolumeIDs.
type ModifyVolumeGroupMembershipRequest struct {
	// GroupID is the group to change.
	GroupID string
	// VolumeIDs are the members it must have afterwards, without duplicates.
	VolumeIDs []string
	// Secrets are the credentials the CO passed; never log them.
	Secrets driver.Secrets
	// Raw is the original request; backends must not modify it.
	Raw *vgpb.ModifyVolumeGroupMembershipRequest
}

// ControllerGetVolumeGroupRequest asks for one group.
type ControllerGetVolumeGroupRequest struct {
	// GroupID is the group asked for.
	GroupID string
	// Secrets are the credentials the CO passed; never log them.
	Secrets driver.Secrets
	// Raw is the original request; backends must not modify it.
	Raw *vgpb.ControllerGetVolumeGroupRequest
}

// ListVolumeGroupsRequest asks for groups. A Lister ignores After and Limit; a
// PageLister returns at most Limit groups (0 = no limit) whose IDs sort strictly after
// After, in ascending ID order.
type ListVolumeGroupsRequest struct {
	// After is the cursor: the last group ID of the previous page, or "".
	After string
	// Limit is the most groups to return; 0 means no limit.
	Limit int
	// Secrets are the credentials the CO passed; never log them.
	Secrets driver.Secrets
	// Raw is the original request; backends must not modify it.
	Raw *vgpb.ListVolumeGroupsRequest
}
