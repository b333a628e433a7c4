// Package idempotency keeps concurrent CSI calls on the same resource apart
// and tells a repeated create-by-name call from an incompatible one.
//
// The CSI spec expects a plugin to answer ABORTED when an operation is
// already pending for a volume, snapshot or name, instead of running two
// operations on one resource at the same time. [Manager] is the in-memory
// [Locker] that the locking middleware uses for this: keyed, shared or
// exclusive, all-or-nothing over several keys, failing at once by default or
// waiting a bounded time with [WithWait]. Its entries are removed on release,
// so memory stays flat however many distinct IDs pass through it.
//
// [Fingerprint] condenses a request into a short string that a backend can
// store with the resource it created. When the same name arrives again, an
// equal fingerprint means the call is a retry (return the existing resource)
// and a different one means an incompatible request (ALREADY_EXISTS). Secret
// fields never influence a fingerprint.
package idempotency
