package idempotency

import (
	"cmp"
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Key names one resource an operation touches.
type Key struct {
	// Kind says what ID names, for example "volume", "snapshot",
	// "volume-name", "snapshot-name", "group-snapshot", "node". It is
	// free-form: keys of different kinds never conflict, and Kind appears in
	// error messages.
	Kind string
	// ID identifies the resource within its kind.
	ID string
	// Shared asks for a shared (read) hold: several shared holders of one
	// key may coexist, while an exclusive holder excludes everyone else.
	Shared bool
}

// Locker is what the locking middleware needs. [Manager] is the in-memory
// default; a distributed implementation (etcd, for controllers running
// active-active) can take its place.
type Locker interface {
	// Lock acquires every key or none. keys may come in any order and may
	// repeat; a key present both shared and exclusive is taken exclusive.
	// On conflict Lock returns an error wrapping [ErrBusy] (see [BusyError])
	// and holds nothing. unlock releases everything Lock acquired; it is
	// idempotent and may be called from any goroutine.
	Lock(ctx context.Context, keys ...Key) (unlock func(), err error)
}

// ErrBusy is matched (with [errors.Is]) by every error a [Locker] returns
// because another operation holds a key. The locking middleware maps it to
// ABORTED.
var ErrBusy = errors.New("operation already in progress")

// BusyError reports the key that another operation holds.
type BusyError struct {
	// Key is the conflicting key as the caller passed it (after duplicates
	// were merged, so Shared is false if any copy asked for exclusive).
	Key Key
	// Err, when not nil, is why waiting for the key ended: the context's
	// error (context.DeadlineExceeded when the wait bound passed).
	// BusyError unwraps to it.
	Err error
}

// Error names the resource, never anything else from the request.
func (e *BusyError) Error() string {
	kind := e.Key.Kind
	if kind == "" {
		kind = "resource"
	}
	msg := "an operation on " + kind + " " + strconv.Quote(e.Key.ID) + " is already in progress"
	if e.Err != nil {
		msg += "; stopped waiting: " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is [ErrBusy].
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Unwrap returns the reason waiting ended, if any.
func (e *BusyError) Unwrap() error { return e.Err }

// Option configures a [Manager].
type Option func(*Manager)

// WithWait makes a busy key wait up to d for its release instead of failing
// at once, and never past the deadline or cancellation of the context passed
// to Lock. A waiter is woken by the release itself. d <= 0 means fail at once,
// the default, which is what the CSI spec expects (ABORTED, the CO retries).
//
// While waiting for one key, a multi-key Lock keeps the keys it already holds
// that come earlier in the global order; the order makes this deadlock-free.
// Waiters are not queued: whoever retries first after a release wins, and a
// steady stream of shared holders can keep an exclusive waiter out until its
// bound passes.
func WithWait(d time.Duration) Option {
	return func(m *Manager) {
		if d < 0 {
			d = 0
		}
		m.wait = d
	}
}

// numShards spreads keys over independent mutexes so that unrelated
// operations do not contend; a power of two so that the shard index is a mask.
const numShards = 64

// shrinkMin is the per-shard peak above which a shard's map is rebuilt once
// it has emptied out. Go maps never give memory back, so without this a burst
// of distinct IDs would pin its peak footprint forever; below the threshold
// the retained memory is at most numShards small maps.
const shrinkMin = 128

// Manager is the in-memory [Locker]. The zero value is not usable; call
// [NewManager]. A Manager is safe for concurrent use.
type Manager struct {
	seed maphash.Seed
	// hashMask is all ones; tests clear it to force every key onto one hash
	// and so exercise the collision path.
	hashMask uint64
	wait     time.Duration
	// Keep the fields above, read by every Lock, off the shards' cache lines.
	_      [cacheLine]byte
	shards [numShards]shard
}

// cacheLine is generous: adjacent-line prefetch makes 128 bytes the unit of
// false sharing on current x86.
const cacheLine = 128

type resource struct {
	kind, id string
}

// entry is stored by value: a pointer per held key would cost an allocation
// on every Lock.
type entry struct {
	r resource
	// holders is -1 for an exclusive hold, else the number of shared holders.
	holders int32
	// wake is created by the first waiter and closed when the entry is
	// deleted, which is the only moment a waiter can make progress.
	wake chan struct{}
}

// shard indexes entries by a 64-bit hash of the resource, computed once per
// Lock and reused at release: hashing two strings for every map operation was
// most of the cost of a Lock. Resources whose hash is already taken by
// another resource go to coll, which is almost always nil.
type shard struct {
	mu   sync.Mutex
	m    map[uint64]entry
	coll map[resource]entry
	peak int
	// Pad so that neighbouring shards' mutexes do not share a cache line.
	_ [cacheLine - 32]byte
}

// NewManager returns an in-memory [Locker] that fails busy keys at once
// unless [WithWait] is given.
func NewManager(opts ...Option) *Manager {
	m := &Manager{seed: maphash.MakeSeed(), hashMask: ^uint64(0)}
	for _, o := range opts {
		o(m)
	}
	return m
}

var _ Locker = (*Manager)(nil)

func (m *Manager) hash(k *Key) uint64 {
	h := maphash.String(m.seed, k.ID)
	h ^= maphash.String(m.seed, k.Kind) * 0x9e3779b97f4a7c15
	return h & m.hashMask
}

// Len returns the number of keys currently held, for tests and metrics.
func (m *Manager) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.m) + len(s.coll)
		s.mu.Unlock()
	}
	return n
}

