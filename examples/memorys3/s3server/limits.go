package s3server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/examples/memorys3/s3err"
	"github.com/csikit/csikit/examples/memorys3/sigv4"
)

// One S3 server serves every tenant of the driver, and its process also holds the COSI
// socket: a single request or connection must not be able to take either down. These are the
// bounds, each with a flag in the memorys3 command.
const (
	// DefaultMaxObjectSize bounds an object (a PUT, a part, a completed multipart upload). S3
	// allows 5 GiB in one PUT; an example that holds objects in memory is better served by a
	// size a small host holds several of at once.
	DefaultMaxObjectSize = 256 << 20
	// DefaultMaxBufferedBytes bounds the bytes held in request bodies across the server: the
	// bodies being read before the store takes them and the store's copies of them, the parts
	// of multipart uploads waiting for their completion, and the objects GETs are sending
	// (with a state directory, copies of them). Four bodies of the largest size fit as they arrive, two as the
	// store copies them.
	DefaultMaxBufferedBytes = 1 << 30
	// DefaultMaxPartBytes bounds the bytes held in the parts of uploads in progress, within
	// DefaultMaxBufferedBytes: half of it, so uploads that are never completed leave the other
	// half to the bodies of other requests.
	DefaultMaxPartBytes = 512 << 20
	// DefaultMaxUploads bounds the multipart uploads in progress on the server.
	DefaultMaxUploads = 10000
	// DefaultMaxUploadsPerBucket bounds the multipart uploads in progress in one bucket (one
	// page of ListMultipartUploads).
	DefaultMaxUploadsPerBucket = 1000
	// DefaultMaxUploadsPerTenant bounds the multipart uploads in progress of one account,
	// across its buckets, so one tenant granted many buckets cannot take every upload.
	DefaultMaxUploadsPerTenant = 1000
	// DefaultMaxConnections bounds the open S3 connections; further clients wait in the
	// listen backlog, so file descriptors remain for the COSI socket and the state files.
	DefaultMaxConnections = 256
	// DefaultMinBodyRate is the slowest rate at which a request body may arrive, in bytes a
	// second over each DefaultBodyRateInterval, after a grace of IdleTimeout: a client on a
	// 1 Mbit/s link still uploads, and a body that holds bytes of the budget costs its sender
	// bandwidth for as long as it holds them, instead of one byte per idle timeout.
	DefaultMinBodyRate = 64 << 10
	// DefaultBodyRateInterval is the interval over which MinBodyRate is measured: long enough
	// for a TCP retransmission or two, short enough that a body which stalls loses its
	// connection seconds, not minutes, after its grace.
	DefaultBodyRateInterval = 5 * time.Second
	// DefaultUploadIdleTimeout aborts a multipart upload in which no part was stored for this
	// long (S3's AbortIncompleteMultipartUpload, as a server-wide rule), giving back what its
	// parts held.
	DefaultUploadIdleTimeout = time.Hour
	// DefaultIdleTimeout closes a connection on which nothing moved for this long: between
	// requests, and while a request body or a response is under way.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultHeaderTimeout bounds the time to send a request's headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultMaxHeaderBytes bounds a request's headers (S3 allows 8 KiB of user metadata).
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxObjectsPerBucket bounds the objects of one bucket: a listing that matches
	// little scans the whole bucket for each page, and S3 clients list page by page.
	DefaultMaxObjectsPerBucket = 100_000
)

