package s3server

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"go.uber.org/zap"

	"github.com/csikit/csikit/examples/memorys3/s3err"
	"github.com/csikit/csikit/examples/memorys3/sigv4"
)

// maxRequestDocument bounds the XML bodies of POST calls (DeleteObjects lists up to 1000
// keys, CompleteMultipartUpload up to 10000 parts: both well under this).
const maxRequestDocument = 8 << 20

// ServeHTTP authenticates the request (SigV4), authorises it against the key's grants, and
// hands it to the object store with a body that yields plain, verified bytes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := requestID(s.reqID.Add(1))
	res, err := s.verifier.Verify(r)
	if err != nil {
		s.refuse(w, r, id, err, "", "authentication failed")
		return
	}
	entry, ok := s.keys.Load().byKey[res.AccessKeyID]
	if !ok { // revoked between the two lookups
		s.refuse(w, r, id, s3err.ErrInvalidAccessKeyID, res.AccessKeyID, "key revoked during the request")
		return
	}
	op := classify(r)
	switch {
	case op.need == needListBuckets:
		s.listBuckets(w, r, id, entry)
		return
	case op.need == needDeny:
		s.refuse(w, r, id, s3err.ErrAccessDenied, res.AccessKeyID, op.why)
		return
	case !entry.grants[op.bucket].allows(op.need):
		s.refuse(w, r, id, s3err.ErrAccessDenied, res.AccessKeyID, "no grant for this operation on bucket "+op.bucket)
		return
	case op.copySource != "" && !entry.grants[op.copySource].allows(needRead):
		s.refuse(w, r, id, s3err.ErrAccessDenied, res.AccessKeyID, "no read grant on copy source bucket "+op.copySource)
		return
	}
	if res.Body == nil {
		stripSigning(r.Header)
		s.store.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost {
		// XML documents are verified whole before the store parses them: an XML decoder stops
		// at the closing tag and would never reach the end where the hash is checked.
		doc, err := io.ReadAll(io.LimitReader(res.Body, maxRequestDocument+1))
		switch {
		case err != nil:
			s.refuse(w, r, id, err, res.AccessKeyID, "request body failed verification")
			return
		case len(doc) > maxRequestDocument:
			s.refuse(w, r, id, s3err.ErrEntityTooLarge, res.AccessKeyID, "request document too large")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(doc))
	} else {
		r.Body = res.Body
	}
	if res.Decoded {
		n := res.Body.Length()
		r.ContentLength = n
		r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
		r.TransferEncoding = nil
	}
	stripSigning(r.Header)
	s.store.ServeHTTP(&guardedWriter{ResponseWriter: w, s: s, r: r, id: id, body: res.Body, key: res.AccessKeyID}, r)
}

// requestID numbers the requests of a Server; it is formatted only when an answer or a log
// line names it, which successful requests (answered by the store) never do.
type requestID uint64

// String is the ID as S3 clients show it: 16 upper-case hex digits.
func (id requestID) String() string {
	var b [16]byte
	const digits = "0123456789ABCDEF"
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = digits[id&0xF]
		id >>= 4
	}
	return string(b[:])
}

// refuse answers with an S3 error and logs why at debug level: the access key ID and the
// code, never a secret.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, id requestID, err error, accessKeyID, why string) {
	var e *s3err.Error
	if !errors.As(err, &e) {
		s.log.Error("s3 request failed", zap.Stringer("request_id", id), zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.Error(err))
	} else {
		s.log.Debug("s3 request refused", zap.Stringer("request_id", id), zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.String("access_key_id", accessKeyID),
			zap.String("code", e.Code), zap.String("reason", why), zap.String("message", e.Message))
	}
	s3err.Write(w, r, err, id.String())
}

// signingHeaders describe how the request was signed and sent, not the object: gofakes3 would
// store every x-amz-* header as object metadata and echo it on GET, and it would decode
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD a second time. The checksum headers and trailers were
// verified here; they are transport checks, like Content-MD5, not object metadata (a stored
// checksum echoed on a ranged GET would fail the client's response validation).
var signingHeaders = []string{
	"Authorization", "X-Amz-Content-Sha256", "X-Amz-Date", "X-Amz-Decoded-Content-Length",
	"X-Amz-Trailer", "X-Amz-Sdk-Checksum-Algorithm", "X-Amz-Checksum-Algorithm",
	"X-Amz-Checksum-Crc32", "X-Amz-Checksum-Crc32c", "X-Amz-Checksum-Crc64nvme",
	"X-Amz-Checksum-Sha1", "X-Amz-Checksum-Sha256", "X-Amz-Checksum-Type",
}

func stripSigning(h http.Header) {
	for _, k := range signingHeaders {
		delete(h, k)
	}
	if ce, ok := h["Content-Encoding"]; ok {
		var keep []string
		for _, v := range ce {
			for tok := range strings.SplitSeq(v, ",") {
				if tok = strings.TrimSpace(tok); tok != "" && !strings.EqualFold(tok, "aws-chunked") {
					keep = append(keep, tok)
				}
			}
		}
		if len(keep) == 0 {
			delete(h, "Content-Encoding")
		} else {
			h["Content-Encoding"] = []string{strings.Join(keep, ",")}
		}
	}
}

// guardedWriter replaces the store's answer with the verification error when the body failed
// its checks: the store saw a failed Read and would call it an internal error.
type guardedWriter struct {
	http.ResponseWriter
	s      *Server
	r      *http.Request
	id     requestID
	key    string
	body   *sigv4.Body
	wrote  bool
	failed bool
}

func (g *guardedWriter) WriteHeader(code int) {
	if g.wrote {
		return
	}
	g.wrote = true
	if err := g.body.Err(); err != nil {
		g.failed = true
		// Headers the store set for its own answer do not belong to ours.
		h := g.ResponseWriter.Header()
		for k := range h {
			delete(h, k)
		}
		g.s.refuse(g.ResponseWriter, g.r, g.id, err, g.key, "request body failed verification")
		return
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	if !g.wrote {
		g.WriteHeader(http.StatusOK)
	}
	if g.failed {
		return len(p), nil
	}
	return g.ResponseWriter.Write(p)
}

// listBuckets answers ListBuckets with the buckets the key is granted, in any mode.
func (s *Server) listBuckets(w http.ResponseWriter, r *http.Request, id requestID, e *keyEntry) {
	all, err := s.backend.ListBuckets()
	if err != nil {
		s.refuse(w, r, id, fmt.Errorf("list buckets: %w", err), e.key.AccessKeyID(), "")
		return
	}
	out := gofakes3.Storage{
		Xmlns: "http://s3.amazonaws.com/doc/2006-03-01/",
		Owner: &gofakes3.UserInfo{ID: e.accountID, DisplayName: e.name},
	}
	for _, b := range all {
		if _, ok := e.grants[b.Name]; ok {
			out.Buckets = append(out.Buckets, b)
		}
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].Name < out.Buckets[j].Name })
	raw, err := xml.Marshal(out)
	if err != nil {
		s.refuse(w, r, id, fmt.Errorf("encode bucket list: %w", err), e.key.AccessKeyID(), "")
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", id.String())
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(raw)
}
