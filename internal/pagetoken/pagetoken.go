// Package pagetoken issues and checks the next_token / starting_token values
// of the CSI List* RPCs.
//
// A token is opaque to the CO, fits the spec's 128-byte string limit, and is
// tamper-evident: it carries an HMAC-SHA256 tag over the listing it belongs
// to, the listing's filter (scope) and the cursor, so a token that this
// plugin did not mint, or minted for another listing or filter, is rejected
// with [ErrInvalid] (the server answers ABORTED and the CO restarts the
// listing, as the spec prescribes).
//
// Layout, before unpadded URL-safe base64:
//
//	inline:   0x01 | cursor (<= 79 bytes)  | tag (16 bytes)
//	overflow: 0x02 | handle (16 random bytes) | tag (16 bytes)
//
// The tag covers the version byte, the listing, the scope and the rest of
// the payload; listing and scope are bound but not stored. A cursor too long
// to travel inline is kept in a bounded in-process store ([OverflowEntries]
// entries, first in first out, each for at most [OverflowTTL]) and the token
// carries a random handle to it.
package pagetoken

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"
)

// ErrInvalid is wrapped by every error Decode returns. The server maps it to
// ABORTED.
var ErrInvalid = errors.New("invalid pagination token")

const (
	// MaxTokenLen is the CSI limit on string fields, next_token and
	// starting_token included. No token is longer.
	MaxTokenLen = 128
	// MaxCursorLen bounds what Encode accepts, and so the memory the
	// overflow store can hold (OverflowEntries * MaxCursorLen = 16 MiB at
	// worst).
	MaxCursorLen = 4096
	// MaxInlineCursor is the longest cursor that travels inside the token;
	// longer ones go to the overflow store.
	MaxInlineCursor = maxRaw - 1 - tagLen
	// OverflowEntries is how many long cursors the overflow store keeps; the
	// oldest is dropped first.
	OverflowEntries = 4096
	// OverflowTTL is how long a long cursor stays usable. A CO pages through
	// a listing in seconds; an hour covers slow ones.
	OverflowTTL = time.Hour
)

const (
	versionInline byte = 1
	versionHandle byte = 2
	tagLen             = 16
	handleLen          = 16
	// maxRaw is what 128 unpadded base64 characters carry.
	maxRaw = MaxTokenLen / 4 * 3
)

var b64 = base64.RawURLEncoding.Strict()

var (
	errMalformed = fmt.Errorf("%w: malformed", ErrInvalid)
	errForged    = fmt.Errorf("%w: not issued by this plugin for this listing", ErrInvalid)
	errExpired   = fmt.Errorf("%w: expired", ErrInvalid)
)

// Codec mints and checks tokens. It is safe for concurrent use.
type Codec struct {
	key   []byte
	macs  sync.Pool // *macState
	store overflow
}

type macState struct {
	h   hash.Hash
	in  []byte
	sum [sha256.Size]byte
}

// New returns a codec that signs tokens with key (HMAC-SHA256, 16-byte tag);
// use at least 32 random bytes. An empty key means a random per-process key:
// tokens then die with the process, which the spec allows (the CO restarts
// the listing on ABORTED).
//
// Give several replicas the same key when they must accept each other's
// tokens. That holds for inline cursors (up to [MaxInlineCursor] bytes);
// longer cursors live in one process's overflow store, so another replica
// rejects their tokens and the CO restarts the listing.
func New(key []byte) *Codec {
	if len(key) == 0 {
		key = make([]byte, 32)
		// Since Go 1.24 crypto/rand.Read never returns an error: it stops
		// the program rather than hand out guessable bytes.
		_, _ = rand.Read(key)
	} else {
		key = append([]byte(nil), key...)
	}
	c := &Codec{key: key}
	c.macs.New = func() any { return &macState{h: hmac.New(sha256.New, c.key)} }
	c.store.init(OverflowEntries, OverflowTTL, time.Now)
	return c
}

// sign writes into tag the MAC of body (version byte and payload) for the
// given listing and scope. Lengths are prefixed so that ("ab","c") and
// ("a","bc") differ.
func (c *Codec) sign(tag, body []byte, listing, scope string) {
	ms := c.macs.Get().(*macState)
	in := append(ms.in[:0], body[0])
	in = binary.AppendUvarint(in, uint64(len(listing)))
	in = append(in, listing...)
	in = binary.AppendUvarint(in, uint64(len(scope)))
	in = append(in, scope...)
	in = append(in, body[1:]...)
	ms.h.Reset()
	ms.h.Write(in)
	copy(tag, ms.h.Sum(ms.sum[:0]))
	if cap(in) <= 1024 {
		ms.in = in
	}
	c.macs.Put(ms)
}