// Limits bound what one request, one connection and the whole server may hold. Zero fields
// take the defaults. What is refused for want of a server-wide resource (buffered bytes,
// uploads) is answered 503 SlowDown: it frees up as other requests finish or uploads complete,
// and S3 clients retry it with backoff.
type Limits struct {
	// MaxObjectSize is the largest object, part or completed multipart upload accepted, in
	// bytes; larger ones are refused with EntityTooLarge before their body is read.
	MaxObjectSize int64
	// MaxBufferedBytes bounds the bytes held in request bodies across the server, counted as
	// they arrive (bodies are read whole before the store takes them), while the store makes
	// its copy of a body, while parts wait for their completion, and while a GET's answer is
	// sent (the object it read, or with a state directory the copy it made: the answer keeps
	// it whatever replaces the object meanwhile). A body that would pass it is refused with
	// SlowDown and not read further; so is a GET. It must hold one body of MaxObjectSize and
	// the store's copy of it: twice MaxObjectSize, and up to 512 KiB more for sizes that are
	// not a power of two.
	MaxBufferedBytes int64
	// MaxPartBytes bounds the bytes held in the parts of uploads in progress (they count
	// towards MaxBufferedBytes too); a part past it is refused with SlowDown.
	MaxPartBytes int64
	// MaxUploads bounds the multipart uploads in progress on the server, MaxUploadsPerBucket
	// those in one bucket, and MaxUploadsPerTenant those one account began, across its
	// buckets (within its fair share of MaxUploads, see fair). A CreateMultipartUpload past
	// any is refused with SlowDown. Zero: DefaultMaxUploads, DefaultMaxUploadsPerBucket,
	// DefaultMaxUploadsPerTenant (the last two no more than MaxUploads).
	MaxUploads          int
	MaxUploadsPerBucket int
	MaxUploadsPerTenant int
	// MaxBufferedBytesPerTenant bounds what the requests of one account in progress hold of
	// MaxBufferedBytes: the bytes of their bodies received so far (counted in steps of 64 KiB),
	// the buffers of their signed chunks, the pages of their listings, the answers of their
	// DeleteObjects (which name every key deleted) and the objects their GETs are sending;
	// within it, an account holds at most its fair share of what the others leave
	// (see fair). Past it a request is refused with SlowDown, so one
	// tenant cannot refuse every other by holding bodies open or answers unread. Zero: a
	// quarter of MaxBufferedBytes, but never less than one body of MaxObjectSize with its
	// chunk buffer (MaxObjectSize plus up to 16 MiB) or a listing page (1,000 keys of 1 KiB
	// and their records, 1.25 MiB), nor more than MaxBufferedBytes.
	MaxBufferedBytesPerTenant int64
	// MinBodyRate is the slowest rate, in bytes a second, at which a request body may arrive:
	// once a grace of IdleTimeout has passed since the server began reading it, each
	// BodyRateInterval must bring MinBodyRate times the interval bytes, or the connection is
	// closed (RequestTimeout), whatever length the body declared. Zero: DefaultMinBodyRate.
	MinBodyRate int64
	// BodyRateInterval is the interval over which MinBodyRate is measured, at most
	// IdleTimeout. Zero: DefaultBodyRateInterval, or IdleTimeout if that is shorter.
	BodyRateInterval time.Duration
	// MaxPartBytesPerBucket bounds the part bytes (and part records) the uploads of one bucket
	// hold of MaxPartBytes, and MaxPartBytesPerTenant those one account stored, across its
	// buckets (within its fair share of MaxPartBytes, see fair), so one tenant's unfinished
	// uploads cannot refuse every other tenant's parts; a part past either is refused with
	// SlowDown. Zero: a quarter of MaxPartBytes, but never less than MaxObjectSize plus 1 MiB
	// (the parts of one object of the largest size), nor more than MaxPartBytes.
	MaxPartBytesPerBucket int64
	MaxPartBytesPerTenant int64
	// UploadIdleTimeout aborts a multipart upload in which nothing was stored for this long
	// (no part since it began or since its last part), giving back its parts. Zero:
	// DefaultUploadIdleTimeout.
	UploadIdleTimeout time.Duration
	// MaxConnections is the most S3 connections served at once (Serve only). At the limit, a
	// new client takes the place of the connection that has been quiet the longest (idle
	// between requests, or open without a complete request, whatever its age), which is
	// closed.
	MaxConnections int
	// MaxRequestsPerTenant bounds the requests of one account in progress at once (a body
	// arriving or an answer being sent holds one); within it, an account holds at most its
	// fair share of MaxConnections (see fair). Past it a request is refused with SlowDown at
	// once, so no tenant, nor one party holding several accounts, holds every connection
	// with slow requests. Zero: a quarter of MaxConnections, at least 1.
	MaxRequestsPerTenant int
	// IdleTimeout closes a connection idle for this long, between requests or within one.
	IdleTimeout time.Duration
	// HeaderTimeout is how long a client may take to send a request's headers (Serve only).
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds the size of a request's headers (Serve only).
	MaxHeaderBytes int
	// MaxObjectsPerBucket bounds the objects one bucket holds: a request that would make
	// another (a PUT, a copy or a completed upload of a new key) is refused with 403
	// QuotaExceeded, while replacing or deleting an object is not. Zero:
	// DefaultMaxObjectsPerBucket.
	MaxObjectsPerBucket int
	// MaxKeyLength bounds the key of a new object (PUT, copy, multipart upload), in bytes, at
	// most S3's 1024; a longer one is refused with KeyTooLongError. Objects stored under
	// longer keys before it was lowered are still read and deleted. Zero: 1024.
	MaxKeyLength int
}

