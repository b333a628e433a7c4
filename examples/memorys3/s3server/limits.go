package s3server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"net/http"
	"time"

	"github.com/johannesboyne/gofakes3"
	"golang.org/x/net/netutil"
)

// One S3 server serves every tenant of the driver, and its process also holds the COSI
// socket: a single request or connection must not be able to take either down. These are the
// bounds, each with a flag in the memorys3 command.
const (
	// DefaultMaxObjectSize bounds an object (a PUT, a part, a completed multipart upload). S3
	// allows 5 GiB in one PUT; an in-memory store is better served by less.
	DefaultMaxObjectSize = 1 << 30
	// DefaultMaxConnections bounds the open S3 connections; further clients wait in the
	// listen backlog, so file descriptors remain for the COSI socket and the state files.
	DefaultMaxConnections = 256
	// DefaultIdleTimeout closes a connection on which nothing moved for this long: between
	// requests, and while a request body or a response is under way.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultHeaderTimeout bounds the time to send a request's headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultMaxHeaderBytes bounds a request's headers (S3 allows 8 KiB of user metadata).
	DefaultMaxHeaderBytes = 64 << 10
)

// Limits bound what one request and one connection may hold. Zero fields take the defaults.
type Limits struct {
	// MaxObjectSize is the largest object, part or completed multipart upload accepted, in
	// bytes; larger ones are refused with EntityTooLarge before their body is read.
	MaxObjectSize int64
	// MaxConnections is the most S3 connections served at once (Serve only).
	MaxConnections int
	// IdleTimeout closes a connection idle for this long, between requests or within one.
	IdleTimeout time.Duration
	// HeaderTimeout is how long a client may take to send a request's headers (Serve only).
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds the size of a request's headers (Serve only).
	MaxHeaderBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxObjectSize <= 0 {
		l.MaxObjectSize = DefaultMaxObjectSize
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
	return l
}

// Serve answers S3 requests on lis, within the server's Limits, until Shutdown. It returns
// http.ErrServerClosed after Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	return s.http.Serve(netutil.LimitListener(lis, s.limits.MaxConnections))
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
	}
}

// deadlines moves a connection's read and write deadlines forward as bytes move, so a client
// that stops sending a body, or stops reading an answer, loses its connection after the idle
// timeout while a slow but steady transfer of any size goes on. Where the connection does not
// support deadlines (a handler called in process), it does nothing.
type deadlines struct {
	rc   *http.ResponseController
	idle time.Duration
}

func (d deadlines) read()  { _ = d.rc.SetReadDeadline(time.Now().Add(d.idle)) }
func (d deadlines) write() { _ = d.rc.SetWriteDeadline(time.Now().Add(d.idle)) }

// idleReader is a request body that pushes the read deadline before each Read.
type idleReader struct {
	io.ReadCloser
	d deadlines
}

func (r idleReader) Read(p []byte) (int, error) {
	r.d.read()
	return r.ReadCloser.Read(p)
}

// idleWriter is a response writer that pushes the write deadline before each Write.
type idleWriter struct {
	http.ResponseWriter
	d deadlines
}

func (w idleWriter) Write(p []byte) (int, error) {
	w.d.write()
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Bodies are buffered in chunks that grow as the bytes arrive: the first holds 64 KiB, each
// next one twice what arrived so far, up to 1 MiB. Allocation therefore follows the bytes that
// arrived (at most twice them), never a length the client declared; and a large body is read
// in large slices, since a read lands in the free part of the current chunk and 64 KiB reads
// cost a 1 MiB upload a sixth more time in read calls than the store's own single buffer.
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

// spool holds a body read in pooled chunks.
type spool struct {
	chunks [][]byte // each filled to its length but the last, which holds n minus the others
	n      int64
}

// errTooLong and errTooShort: a body longer than its declared length, or one whose
// connection ended before it did.
var (
	errTooLong  = errors.New("body longer than declared")
	errTooShort = errors.New("body ended before its declared length")
)

// fill reads r to its end, keeping at most limit bytes; a longer body is errTooLong, one cut
// short by its connection errTooShort. Other errors from r (a failed signature or checksum
// among them) are returned as they are.
func (s *spool) fill(r io.Reader, limit int64) error {
	var cur []byte // the last chunk's free part
	for {
		if len(cur) == 0 {
			if s.n > limit {
				return errTooLong
			}
			shift := min(max(bits.Len64(uint64(s.n)), minChunkShift), maxChunkShift)
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

// release returns the chunks to their pools; the spool is empty afterwards.
func (s *spool) release() {
	for _, c := range s.chunks {
		putChunk(c)
	}
	s.chunks, s.n = nil, 0
}

// storeBackend is the backend gofakes3 is given. Its PutObject reads the body in chunks as
// the bytes arrive before handing it on: gofakes3's backends allocate the declared size up
// front (gofakes3.ReadAll), so a request declaring terabytes and sending three bytes would
// otherwise allocate terabytes. It embeds only gofakes3.Backend, so the store sees no
// versioning support: memorys3 offers no versions.
type storeBackend struct {
	gofakes3.Backend
	maxObjectSize int64
}

// PutObject implements gofakes3.Backend.
func (b storeBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	if br, ok := input.(*bytes.Reader); ok && int64(br.Len()) == size {
		// Already in memory (a completed multipart upload, whose size was checked first).
		return b.Backend.PutObject(bucket, key, meta, input, size, cond)
	}
	if size < 0 || size > b.maxObjectSize {
		// The handler refuses these before the body is read; this is the second line.
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	}
	var sp spool
	defer sp.release()
	switch err := sp.fill(input, size); {
	case errors.Is(err, errTooLong), errors.Is(err, errTooShort):
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	case err != nil:
		return gofakes3.PutObjectResult{}, err
	case sp.n != size:
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	}
	return b.Backend.PutObject(bucket, key, meta, sp.reader(), size, cond)
}