// lookup finds r's entry; inColl says which map holds it (or, when r is
// absent, which map it belongs in).
func (s *shard) lookup(h uint64, r resource) (e entry, found, inColl bool) {
	e, found = s.m[h]
	if found && e.r == r {
		return e, true, false
	}
	if found || len(s.coll) > 0 {
		ce, cfound := s.coll[r]
		return ce, cfound, found || cfound
	}
	return e, false, false
}

func (s *shard) store(h uint64, e entry, inColl bool) {
	if inColl {
		if s.coll == nil {
			s.coll = make(map[resource]entry)
		}
		s.coll[e.r] = e
		return
	}
	if s.m == nil {
		s.m = make(map[uint64]entry)
	}
	s.m[h] = e
}

// acquire takes r if it is free (or shared and only shared-held). When it is
// not and wantWake is set, it returns the channel closed at r's release.
func (s *shard) acquire(h uint64, r resource, shared, wantWake bool) (bool, chan struct{}) {
	e, found, inColl := s.lookup(h, r)
	if !found {
		e = entry{r: r, holders: -1}
		if shared {
			e.holders = 1
		}
		s.store(h, e, inColl)
		if n := len(s.m); n > s.peak {
			s.peak = n
		}
		return true, nil
	}
	if shared && e.holders > 0 {
		e.holders++
		s.store(h, e, inColl)
		return true, nil
	}
	if !wantWake {
		return false, nil
	}
	if e.wake == nil {
		e.wake = make(chan struct{})
		s.store(h, e, inColl)
	}
	return false, e.wake
}

func (s *shard) release(h uint64, r resource) {
	e, found, inColl := s.lookup(h, r)
	if !found {
		return
	}
	if e.holders > 1 {
		e.holders--
		s.store(h, e, inColl)
		return
	}
	if e.wake != nil {
		close(e.wake)
	}
	if inColl {
		delete(s.coll, r)
		if len(s.coll) == 0 {
			s.coll = nil
		}
		return
	}
	delete(s.m, h)
	n := len(s.m)
	if s.peak < shrinkMin || n > s.peak/8 {
		return
	}
	if n == 0 {
		s.m = nil
		s.peak = 0
		return
	}
	fresh := make(map[uint64]entry, n)
	for k, v := range s.m {
		fresh[k] = v
	}
	s.m = fresh
	s.peak = n
}

// held is one normalised key of a lease with its hash.
type held struct {
	Key
	h uint64
}

// lease records what one successful Lock holds. Leases are pooled so that a
// Lock costs one small allocation (the unlock closure). gen makes stale
// unlock funcs harmless: each closure remembers the generation it was issued
// for, and only the first call for that generation releases anything.
type lease struct {
	m    *Manager
	gen  atomic.Uint64
	keys []held
	// buf holds the common single key; a multi-key Lock allocates keys once
	// and the pooled lease keeps it.
	buf [1]held
	// Round up to the 128-byte size class (128-byte aligned) so that leases
	// used by different Ps never share a cache line.
	_ [128 - 88]byte
}