func (l Limits) withDefaults() (Limits, error) {
	if l.MaxObjectSize <= 0 {
		l.MaxObjectSize = DefaultMaxObjectSize
	}
	if l.MaxBufferedBytes <= 0 {
		l.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if l.MaxPartBytes <= 0 {
		l.MaxPartBytes = DefaultMaxPartBytes
	}
	if l.MaxUploads <= 0 {
		l.MaxUploads = DefaultMaxUploads
	}
	if l.MaxUploadsPerBucket <= 0 {
		l.MaxUploadsPerBucket = min(DefaultMaxUploadsPerBucket, l.MaxUploads)
	}
	if l.MaxUploadsPerTenant <= 0 {
		l.MaxUploadsPerTenant = min(DefaultMaxUploadsPerTenant, l.MaxUploads)
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MinBodyRate <= 0 {
		l.MinBodyRate = DefaultMinBodyRate
	}
	switch {
	case l.BodyRateInterval <= 0:
		l.BodyRateInterval = min(DefaultBodyRateInterval, l.IdleTimeout)
	case l.BodyRateInterval > l.IdleTimeout:
		return l, fmt.Errorf("limits: the interval over which a body's rate is measured (%v) must be at most the idle timeout (%v): %w",
			l.BodyRateInterval, l.IdleTimeout, ErrInvalidArgument)
	}
	if l.UploadIdleTimeout <= 0 {
		l.UploadIdleTimeout = DefaultUploadIdleTimeout
	}
	if l.MaxRequestsPerTenant <= 0 {
		l.MaxRequestsPerTenant = max(1, l.MaxConnections/4)
	}
	if l.MaxObjectsPerBucket <= 0 {
		l.MaxObjectsPerBucket = DefaultMaxObjectsPerBucket
	}
	switch {
	case l.MaxKeyLength <= 0:
		l.MaxKeyLength = gofakes3.KeySizeLimit
	case l.MaxKeyLength > gofakes3.KeySizeLimit:
		return l, fmt.Errorf("limits: object keys are at most %d bytes (S3's bound), not %d: %w", gofakes3.KeySizeLimit, l.MaxKeyLength, ErrInvalidArgument)
	}
	// A body of the largest size is held in the spool's chunks while the store makes its own
	// copy of it (storeBackend.PutObject).
	if need := spoolCharge(l.MaxObjectSize) + l.MaxObjectSize; l.MaxBufferedBytes < need {
		return l, fmt.Errorf("limits: %d buffered bytes cannot hold one body of the largest object size, %d bytes, and the store's copy of it (%d bytes): %w",
			l.MaxBufferedBytes, l.MaxObjectSize, need, ErrInvalidArgument)
	}
	// A tenant alone holds about half the budget (fair): that half must hold one body of the
	// largest size with its chunk buffer, to the last step of its share, and a listing page.
	oneBody := max(tenantBodyCharge(l.MaxObjectSize), maxPageCharge)
	if need := 2*oneBody + shareStep - byteFloor; l.MaxBufferedBytes < need {
		return l, fmt.Errorf("limits: one tenant alone may hold about half of the %d buffered bytes, which cannot hold one body of the largest object size, %d bytes, with its chunk buffer, or a listing page; it takes at least %d: %w",
			l.MaxBufferedBytes, l.MaxObjectSize, need, ErrInvalidArgument)
	}
	switch {
	case l.MaxBufferedBytesPerTenant <= 0:
		l.MaxBufferedBytesPerTenant = max(l.MaxBufferedBytes/4, oneBody)
	case l.MaxBufferedBytesPerTenant < oneBody || l.MaxBufferedBytesPerTenant > l.MaxBufferedBytes:
		return l, fmt.Errorf("limits: the buffered bytes of one tenant must hold one body of the largest object size and its chunk buffer, and a listing page (%d bytes), and be at most the server's %d, not %d: %w",
			oneBody, l.MaxBufferedBytes, l.MaxBufferedBytesPerTenant, ErrInvalidArgument)
	}
	partShare := min(l.MaxPartBytes, max(l.MaxPartBytes/4, l.MaxObjectSize+1<<20))
	for _, s := range []struct {
		what string
		v    *int64
	}{{"one bucket", &l.MaxPartBytesPerBucket}, {"one tenant", &l.MaxPartBytesPerTenant}} {
		switch {
		case *s.v <= 0:
			*s.v = partShare
		case *s.v > l.MaxPartBytes:
			return l, fmt.Errorf("limits: the part bytes of %s (%d) must be at most the server's %d: %w", s.what, *s.v, l.MaxPartBytes, ErrInvalidArgument)
		}
	}
	return l, nil
}

// tenantBodyCharge is what one body of n bytes may hold of its tenant's share at most: its
// bytes, counted in shareSteps, and the buffer of a signed chunk as large as it may be.
func tenantBodyCharge(n int64) int64 {
	return roundUp(n, shareStep) + min(n, sigv4.MaxSignedChunk)
}

func roundUp(n, step int64) int64 { return (n + step - 1) / step * step }

// bodyQuota is what a body must bring each BodyRateInterval after its grace, at least a byte.
func (l Limits) bodyQuota() int64 {
	q := float64(l.MinBodyRate) * l.BodyRateInterval.Seconds()
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(1, int64(q))
}

// budget counts bytes held against a server-wide limit. take never waits: a request that
// finds the budget spent is refused at once rather than queued behind the requests holding
// it, which may be slow on purpose.
type budget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes and reports whether they were within the limit. A nil budget has no
// limit.
func (b *budget) take(n int64) bool {
	if b == nil {
		return true
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken earlier.
func (b *budget) give(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}

// Serve answers S3 requests on lis, within the server's Limits, until Shutdown. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	s.conns.Listener = lis
	return s.http.Serve(s.conns)
}

// Shutdown stops Serve: no new connections, in-flight requests finish until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.http.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop serving S3: %w", err)
	}
	return nil
}

func (s *Server) newHTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.limits.HeaderTimeout,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    s.limits.MaxHeaderBytes,
		ConnState:         s.conns.track,
	}
}

