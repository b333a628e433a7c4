// Package volumegroup is the volume-group contract: what a backend implements so that package
// plugin serves the volumegroup.Controller service of github.com/IBM/csi-volume-group (the one
// the IBM volume-group operator speaks), beside the CSI services on the same socket.
// Volume groups keep several volumes consistent together.
//
// A backend implements Controller (CreateVolumeGroup, DeleteVolumeGroup,
// ModifyVolumeGroupMembership) and, optionally on the same value, Getter
// (ControllerGetVolumeGroup) and Lister or PageLister (ListVolumeGroups, a full listing the plugin
// sorts and pages, or one page after a cursor). It answers with a Group, whose members are
// driver.Volume values, and returns the sentinels of package driver (driver.ErrNotFound,
// driver.ErrAlreadyExists, ...), which the plugin maps to the codes of the volume-group spec's error table.
//
// Each request type is named after the method that receives it (CreateVolumeGroupRequest,
// DeleteVolumeGroupRequest, ModifyVolumeGroupMembershipRequest, ControllerGetVolumeGroupRequest,
// ListVolumeGroupsRequest), arrives validated, and keeps the wire request in Raw. Requests print
// and JSON-encode with their secrets (vg_csi_secret) hidden. A create is idempotent by name:
// CreateVolumeGroupRequest.Fingerprint and CheckExisting decide a repeated one, as for CSI's
// create-by-name calls.
//
// # Errors
//
// The plugin answers the sentinels of package driver with these codes (the volume-group spec's error table):
//
//   - driver.ErrNotFound: NOT_FOUND, but OK from DeleteVolumeGroup: a delete of what is gone has
//     reached its goal.
//   - driver.ErrAlreadyExists: ALREADY_EXISTS.
//   - driver.ErrInUse: FAILED_PRECONDITION.
//   - driver.ErrFailedPrecondition: FAILED_PRECONDITION.
//   - driver.ErrUnsupported: INVALID_ARGUMENT.
//   - driver.ErrInvalidArgument: INVALID_ARGUMENT.
//   - driver.ErrOutOfRange: OUT_OF_RANGE.
//   - driver.ErrResourceExhausted: RESOURCE_EXHAUSTED.
//   - driver.ErrPending: ABORTED.
//   - driver.ErrUnauthenticated: UNAUTHENTICATED.
//   - driver.ErrPermissionDenied: PERMISSION_DENIED.
//   - driver.ErrUnavailable: UNAVAILABLE.
//
// Errors that are not sentinels follow the rules in package driver's documentation of the
// sentinels.
//
// The proto has no capability RPC, so the plugin lists the group RPCs it serves in
// GetPluginInfo's manifest (plugin.ManifestVolumeGroupRPCs) and answers UNIMPLEMENTED for the
// rest. driver/memdriver implements this contract in memory; examples/hostpath on disk.
package volumegroup
