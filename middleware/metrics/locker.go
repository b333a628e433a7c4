package metrics

import (
	"context"
	"errors"

	"github.com/csikit/csikit/idempotency"
)

// Locker returns l wrapped so that every conflict it reports (an error matching
// [idempotency.ErrBusy]) is counted in lock_conflicts_total with the resource kind of the
// [idempotency.BusyError], before the locking middleware turns it into ABORTED. A bounded wait
// that ends without the lock counts too: it is contention all the same. Locks are otherwise
// untouched.
func (m *Metrics) Locker(l idempotency.Locker) idempotency.Locker {
	return &countingLocker{l: l, m: m}
}

type countingLocker struct {
	l idempotency.Locker
	m *Metrics
}

// Lock implements idempotency.Locker.
func (c *countingLocker) Lock(ctx context.Context, keys ...idempotency.Key) (func(), error) {
	unlock, err := c.l.Lock(ctx, keys...)
	if err != nil && errors.Is(err, idempotency.ErrBusy) {
		kind := ""
		if be, ok := errors.AsType[*idempotency.BusyError](err); ok {
			kind = be.Key.Kind
		}
		c.m.RecordAborted(ctx, kind)
	}
	return unlock, err
}