// connLimiter is the listener Serve accepts from: at most max connections are open at once.
// A client that arrives at the limit is accepted and waits (with the clients behind it in the
// listen backlog) for a connection to close; the limiter closes the connection that has been
// quiet the longest to make room: one idle between requests, or one without a complete
// request, whatever its age. A client therefore cannot hold the slots with connections it
// does not use, however fast it opens them: a flood of connections that send nothing closes
// its own connections, oldest first, while a real client's request is in the socket as it
// connects and is read at once. Only requests in progress hold a slot, which the idle
// timeout, the body rate (MinBodyRate) and MaxRequestsPerTenant bound.
//
// A connection becomes closable once the server has begun reading it: between Accept and the
// first Read its request, already in the socket, may not have been looked at yet, and closing
// it then would drop a request that was sent in time.
type connLimiter struct {
	net.Listener
	slots chan struct{}

	mu    sync.Mutex
	quiet map[*limitedConn]time.Time // connections not in a request, and since when
	calm  chan struct{}              // signalled when a connection may have become closable
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{slots: make(chan struct{}, max), quiet: map[*limitedConn]time.Time{}, calm: make(chan struct{}, 1)}
}

// Accept implements net.Listener.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		default:
		}
		if l.reclaim() {
			continue // its slot is free once Close returned
		}
		select {
		case l.slots <- struct{}{}:
			return &limitedConn{Conn: c, l: l}, nil
		case <-l.calm: // a connection turned quiet, or the server began reading a quiet one
		}
	}
}

