package driver

import (
	"errors"
)

// Sentinel errors a backend returns, wrapped with context (fmt.Errorf("volume %q: %w", id,
// driver.ErrNotFound)). The library turns them into the gRPC code each RPC's error table demands;
// the wrapped text becomes the status message, so say what the CO or an operator should know. A
// backend that returns a gRPC status error keeps its code.
var (
	// ErrNotFound: the volume, snapshot, node or source does not exist. Delete and unpublish calls
	// answer OK; every other call NOT_FOUND.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a resource with this name (or a publication at this node or path) exists
	// with incompatible settings. ALREADY_EXISTS.
	ErrAlreadyExists = errors.New("already exists with different settings")
	// ErrInUse: the resource cannot be changed or deleted while something uses it.
	// FAILED_PRECONDITION.
	ErrInUse = errors.New("in use")
	// ErrFailedPrecondition: the system is not in a state where the call can succeed (published on
	// another node, no changed-block tracking, plugin not healthy). FAILED_PRECONDITION.
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnsupported: a source, capability or parameter this plugin or volume cannot provide.
	// INVALID_ARGUMENT, except NodeStage/NodePublish ("exceeds capabilities": FAILED_PRECONDITION)
	// and ValidateVolumeCapabilities (an unconfirmed answer).
	ErrUnsupported = errors.New("not supported")
	// ErrInvalidArgument: a field value the plugin does not accept (e.g. an unknown parameter).
	// INVALID_ARGUMENT.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrOutOfRange: the capacity range (or offset) cannot be honoured. OUT_OF_RANGE.
	ErrOutOfRange = errors.New("out of range")
	// ErrResourceExhausted: no space, quota or attach slot. RESOURCE_EXHAUSTED.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrGroupMember: the snapshot belongs to a group snapshot and cannot be deleted alone.
	// INVALID_ARGUMENT (the caller must delete the group).
	ErrGroupMember = errors.New("part of a group snapshot")
	// ErrPending: an operation on the resource is still in progress in the backend. ABORTED.
	ErrPending = errors.New("operation pending")
	// ErrUnauthenticated: the secrets do not authenticate. UNAUTHENTICATED.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrPermissionDenied: the identity in the secrets may not do this. PERMISSION_DENIED.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: a transient fault; the CO should retry. UNAVAILABLE.
	ErrUnavailable = errors.New("temporarily unavailable")
)
