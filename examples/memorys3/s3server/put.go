package s3server

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"go.uber.org/zap"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// objectStore is the store's handler: gofakes3's, except for PutObject, which memorys3
// performs itself as gofakes3 would. gofakes3 took a PUT through its router, CORS wrapper,
// header parsing and a hashing reader of its own before its backend read a byte: for a small
// object that cost as much as the signature check. Whether a request is a PutObject is not
// decided again here: the handler (perform) decided it, and only a PutObject's body is a
// commitAtEOF.
//
// gofakes3 calls its backend with no request at hand, so a request performed for a tenant
// (every client's) gets a gofakes3 of its own on a backend that knows the tenant
// (requestBackend): a handful of small allocations, which buy charging the tenant for what
// the request holds (a GET's answer, a listing's page) and for the uploads and parts it makes.
// The server's own calls use the shared one.
type objectStore struct {
	s        *Server
	opts     []gofakes3.Option
	gofakes3 http.Handler
}

func (o objectStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if eb, ok := r.Body.(*commitAtEOF); ok && eb.c.op.spec.body == bodyObject {
		o.s.putObject(w, r, eb)
		return
	}
	t := tenantOf(r.Context())
	if t == nil {
		o.gofakes3.ServeHTTP(w, r)
		return
	}
	b := &requestBackend{storeBackend: o.s.objects, t: t}
	defer b.release()
	gofakes3.New(b, o.opts...).Server().ServeHTTP(w, r)
}

// putObject stores r's body as the object the handler authorised (eb.c.op), with the checks
// and the answer of gofakes3's createObject: the bucket must exist, metadata (x-amz-* headers,
// Content-Type, Content-Disposition, Content-Encoding and the time) within gofakes3's size
// limit, If-Match / If-None-Match conditions, a key within gofakes3's length limit, and a
// Content-MD5 the body matches. The body is hashed once, as it arrives, for the ETag and the
// store (storeBackend.PutObject spools, charges and hands it on with that sum).
func (s *Server) putObject(w http.ResponseWriter, r *http.Request, eb *commitAtEOF) {
	op := eb.c.op
	s.storeLog.Print(gofakes3.LogInfo, "CREATE OBJECT:", op.bucket, op.key)
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Server", "AmazonS3")
	h.Set("x-amz-request-id", eb.c.id.String())
	var err error
	defer func() {
		if err != nil {
			s.storeFailed(w, r, eb.c, err)
		}
	}()
	exists, err := s.objects.BucketExists(op.bucket)
	switch {
	case err != nil:
		return
	case !exists:
		err = gofakes3.BucketNotFound(op.bucket)
		return
	}
	meta, err := objectMetadata(r.Header, s.storeTime.Now())
	if err != nil {
		return
	}
	cond := putConditions(r.Header)
	if len(op.key) > gofakes3.KeySizeLimit {
		err = gofakes3.ResourceError(gofakes3.ErrKeyTooLong, op.key)
		return
	}
	body := &md5Body{r: eb, h: md5.New()}
	if v, ok := r.Header["Content-Md5"]; ok {
		if body.want, err = base64.StdEncoding.DecodeString(v[0]); err != nil || len(body.want) != md5.Size {
			err = gofakes3.ErrInvalidDigest
			return
		}
	}
	if _, err = s.objects.PutObject(op.bucket, op.key, meta, body, r.ContentLength, cond); err != nil {
		return
	}
	h.Set("ETag", `"`+hex.EncodeToString(body.Sum(nil))+`"`)
}

// storeFailed answers a PutObject the store did not perform: a gofakes3 error with its code
// and status (those gofakes3 does not know with theirs, see storeCodes), an S3 error of the
// body (a failed verification; the handler answers it) as it is, anything else as an internal
// error, logged.
func (s *Server) storeFailed(w http.ResponseWriter, r *http.Request, c *commit, err error) {
	var e *s3err.Error
	var ge gofakes3.Error
	switch {
	case errors.As(err, &e):
	case errors.As(err, &ge):
		code := ge.ErrorCode()
		msg := strings.TrimPrefix(ge.Error(), string(code)+": ")
		if known := storeCodes[string(code)]; known != nil {
			e = known.With("%s", msg)
		} else {
			e = &s3err.Error{Code: string(code), Status: code.Status(), Message: msg}
		}
	default:
		s.log.Error("s3 request failed", zap.Stringer("request_id", c.id), zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.Error(err))
		e = s3err.ErrInternal
	}
	s3err.Write(w, r, e, c.id.String())
}

// objectMetadata is what gofakes3 keeps of a PUT's headers as the object's metadata: the
// first value of every x-amz-* header (the signing ones are gone by now), Content-Type,
// Content-Disposition and Content-Encoding, and the time as Last-Modified; at most
// gofakes3.DefaultMetadataSizeLimit bytes of names and values.
func objectMetadata(header http.Header, now time.Time) (map[string]string, error) {
	meta := make(map[string]string, 4)
	size := 0
	for k, v := range header {
		if len(v) > 0 && (strings.HasPrefix(k, "X-Amz-") || k == "Content-Type" || k == "Content-Disposition" || k == "Content-Encoding") {
			meta[k] = v[0]
			size += len(k) + len(v[0])
		}
	}
	lm := headerTime(now)
	meta["Last-Modified"] = lm
	if size += len("Last-Modified") + len(lm); size > gofakes3.DefaultMetadataSizeLimit {
		return nil, gofakes3.ErrMetadataTooLarge
	}
	return meta, nil
}

// headerTime is now as gofakes3 writes Last-Modified, formatted once a second.
func headerTime(now time.Time) string {
	sec := now.Unix()
	if t := lastHeaderTime.Load(); t != nil && t.sec == sec {
		return t.text
	}
	t := &formattedTime{sec: sec, text: now.UTC().Format("Mon, 02 Jan 2006 15:04:05") + " GMT"}
	lastHeaderTime.Store(t)
	return t.text
}

type formattedTime struct {
	sec  int64
	text string
}

var lastHeaderTime atomic.Pointer[formattedTime]

// putConditions are a PUT's If-Match and If-None-Match, as gofakes3 reads them; nil: none.
func putConditions(header http.Header) *gofakes3.PutConditions {
	ifMatch, ifNoneMatch := header.Get("If-Match"), header.Get("If-None-Match")
	if ifMatch == "" && ifNoneMatch == "" {
		return nil
	}
	cond := &gofakes3.PutConditions{}
	if ifMatch != "" {
		cond.IfMatch = &ifMatch
	}
	if ifNoneMatch != "" {
		cond.IfNoneMatch = &ifNoneMatch
	}
	return cond
}

// md5Body is a PUT's body on its way into the store, hashed as it is read: at its end, a
// Content-MD5 it does not match (want) fails the read, so the store stores nothing. Its Sum
// is the MD5 the store keeps (readerMD5) and the ETag.
type md5Body struct {
	r    io.Reader
	h    hash.Hash
	want []byte // nil: no Content-MD5
	sum  [md5.Size]byte
	done bool // read to its end: sum is the whole body's
}

func (b *md5Body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	if errors.Is(err, io.EOF) && !b.done {
		b.h.Sum(b.sum[:0])
		b.done = true
		if b.want != nil && !bytes.Equal(b.sum[:], b.want) {
			return n, gofakes3.ErrBadDigest
		}
	}
	return n, err
}

// Sum is the MD5 of what was read so far: of the whole body once it has been read to its end.
func (b *md5Body) Sum(in []byte) []byte {
	if b.done {
		return append(in, b.sum[:]...)
	}
	return b.h.Sum(in)
}