// reclaim closes the connection quiet the longest among those the server has begun reading;
// false: there is none.
func (l *connLimiter) reclaim() bool {
	l.mu.Lock()
	var oldest *limitedConn
	var since time.Time
	for c, t := range l.quiet {
		if !c.reading.Load() {
			continue
		}
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	l.mu.Unlock()
	if oldest == nil {
		return false
	}
	_ = oldest.Close()
	return true
}

// wake tells a waiting Accept to look for a closable connection again.
func (l *connLimiter) wake() {
	select {
	case l.calm <- struct{}{}:
	default:
	}
}

// track is the http.Server's ConnState hook: it keeps the set of quiet connections.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateNew, http.StateIdle:
		if !lc.closed.Load() {
			l.quiet[lc] = time.Now()
			l.wake()
		}
	default:
		delete(l.quiet, lc)
	}
}

// limitedConn gives its slot back when it is closed, by the server or by the limiter, and
// says when the server began reading it.
type limitedConn struct {
	net.Conn
	l       *connLimiter
	closed  atomic.Bool
	reading atomic.Bool
}

func (c *limitedConn) Read(p []byte) (int, error) {
	if !c.reading.Load() {
		c.reading.Store(true)
		c.l.wake()
	}
	return c.Conn.Read(p)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.mu.Lock()
		delete(c.l.quiet, c)
		c.l.mu.Unlock()
		<-c.l.slots
	}
	return err
}

// deadlines moves a connection's read and write deadlines forward as bytes move, so a client
// that stops sending a body, or stops reading an answer, loses its connection after the idle
// timeout while a slow but steady transfer of any size goes on. A body must moreover keep
// MinBodyRate: once a grace of the idle timeout has passed since the server began reading it,
// every BodyRateInterval must bring at least MinBodyRate times the interval bytes (its quota)
// more than it had when the interval began, and an interval begins when the last one's quota
// has arrived. A body that trickles (a byte every few seconds) therefore loses its connection
// after its grace and one interval, whatever length it declared, while a body that keeps the
// rate arrives whole however long it takes; bytes sent early earn no credit for later. Where
// the connection does not support deadlines (a handler called in process), it does nothing.
//
// Moving a deadline costs a runtime timer update, which a small PUT paid five times (about a
// point of its latency). So a deadline is set a slack (an eighth of the shorter of the idle
// timeout and the interval) later than the rule asks, and moved only when the rule asks for
// more time than that: at most once per slack while bytes flow, and a connection is cut at
// most a slack after the rule says. One request's deadlines are used by its handler's
// goroutine only.
type deadlines struct {
	rc   *http.ResponseController
	idle time.Duration
	// interval and quota are the body's rate: quota bytes each interval after the grace. A
	// quota of 0 asks no rate (the idle timeout alone).
	interval time.Duration
	quota    int64

	graceEnd time.Time // the end of the body's grace; zero: the body has not been read yet
	winStart time.Time // when the current interval began; zero: in grace
	winBytes int64     // the bytes of the body read when it began
	readDL   time.Time // the read deadline set; zero: none yet
	writeAt  time.Time // when the write deadline was last moved; zero: not yet
}

// writeNow is write at the present time.
func (d *deadlines) writeNow() { d.write(time.Now()) }

func (d *deadlines) slack() time.Duration {
	if d.interval > 0 && d.interval < d.idle {
		return d.interval / 8
	}
	return d.idle / 8
}

