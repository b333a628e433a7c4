package plugin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A backend that is slow or down must never turn into an answer the CO takes as final. The
// sidecars treat some codes as terminal (the COSI sidecar: INVALID_ARGUMENT, ALREADY_EXISTS,
// UNIMPLEMENTED, and OUT_OF_RANGE from a grant; the external-provisioner: anything but
// UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED and RESOURCE_EXHAUSTED, after which it may
// stop retrying a CreateVolume whose claim was deleted, leaving whatever the backend did behind).
// So a fault that says nothing about the request itself is answered UNAVAILABLE: the CO retries,
// and a create that did happen is found by the retry. The classification is by cause, not by
// wrapper, so an error is transient whichever client library carried it.

// errBackendTimeout is the cause of a backend call's context when Config.BackendTimeout passed.
var errBackendTimeout = errors.New("the backend did not answer within Config.BackendTimeout")

// connectionErrnos are the system errors of a connection that could not be made or was lost:
// the peer refused, reset or went away, the route is gone, or the kernel timed out.
var connectionErrnos = []error{
	syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.EHOSTDOWN, syscall.ENETUNREACH,
	syscall.ENETDOWN, syscall.ENETRESET, syscall.ENOTCONN, syscall.ESHUTDOWN,
}

// transientCode classifies an error that is neither a sentinel nor a gRPC status returned as it
// is. ctx is the context the backend was called with. It answers UNAVAILABLE for a fault of the
// backend or of the way to it, DEADLINE_EXCEEDED and CANCELLED only when the caller's own
// deadline passed or the caller went away, and false for everything else (INTERNAL then).
func transientCode(ctx context.Context, err error) (codes.Code, bool) {
	switch {
	case isTimeout(err) || errors.Is(err, context.Canceled) || wrappedCode(err, codes.DeadlineExceeded) || wrappedCode(err, codes.Canceled):
		return callEnded(ctx), true
	case wrappedCode(err, codes.Unavailable):
		return codes.Unavailable, true
	case isConnectionFault(err):
		return codes.Unavailable, true
	}
	return codes.Unknown, false
}

// callEnded is the code of a timeout or cancellation: the caller's own ending when its context
// ended (DEADLINE_EXCEEDED for its deadline, CANCELLED when it went away), UNAVAILABLE when the
// backend gave up on its own (a client library's timeout, Config.BackendTimeout).
func callEnded(ctx context.Context) codes.Code {
	switch {
	case ctx.Err() == nil, context.Cause(ctx) == errBackendTimeout:
		return codes.Unavailable
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	return codes.Canceled
}

// isTimeout: context.DeadlineExceeded (a context's deadline, the HTTP client's Timeout, a dial
// bounded by a context) or a net.Error that says it timed out (a read or write deadline).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// isConnectionFault: a connection refused, reset or cut mid-message, a closed connection used, a
// temporary name-resolution failure. A name that does not resolve at all, a TLS certificate
// that does not verify and a malformed URL are configuration, not faults, and stay INTERNAL.
func isConnectionFault(err error) bool {
	for _, e := range connectionErrnos {
		if errors.Is(err, e) {
			return true
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && (dns.IsTimeout || dns.IsTemporary) {
		return true
	}
	var op *net.OpError
	var ue *url.Error
	isOp, isURL := errors.As(err, &op), errors.As(err, &ue)
	// io.EOF alone is too common a value to mean anything; carried by a network operation or an
	// HTTP request it is the peer closing the connection before it answered.
	if errors.Is(err, io.EOF) && (isOp || isURL) {
		return true
	}
	if isURL {
		for e := ue.Err; e != nil; e = errors.Unwrap(e) {
			if httpConnectionLost[e.Error()] {
				return true
			}
		}
	}
	return false
}

// httpConnectionLost are the net/http client's own errors for a connection the server closed or
// lost, which it does not export: matched by their fixed text, inside an HTTP request's error
// only (TestRealNetworkFaultsAreUnavailable makes a real one, so a Go release that rewords them
// fails a test rather than turning outages into INTERNAL).
var httpConnectionLost = map[string]bool{
	"http: server closed idle connection":                         true,
	"http2: client connection lost":                               true,
	"http2: client conn is closed":                                true,
	"http2: Transport received Server's graceful shutdown GOAWAY": true,
}

// wrappedCode reports whether a gRPC status with this code is in err's chain.
func wrappedCode(err error, c codes.Code) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == c
}