var leasePool = sync.Pool{New: func() any { return new(lease) }}

func noop() {}

// Lock acquires every key or none; see [Locker]. Keys are taken in one
// global order (by Kind, then ID) after removing duplicates, so callers that
// wait can never deadlock each other. ctx is consulted only while waiting.
func (m *Manager) Lock(ctx context.Context, keys ...Key) (unlock func(), err error) {
	if len(keys) == 0 {
		return noop, nil
	}
	l := leasePool.Get().(*lease)
	l.m = m
	if l.keys == nil {
		l.keys = l.buf[:0]
	}
	for _, k := range keys {
		l.keys = append(l.keys, held{Key: k})
	}
	l.keys = normalize(l.keys)
	for i := range l.keys {
		k := &l.keys[i]
		k.h = m.hash(&k.Key)
		s := &m.shards[k.h&(numShards-1)]
		s.mu.Lock()
		ok, wake := s.acquire(k.h, resource{k.Kind, k.ID}, k.Shared, m.wait > 0)
		s.mu.Unlock()
		if ok {
			continue
		}
		if m.wait <= 0 {
			busy := k.Key
			l.drop(i)
			return nil, &BusyError{Key: busy}
		}
		if err := m.lockWaiting(ctx, l, i, wake); err != nil {
			return nil, err
		}
		break
	}
	gen := l.gen.Load()
	return func() { l.release(gen) }, nil
}

// lockWaiting finishes a Lock whose key i is busy, waiting for each busy key
// in turn. On failure it has released everything and recycled l.
func (m *Manager) lockWaiting(ctx context.Context, l *lease, i int, wake chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, m.wait)
	defer cancel()
	for {
		select {
		case <-wake:
			// Released: try the same key again; someone may have been faster.
		case <-ctx.Done():
			busy := l.keys[i].Key
			l.drop(i)
			return &BusyError{Key: busy, Err: ctx.Err()}
		}
		for ; i < len(l.keys); i++ {
			k := &l.keys[i]
			k.h = m.hash(&k.Key)
			s := &m.shards[k.h&(numShards-1)]
			s.mu.Lock()
			var ok bool
			ok, wake = s.acquire(k.h, resource{k.Kind, k.ID}, k.Shared, true)
			s.mu.Unlock()
			if !ok {
				break
			}
		}
		if i == len(l.keys) {
			return nil
		}
	}
}

// normalize sorts keys into the global order and merges duplicates, an
// exclusive request winning over a shared one.
func normalize(keys []held) []held {
	if len(keys) < 2 {
		return keys
	}
	slices.SortFunc(keys, compareKeys)
	out := keys[:1]
	for _, k := range keys[1:] {
		last := &out[len(out)-1]
		if k.Kind == last.Kind && k.ID == last.ID {
			last.Shared = last.Shared && k.Shared
			continue
		}
		out = append(out, k)
	}
	clear(keys[len(out):])
	return out
}

func compareKeys(a, b held) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// drop releases the first n keys of a Lock that failed and recycles l.
func (l *lease) drop(n int) {
	l.releaseKeys(n)
	l.recycle()
}

func (l *lease) release(gen uint64) {
	if !l.gen.CompareAndSwap(gen, gen+1) {
		return
	}
	l.releaseKeys(len(l.keys))
	l.recycle()
}

func (l *lease) releaseKeys(n int) {
	for i := n - 1; i >= 0; i-- {
		k := &l.keys[i]
		s := &l.m.shards[k.h&(numShards-1)]
		s.mu.Lock()
		s.release(k.h, resource{k.Kind, k.ID})
		s.mu.Unlock()
	}
}

// recycle forgets the key strings (a pooled lease must not pin them) and
// returns l to the pool.
func (l *lease) recycle() {
	clear(l.keys)
	if cap(l.keys) > 16 {
		l.keys = l.buf[:0]
	} else {
		l.keys = l.keys[:0]
	}
	clear(l.buf[:])
	l.m = nil
	leasePool.Put(l)
}