// setRead makes the read deadline fall from due to due plus the slack: moved on when due is
// later than the deadline set, and back when it is more than a slack earlier.
func (d *deadlines) setRead(due time.Time) {
	if !d.readDL.IsZero() && !d.readDL.Before(due) && !d.readDL.After(due.Add(d.slack())) {
		return
	}
	d.readDL = due.Add(d.slack())
	_ = d.rc.SetReadDeadline(d.readDL)
}

// read moves the read deadline, at now, for the idle timeout alone (no body is being read).
func (d *deadlines) read(now time.Time) { d.setRead(now.Add(d.idle)) }

// bodyRead moves the read deadline, at now, before a read of the body, of which got bytes
// have arrived.
func (d *deadlines) bodyRead(now time.Time, got int64) {
	if d.quota <= 0 {
		d.read(now)
		return
	}
	if d.graceEnd.IsZero() {
		d.graceEnd = now.Add(d.idle)
	}
	if now.Before(d.graceEnd) {
		// In grace the idle timeout alone applies; a read still waiting when grace ends has
		// the first interval to bring its quota, counted from here.
		d.winBytes = got
		d.setRead(minTime(now.Add(d.idle), d.graceEnd.Add(d.interval)))
		return
	}
	if d.winStart.IsZero() {
		d.winStart = d.graceEnd
	}
	if got-d.winBytes >= d.quota {
		d.winStart, d.winBytes = now, got
	}
	d.setRead(d.winStart.Add(d.interval))
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// recent says whether the write deadline moved at at is still at least the idle timeout
// ahead of now.
func (d *deadlines) recent(at, now time.Time) bool {
	return !at.IsZero() && now.Sub(at) < d.idle/8
}

// write moves the write deadline, at now, before a write.
func (d *deadlines) write(now time.Time) {
	if d.recent(d.writeAt, now) {
		return
	}
	d.writeAt = now
	_ = d.rc.SetWriteDeadline(now.Add(d.idle + d.idle/8))
}

// errBodyTimeout answers a body whose connection reached its read deadline.
var errBodyTimeout = s3err.ErrRequestTimeout.With("the body did not arrive in time: it stopped for the idle timeout, or an interval brought less than the server's minimum rate")

// idleReader is a request body that pushes the read deadline before each Read, calls a
// read past the deadline what it is, and counts what it read, so that a refusal knows how
// much of the body is still on its way (see linger).
type idleReader struct {
	io.ReadCloser
	d *deadlines
	// length is the declared Content-Length (-1: chunked); expectContinue: the client
	// waits for 100 Continue before it sends the body, which a first Read asks for.
	length         int64
	expectContinue bool
	n              int64
	eof            bool // the body was read to its end
}

// done says whether the body has been read to its end.
func (r *idleReader) done() bool { return r.eof || (r.length >= 0 && r.n >= r.length) }

func (r *idleReader) Read(p []byte) (int, error) {
	r.d.bodyRead(time.Now(), r.n)
	n, err := r.ReadCloser.Read(p)
	r.n += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		r.eof = true
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errBodyTimeout
	}
	return n, err
}

// A refusal closes the connection, and a server that closes a connection with unread bytes
// in its receive buffer sends a reset, not a clean end: a client still writing its body sees
// "connection reset" instead of the answer that says why (S3 SDKs retry that as a network
// fault, then report it, not the S3 error). So, like nginx's lingering close, a refusal first
// reads what is left of a body that is small enough (lingerBytes) for up to lingerTime; a
// longer one is cut off as net/http cuts off one it will not drain. Only a request admitted
// among its tenant's requests in progress lingers, within them: an anonymous one, or one past
// its tenant's share, is closed at once, or clients would hold connection slots a second each
// outside any share (1,500 anonymous connections declaring a small body and sending none made
// every tenant wait seconds).
const (
	lingerBytes = 256 << 10
	lingerTime  = time.Second
)

// linger discards what is left of the body, as above. A client that waits for 100 Continue
// and got none has sent nothing: reading would invite it to send.
func (r *idleReader) linger() {
	if r.n == 0 && r.expectContinue {
		return
	}
	left := int64(lingerBytes) + 1
	if r.length >= 0 {
		left = r.length - r.n
		if left <= 0 || left > lingerBytes {
			return
		}
	}
	_ = r.d.rc.SetReadDeadline(time.Now().Add(lingerTime))
	n, err := io.CopyN(io.Discard, r.ReadCloser, left)
	r.n += n
	r.eof = errors.Is(err, io.EOF)
}

