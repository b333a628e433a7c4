// Package locking serialises gRPC calls that touch the same resource. A call takes in-flight locks
// on every resource it names (volume ID, create name, snapshot ID, source IDs, group ID) before the
// handler runs; a conflicting call gets ABORTED at once with a message naming the resource, as
// the CSI spec's "operation pending" rows ask, or waits a bounded time when the Locker is
// configured to. Locks are released on every path: success, error, panic and cancellation.
package locking

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/idempotency"
)

// KeyFunc returns the resources a request touches; nil or empty means the call takes no lock.
type KeyFunc func(req any) []idempotency.Key

// UnaryServerInterceptor locks the keys that keys returns for each request around the handler.
func UnaryServerInterceptor(locker idempotency.Locker, keys KeyFunc) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ks := keys(req)
		if len(ks) == 0 {
			return handler(ctx, req)
		}
		unlock, err := locker.Lock(ctx, ks...)
		if err != nil {
			return nil, lockError(err)
		}
		defer unlock()
		return handler(ctx, req)
	}
}

// lockError turns a Locker failure into the status the CO retries on.
func lockError(err error) error {
	if errors.Is(err, idempotency.ErrBusy) {
		return status.Error(codes.Aborted, err.Error()+"; retry later")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	return status.Errorf(codes.Unavailable, "cannot take the resource lock: %v", err)
}
