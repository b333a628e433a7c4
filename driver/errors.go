package driver

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// mapError turns a backend error into the status the RPC's error table demands. It returns nil
// when the error means success for this RPC (not found on a delete).
//
// The sentinels decide first, wherever they are in the chain. A gRPC status keeps its code when
// the backend returned it as is; wrapped deeper (an upstream SDK's status inside the backend's
// error) only codes that mean the same in every RPC survive (unavailable, deadline, cancelled,
// authentication), because an upstream NOT_FOUND or ALREADY_EXISTS says nothing about this RPC's
// table. Status details are dropped: the spec says they MUST be empty.
func mapError(r rpc, err error) error {
	if err == nil {
		return nil
	}
	spec := rpcTable[r]
	if code, ok := sentinelCode(r, err); ok {
		if code == codes.OK {
			return nil
		}
		return status.Error(code, err.Error())
	}
	if s, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		st := s.GRPCStatus()
		switch {
		case st.Code() == codes.OK:
			return status.Errorf(codes.Internal, "%s: the backend returned an error with code OK: %s", r, st.Message())
		case st.Code() == codes.NotFound && spec.goneIsDone && !spec.keepNotFoundStatus:
			// Deleting what does not exist succeeds.
			return nil
		}
		return status.Error(st.Code(), st.Message())
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unauthenticated, codes.PermissionDenied:
			return status.Error(st.Code(), err.Error())
		}
	}
	return status.Error(codes.Internal, fmt.Sprintf("%s: %v", r, err))
}

// sentinelCode maps the errors whose meaning does not depend on gRPC: the sentinels and the
// context errors.
func sentinelCode(r rpc, err error) (codes.Code, bool) {
	code := codeFor(r, err)
	return code, code != codes.Internal
}

// codeFor maps the sentinels: the common table, with the per-RPC rows taken from the RPC's entry
// in rpcTable.
func codeFor(r rpc, err error) codes.Code {
	spec := rpcTable[r]
	switch {
	case errors.Is(err, ErrNotFound):
		if spec.goneIsDone {
			return codes.OK
		}
		return codes.NotFound
	case errors.Is(err, ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, ErrInUse), errors.Is(err, ErrFailedPrecondition):
		return codes.FailedPrecondition
	case errors.Is(err, ErrUnsupported):
		return spec.unsupported
	case errors.Is(err, ErrInvalidArgument), errors.Is(err, ErrGroupMember):
		return codes.InvalidArgument
	case errors.Is(err, ErrOutOfRange):
		return codes.OutOfRange
	case errors.Is(err, ErrResourceExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, ErrPending):
		return codes.Aborted
	case errors.Is(err, ErrUnauthenticated):
		return codes.Unauthenticated
	case errors.Is(err, ErrPermissionDenied):
		return codes.PermissionDenied
	case errors.Is(err, ErrUnavailable):
		return codes.Unavailable
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Internal
}

// pluginBug reports a backend answer that breaks the spec.
func pluginBug(r rpc, format string, args ...any) error {
	return status.Errorf(codes.Internal, "%s: plugin bug: %s", r, fmt.Sprintf(format, args...))
}