// dropBody ends the request's body before its handler returns, while the request still
// counts among its tenant's requests. A body its operation did not read (a HEAD or a GET
// that declares one), or that the store answered before reading (a malformed Content-MD5),
// is read on, lingering, and if it is not then at its end the connection closes with the
// answer. Left to net/http, it would be read on after the handler returned, before the
// answer was sent, up to 256 KiB and until the read deadline: a connection held for the
// idle timeout by a client that declares a body and sends none, outside any tenant's share,
// and not quiet, so the limiter could not close it either.
func (w *idleWriter) dropBody() {
	b := w.body
	if b == nil || b.done() {
		return
	}
	b.linger()
	if !b.done() {
		// net/http's read of what is left fails at once, and the connection closes.
		_ = b.d.rc.SetReadDeadline(time.Now())
	}
}

// lingerBody finds the request body to linger on under w, a chain of response writers that
// ends in the handler's idleWriter; nil if there is none, the request had no body or it was
// not admitted among its tenant's requests.
func lingerBody(w http.ResponseWriter) *idleReader {
	for {
		switch v := w.(type) {
		case *idleWriter:
			if !v.admitted {
				return nil
			}
			return v.body
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// idleWriter is a response writer that pushes the write deadline before each piece of an
// answer (answerPiece), and notes whether the answer has begun.
type idleWriter struct {
	http.ResponseWriter
	d     deadlines
	wrote bool
	body  *idleReader // nil: the request has no body
	// admitted: the request was signed by a key in force and holds one of its tenant's
	// requests in progress (see lingerBody).
	admitted bool
}

func (w *idleWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

// answerPiece is the most of an answer written under one move of the write deadline. gofakes3
// writes an object in one Write of all its bytes, which under one deadline cut off a reader
// slower than the object's size per idle timeout (a steady 1 MB/s reader got 42.5 of 67 MB,
// on every retry); written in pieces, an answer of any size reaches a reader that takes less
// than the idle timeout over each piece.
const answerPiece = 256 << 10

func (w *idleWriter) Write(p []byte) (int, error) {
	w.wrote = true
	if len(p) <= answerPiece {
		w.d.write(time.Now())
		return w.ResponseWriter.Write(p)
	}
	written := 0
	for len(p) > 0 {
		w.d.write(time.Now())
		n, err := w.ResponseWriter.Write(p[:min(len(p), answerPiece)])
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Bodies are buffered in chunks that grow as the bytes arrive: the first holds 64 KiB, each
// next one twice what arrived so far, up to 1 MiB, and none more than the smallest that holds
// what the body may still carry (a body of 1 MiB takes 64+128+256+512+64 KiB). Allocation
// therefore follows the bytes that arrived (at most twice them), never a length the client
// declared; a body is charged at most 512 KiB more than its length, and a body of a power of
// two its length exactly; and a large body is read in large slices, since a read lands in the
// free part of the current chunk and 64 KiB reads cost a 1 MiB upload a sixth more time in
// read calls than the store's own single buffer.
const (
	minChunkShift = 16 // 64 KiB
	maxChunkShift = 20 // 1 MiB
)

// chunkFree keeps spare chunks of each size (by size shift minus minChunkShift), at most
// 4 MiB of each: a free list rather than a sync.Pool, which the collector empties every cycle,
// and an upload every cycle would then pay for zeroing fresh chunks.
var chunkFree = func() (f [maxChunkShift - minChunkShift + 1]chan []byte) {
	for i := range f {
		f[i] = make(chan []byte, (4<<20)>>(minChunkShift+i))
	}
	return f
}()

func getChunk(shift int) []byte {
	select {
	case c := <-chunkFree[shift-minChunkShift]:
		return c
	default:
		return make([]byte, 1<<shift)
	}
}

func putChunk(c []byte) {
	select {
	case chunkFree[bits.Len(uint(cap(c)))-1-minChunkShift] <- c[:cap(c)]:
	default: // enough spares of this size
	}
}

// spool holds a body read in pooled chunks, each charged to the server's budget of buffered
// bytes as it is taken.
type spool struct {
	budget  *budget  // nil: not charged (tests)
	chunks  [][]byte // each filled to its length but the last, which holds n minus the others
	n       int64
	charged int64
}

// errTooLong, errTooShort and errNoBudget: a body longer than its declared length, one whose
// connection ended before it did, and one the server has no room left to buffer.
var (
	errTooLong  = errors.New("body longer than declared")
	errTooShort = errors.New("body ended before its declared length")
	errNoBudget = errors.New("the server holds as many buffered bytes as it may")
)

// chunkShift is the size, as a shift, of the chunk a spool takes after n bytes of a body of
// at most limit bytes: twice n, from 64 KiB to 1 MiB, but no larger than needed for the
// limit - n bytes that may still come.
func chunkShift(n, limit int64) int {
	shift := min(max(bits.Len64(uint64(n)), minChunkShift), maxChunkShift)
	if rest := limit - n; rest > 0 {
		shift = min(shift, max(bits.Len64(uint64(rest-1)), minChunkShift))
	}
	return shift
}

// spoolCharge is what a spool is charged for a body of n bytes, filled with limit n.
func spoolCharge(n int64) int64 {
	var charged int64
	for filled := int64(0); filled < n; {
		c := int64(1) << chunkShift(filled, n)
		charged += c
		filled += c
	}
	return charged
}

// fill reads r to its end, keeping at most limit bytes; a longer body is errTooLong, one cut
// short by its connection errTooShort, one that would take the buffered bytes past the
// server's budget errNoBudget (nothing more is read). Other errors from r (a failed signature
// or checksum among them) are returned as they are.
func (s *spool) fill(r io.Reader, limit int64) error {
	var cur []byte // the last chunk's free part
	for {
		if len(cur) == 0 {
			if s.n > limit {
				return errTooLong
			}
			if s.n == limit {
				return s.end(r)
			}
			shift := chunkShift(s.n, limit)
			if s.budget != nil {
				if !s.budget.take(1 << shift) {
					return errNoBudget
				}
				s.charged += 1 << shift
			}
			c := getChunk(shift)
			s.chunks = append(s.chunks, c)
			cur = c
		}
		n, err := r.Read(cur)
		cur = cur[n:]
		s.n += int64(n)
		if s.n > limit {
			return errTooLong
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errTooShort
		case err != nil:
			return err
		}
	}
}

// end reads r where the spool holds limit bytes: it must end there. A byte more is
// errTooLong; no chunk is taken to find that out.
func (s *spool) end(r io.Reader) error {
	var probe [1]byte
	for {
		n, err := r.Read(probe[:])
		switch {
		case n > 0:
			s.n++
			return errTooLong
		case errors.Is(err, io.EOF):
			return nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errTooShort
		case err != nil:
			return err
		}
	}
}

// reader reads the spooled bytes back.
func (s *spool) reader() io.Reader {
	rs := make([]io.Reader, 0, len(s.chunks))
	rest := s.n
	for _, c := range s.chunks {
		n := min(rest, int64(len(c)))
		rs = append(rs, bytes.NewReader(c[:n]))
		rest -= n
	}
	return io.MultiReader(rs...)
}

// copyTo copies the spooled bytes to dst, which holds at least s.n bytes.
func (s *spool) copyTo(dst []byte) {
	rest := s.n
	for _, c := range s.chunks {
		n := copy(dst, c[:min(rest, int64(len(c)))])
		dst, rest = dst[n:], rest-int64(n)
	}
}

// release returns the chunks to their pools and their bytes to the budget; the spool is empty
// afterwards.
func (s *spool) release() {
	for _, c := range s.chunks {
		putChunk(c)
	}
	if s.charged > 0 {
		s.budget.give(s.charged)
	}
	s.chunks, s.n, s.charged = nil, 0, 0
}
