package driver

import (
	"errors"
)

// Sentinel errors a backend returns, wrapped with context (fmt.Errorf("volume %q: %w", id,
// driver.ErrNotFound)). The library turns them into the gRPC code each RPC's error table demands,
// and each sentinel's doc below says which, for every CSI RPC ("CSI: ..."); the packages of the
// other services a plugin can serve list their own answers, from the same table. The wrapped text
// becomes the status message, so say what the CO or an operator should know.
//
// The same table decides what is not a sentinel: an error wrapping context.Canceled or
// context.DeadlineExceeded is CANCELLED or DEADLINE_EXCEEDED; a gRPC status the backend returns
// as it is keeps its code (a NOT_FOUND status from a delete is OK, as ErrNotFound is, except from
// ControllerUnpublishVolume, where it is the way to say that the volume or node is gone and
// cannot be regarded as unpublished); a status wrapped deeper keeps only UNAVAILABLE,
// DEADLINE_EXCEEDED, CANCELLED, UNAUTHENTICATED and PERMISSION_DENIED; anything else is INTERNAL,
// with a message that names the RPC. A Prober's error that is none of these is FAILED_PRECONDITION
// ("not healthy"). Status details are always dropped.
var (
	// ErrNotFound: the volume, snapshot, group snapshot, node or source does not exist.
	// CSI: NOT_FOUND, but OK from ControllerUnpublishVolume, DeleteSnapshot, DeleteVolume and
	// DeleteVolumeGroupSnapshot: a delete or detach of what is gone has reached its goal, and a
	// retry of one that succeeded must not fail. Everywhere else, NodeUnpublishVolume and
	// NodeUnstageVolume included, "gone" is an answer the CO must see (a target that is not
	// published is success there: return nil for it, and ErrNotFound only for a volume that does
	// not exist at all). A SnapshotGetter's ErrNotFound while the plugin serves a ListSnapshots
	// by snapshot ID is an empty list.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a resource with this name (or a publication at this node or path) exists
	// with incompatible settings. CSI: ALREADY_EXISTS.
	ErrAlreadyExists = errors.New("already exists with different settings")
	// ErrInUse: the resource cannot be changed or deleted while something uses it.
	// CSI: FAILED_PRECONDITION.
	ErrInUse = errors.New("in use")
	// ErrFailedPrecondition: the system is not in a state where the call can succeed (published on
	// another node, no changed-block tracking, plugin not healthy). CSI: FAILED_PRECONDITION.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnsupported: a source, capability or parameter this plugin or volume cannot provide.
	// CSI: INVALID_ARGUMENT, but FAILED_PRECONDITION from NodePublishVolume and NodeStageVolume;
	// OK from ValidateVolumeCapabilities. The node calls follow the spec's "exceeds capabilities";
	// ValidateVolumeCapabilities declines: its answer is unconfirmed, with the error's text as
	// the message.
	ErrUnsupported = errors.New("not supported")
	// ErrInvalidArgument: a field value the plugin does not accept (e.g. an unknown parameter).
	// CSI: INVALID_ARGUMENT.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrOutOfRange: the capacity range (or offset) cannot be honoured. CSI: OUT_OF_RANGE.
	ErrOutOfRange = errors.New("out of range")
	// ErrResourceExhausted: no space, quota or attach slot. CSI: RESOURCE_EXHAUSTED.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrGroupMember: the snapshot belongs to a group snapshot and cannot be deleted alone.
	// CSI: INVALID_ARGUMENT (the caller must delete the group).
	ErrGroupMember = errors.New("part of a group snapshot")
	// ErrPending: an operation on the resource is still in progress in the backend. CSI: ABORTED.
	ErrPending = errors.New("operation pending")
	// ErrUnauthenticated: the secrets do not authenticate. CSI: UNAUTHENTICATED.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrPermissionDenied: the identity in the secrets may not do this. CSI: PERMISSION_DENIED.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: a transient fault; the CO should retry. CSI: UNAVAILABLE.
	ErrUnavailable = errors.New("temporarily unavailable")
)
