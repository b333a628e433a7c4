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
// The same table decides what is not a sentinel. A gRPC status the backend returns as it is
// keeps its code (a NOT_FOUND status from a delete is OK, as ErrNotFound is, except from
// ControllerUnpublishVolume, where it is the way to say that the volume or node is gone and
// cannot be regarded as unpublished). Then come faults (see ErrUnavailable for the list): a
// broken or refused connection is UNAVAILABLE; a timeout or cancellation is DEADLINE_EXCEEDED or
// CANCELLED when the CO's own deadline passed or the CO went away, and UNAVAILABLE when the
// backend gave up on its own (a client library's timeout, a context of its own, the plugin's
// backend timeout). A status wrapped deeper keeps only UNAUTHENTICATED and PERMISSION_DENIED
// beside those. Anything else is INTERNAL, with a message that names the RPC. A Prober's fault
// is "not ready" rather than an error, and its other errors that are none of these are
// FAILED_PRECONDITION ("not healthy"). Status details are always dropped.
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
	// ErrPending: an operation on the resource is still in progress in the backend (a clone
	// that has not finished). CSI: ABORTED. Every CO retries it with the same request, and the
	// retry must find the same operation and finish it, never start a second one (see "Slow,
	// unreachable and asynchronous backends" in the package documentation). A test harness
	// need not retry (csi-sanity does not): wait a little for the operation, within the call's
	// deadline, before answering ErrPending, so that a short one completes in one call, as
	// examples/cephfs does with --clone-wait.
	ErrPending = errors.New("operation pending")
	// ErrUnauthenticated: the secrets do not authenticate. CSI: UNAUTHENTICATED.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrPermissionDenied: the identity in the secrets may not do this. CSI: PERMISSION_DENIED.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: a transient fault; the CO should retry. CSI: UNAVAILABLE. Every service
	// answers it so from every RPC, and a Prober that returns it is not ready (ready=false, no
	// error).
	//
	// A backend need not wrap every fault in it: the plugin answers UNAVAILABLE for these too,
	// wherever they are in the error's chain, because a sidecar may take any other code as
	// final and stop retrying (the external-provisioner then gives up on a CreateVolume whose
	// claim is deleted, and may leave behind what the backend did create):
	//   - a connection refused, reset, aborted or not there (the system errors ECONNREFUSED,
	//     ECONNRESET, ECONNABORTED, EPIPE, ETIMEDOUT, EHOSTUNREACH, EHOSTDOWN, ENETUNREACH,
	//     ENETDOWN, ENETRESET, ENOTCONN, ESHUTDOWN), net.ErrClosed, io.ErrUnexpectedEOF, io.EOF
	//     inside a *net.OpError or *url.Error, net/http's errors for a connection the server
	//     closed, and a *net.DNSError that is a timeout or temporary;
	//   - a timeout the backend hit on its own while the CO was still waiting:
	//     context.DeadlineExceeded, a net.Error whose Timeout() is true, a wrapped
	//     DEADLINE_EXCEEDED status; and likewise a cancellation of its own (context.Canceled);
	//   - a wrapped UNAVAILABLE status.
	// Not faults, and INTERNAL unless the backend says otherwise: a name that does not resolve,
	// a certificate that does not verify, io.EOF alone, ENOSPC or EDQUOT (return
	// ErrResourceExhausted), and any other error. A sentinel in the chain decides first, so
	// fmt.Errorf("%w: %w", ErrResourceExhausted, netErr) is RESOURCE_EXHAUSTED.
	ErrUnavailable = errors.New("temporarily unavailable")
)
