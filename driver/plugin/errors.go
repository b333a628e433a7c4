package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/csikit/csikit/driver"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// mapError turns a backend error into the status the RPC's error table demands. It returns nil
// when the error means success for this RPC (not found on a delete, unsupported on
// ValidateVolumeCapabilities, whose handler then declines). ctx is the context the backend was
// called with: whether it has ended tells the caller's deadline from the backend's own timeout.
//
// The sentinels decide first, wherever they are in the chain. A gRPC status keeps its code when
// the backend returned it as is; wrapped deeper (an upstream SDK's status inside the backend's
// error) only codes that mean the same in every RPC survive (unavailable, deadline, cancelled,
// authentication), because an upstream NOT_FOUND or ALREADY_EXISTS says nothing about this RPC's
// table. Then transient faults (transientCode): timeouts and cancellations are DEADLINE_EXCEEDED
// or CANCELLED when the caller's context ended and UNAVAILABLE when the backend gave up on its
// own, broken connections are UNAVAILABLE. Anything else is INTERNAL. Status details are dropped:
// the spec says they MUST be empty.
func mapError(ctx context.Context, r rpc, err error) error {
	if err == nil {
		return nil
	}
	spec := rpcTable[r]
	if code, ok := sentinelCode(r, err); ok {
		if code == codes.OK {
			return nil
		}
		msg := err.Error()
		if code == codes.InvalidArgument && !strings.HasPrefix(msg, string(r)+": ") {
			// The backend's refusal of a request reads like the library's own: the RPC first.
			msg = string(r) + ": " + msg
		}
		return status.Error(code, msg)
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
	if code, ok := transientCode(ctx, err); ok {
		if cause := context.Cause(ctx); cause == errBackendTimeout && !errors.Is(err, cause) {
			return status.Errorf(code, "%s: %v (%v)", r, err, cause)
		}
		return status.Error(code, err.Error())
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unauthenticated, codes.PermissionDenied:
			return status.Error(st.Code(), err.Error())
		}
	}
	return status.Error(codes.Internal, fmt.Sprintf("%s: backend error: %v (%s)", r, err, sentinelHint))
}

// sentinelHint ends the INTERNAL answer to a plain backend error. Such an error is often one the
// spec gives a code of its own (a volume not found, a name taken): the hint tells the driver's
// author how to choose it, where the CO's event shows the message.
const sentinelHint = "a plain error is INTERNAL: return an error wrapping driver.ErrNotFound, driver.ErrAlreadyExists, " +
	"driver.ErrInvalidArgument, driver.ErrUnavailable or another driver.Err* sentinel to answer its code"

// invalid answers INVALID_ARGUMENT in the form every refusal of a request takes, the one the
// validation middleware's messages have too: the RPC, the field (its path in the request), then
// what is wrong with it.
//
//	CreateVolume: readonly: this plugin does not advertise PUBLISH_READONLY, so readonly must be false
func invalid(r rpc, field, format string, args ...any) error {
	return status.Error(codes.InvalidArgument, string(r)+": "+field+": "+fmt.Sprintf(format, args...))
}

// sentinelCode maps the sentinels of package driver.
func sentinelCode(r rpc, err error) (codes.Code, bool) {
	code := codeFor(r, err)
	return code, code != codes.Internal
}

// codeFor maps the sentinels: the common table, with the per-RPC rows taken from the RPC's entry
// in rpcTable.
func codeFor(r rpc, err error) codes.Code {
	spec := rpcTable[r]
	switch {
	case errors.Is(err, driver.ErrNotFound):
		if spec.goneIsDone {
			return codes.OK
		}
		return codes.NotFound
	case errors.Is(err, driver.ErrAlreadyExists):
		return codes.AlreadyExists
	case errors.Is(err, driver.ErrInUse), errors.Is(err, driver.ErrFailedPrecondition):
		return codes.FailedPrecondition
	case errors.Is(err, driver.ErrUnsupported):
		if spec.unsupportedDeclines {
			return codes.OK
		}
		return spec.unsupported
	case errors.Is(err, driver.ErrInvalidArgument), errors.Is(err, driver.ErrGroupMember):
		return codes.InvalidArgument
	case errors.Is(err, driver.ErrOutOfRange):
		return codes.OutOfRange
	case errors.Is(err, driver.ErrResourceExhausted):
		return codes.ResourceExhausted
	case errors.Is(err, driver.ErrPending):
		return codes.Aborted
	case errors.Is(err, driver.ErrUnauthenticated):
		return codes.Unauthenticated
	case errors.Is(err, driver.ErrPermissionDenied):
		return codes.PermissionDenied
	case errors.Is(err, driver.ErrUnavailable):
		return codes.Unavailable
	}
	return codes.Internal
}

// pluginBug reports a backend answer that breaks the spec.
func pluginBug(r rpc, format string, args ...any) error {
	return status.Errorf(codes.Internal, "%s: plugin bug: %s", r, fmt.Sprintf(format, args...))
}