// Encode returns a token that resumes listing (for example "ListVolumes")
// under the filter scope ("" if none) strictly after cursor, the key of the
// last item returned. The token is never empty, not even for cursor "", so
// that "" keeps its CSI meaning of "from the start"; it is at most
// [MaxTokenLen] bytes. Cursors longer than [MaxCursorLen] are refused.
func (c *Codec) Encode(listing, scope, cursor string) (string, error) {
	if len(cursor) > MaxCursorLen {
		return "", fmt.Errorf("pagetoken: cursor of %d bytes exceeds the %d-byte limit", len(cursor), MaxCursorLen)
	}
	var raw [maxRaw]byte
	var n int
	if len(cursor) <= MaxInlineCursor {
		raw[0] = versionInline
		n = 1 + copy(raw[1:], cursor)
	} else {
		var h [handleLen]byte
		_, _ = rand.Read(h[:]) // never fails, see New

		raw[0] = versionHandle
		n = 1 + copy(raw[1:], h[:])
		c.store.put(h, listing, scope, cursor)
	}
	c.sign(raw[n:n+tagLen], raw[:n], listing, scope)
	n += tagLen
	var out [MaxTokenLen]byte
	m := b64.EncodedLen(n)
	b64.Encode(out[:m], raw[:n])
	return string(out[:m]), nil
}

// Decode checks token and returns the cursor it resumes after. A token that
// this codec did not mint, minted for another listing or scope, truncated,
// altered, or whose cursor has left the overflow store, gives an error
// wrapping [ErrInvalid]. The empty token is invalid too: it means "from the
// start", which callers handle before calling Decode.
func (c *Codec) Decode(token, listing, scope string) (cursor string, err error) {
	if len(token) == 0 || len(token) > MaxTokenLen {
		return "", errMalformed
	}
	var src [MaxTokenLen]byte
	copy(src[:], token)
	var raw [maxRaw]byte
	n, err := b64.Decode(raw[:], src[:len(token)])
	// The decoder skips '\r' and '\n'; the length check refuses such
	// non-canonical spellings of a valid token.
	if err != nil || b64.EncodedLen(n) != len(token) || n < 1+tagLen {
		return "", errMalformed
	}
	body, tag := raw[:n-tagLen], raw[n-tagLen:n]
	switch body[0] {
	case versionInline:
	case versionHandle:
		if len(body) != 1+handleLen {
			return "", errMalformed
		}
	default:
		return "", errMalformed
	}
	var want [tagLen]byte
	c.sign(want[:], body, listing, scope)
	if !hmac.Equal(want[:], tag) {
		return "", errForged
	}
	if body[0] == versionInline {
		return string(body[1:]), nil
	}
	cursor, ok := c.store.get([handleLen]byte(body[1:]), listing, scope)
	if !ok {
		return "", errExpired
	}
	return cursor, nil
}

// overflow keeps long cursors for a while. Entries are added in time order
// with one TTL, so the oldest entry is also the first to expire: a ring
// buffer gives both the FIFO eviction and the expiry sweep in O(1).
type overflow struct {
	mu       sync.Mutex
	byHandle map[[handleLen]byte]int // index into ring
	ring     []overflowEntry
	head     int // oldest entry
	size     int
	capacity int
	ttl      time.Duration
	now      func() time.Time
}

type overflowEntry struct {
	handle                 [handleLen]byte
	listing, scope, cursor string
	expires                time.Time
}

func (o *overflow) init(capacity int, ttl time.Duration, now func() time.Time) {
	o.byHandle = make(map[[handleLen]byte]int)
	o.ring = nil
	o.head, o.size = 0, 0
	o.capacity, o.ttl, o.now = capacity, ttl, now
}

func (o *overflow) put(h [handleLen]byte, listing, scope, cursor string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	// Drop expired entries so their cursors do not stay in memory until
	// overwritten.
	for o.size > 0 && !now.Before(o.ring[o.head].expires) {
		o.dropOldest()
	}
	if o.size == o.capacity {
		o.dropOldest()
	}
	if o.ring == nil {
		// Allocated on first use: most plugins never need it.
		o.ring = make([]overflowEntry, o.capacity)
	}
	i := (o.head + o.size) % o.capacity
	o.ring[i] = overflowEntry{handle: h, listing: listing, scope: scope, cursor: cursor, expires: now.Add(o.ttl)}
	o.byHandle[h] = i
	o.size++
}

func (o *overflow) dropOldest() {
	delete(o.byHandle, o.ring[o.head].handle)
	o.ring[o.head] = overflowEntry{}
	o.head = (o.head + 1) % o.capacity
	o.size--
}

func (o *overflow) get(h [handleLen]byte, listing, scope string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i, ok := o.byHandle[h]
	if !ok {
		return "", false
	}
	e := &o.ring[i]
	if !o.now().Before(e.expires) || e.listing != listing || e.scope != scope {
		return "", false
	}
	return e.cursor, true
}

// len reports the number of stored cursors, for tests.
func (o *overflow) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.size
}
