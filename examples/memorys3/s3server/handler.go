package s3server

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"go.uber.org/zap"

	"github.com/csikit/csikit/examples/memorys3/s3err"
	"github.com/csikit/csikit/examples/memorys3/sigv4"
)

// maxRequestDocument bounds the XML bodies of POST calls (DeleteObjects lists up to 1000
// keys, CompleteMultipartUpload up to 10000 parts: both well under this).
const maxRequestDocument = 8 << 20

// ServeHTTP authenticates the request (SigV4), decides which S3 operation it is (route, from
// the allow-list), authorises that operation against the key's grants, and hands the store a
// request rebuilt from the decision, with a body that yields plain, verified bytes. A request
// that changes the store is authorised again when the store commits it (see commit).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := requestID(s.reqID.Add(1))
	now := time.Now()
	iw := &idleWriter{ResponseWriter: w, d: deadlines{rc: http.NewResponseController(w), idle: s.limits.IdleTimeout,
		interval: s.limits.BodyRateInterval, quota: s.bodyQuota}}
	d := &iw.d
	d.read(now)
	d.write(now)
	defer d.writeNow() // the answer's last bytes leave after the handler returns
	w = iw
	// The store gets a request rebuilt from the decision; the one net/http made stays as it
	// is, because after the answer net/http looks at its body to decide whether to drain it or
	// close the connection, and would drain a replaced one with no bound but the deadline.
	req := *r
	u := *r.URL
	req.URL = &u
	if r.Body != nil && r.Body != http.NoBody {
		iw.body = &idleReader{ReadCloser: r.Body, d: d, length: r.ContentLength,
			expectContinue: strings.EqualFold(r.Header.Get("Expect"), "100-continue")}
		req.Body = iw.body
	}
	r = &req
	defer s.recoverPanic(iw, r, id)

	res, err := s.verifier.Verify(r)
	if err != nil {
		// Whoever sent it holds no key: the connection is not kept for them.
		w.Header().Set("Connection", "close")
		s.refuse(w, r, id, err, "", "authentication failed")
		return
	}
	ring := s.keys.Load()
	entry, ok := ring.byKey[res.AccessKeyID]
	if !ok { // revoked between the two lookups
		w.Header().Set("Connection", "close")
		s.refuse(w, r, id, s3err.ErrInvalidAccessKeyID, res.AccessKeyID, "key revoked during the request")
		return
	}
	t := entry.tenant
	if !t.enter() {
		s.refuse(w, r, id, errTenantRequests, res.AccessKeyID, "the account has as many requests in progress as it may now")
		return
	}
	defer t.leave()
	iw.admitted = true
	defer iw.dropBody() // before leave: within the tenant's requests
	if res.Body != nil {
		// A signed chunk is held until its signature checks: its buffer is charged to the
		// tenant's share and the server's budget, and given back however the request ends.
		res.Body.ChargeTo(t)
		defer res.Body.Release()
	}
	op, err := route(r)
	if err != nil {
		s.refuse(w, r, id, err, res.AccessKeyID, "not an operation memorys3 offers to keys")
		return
	}
	if s.charged != nil {
		s.charged(op)
	}
	switch {
	case op.spec.need == needListBuckets:
		s.listBuckets(w, r, id, entry)
		return
	case !entry.grants[op.bucket].allows(op.spec.need):
		s.refuse(w, r, id, s3err.ErrAccessDenied, res.AccessKeyID, "no grant for "+op.spec.name+" on bucket "+op.bucket)
		return
	case op.spec.copy && !entry.grants[op.copyBucket].allows(needRead):
		s.refuse(w, r, id, s3err.ErrAccessDenied, res.AccessKeyID, "no read grant on copy source bucket "+op.copyBucket)
		return
	case !entry.grants[op.bucket].allows(needRead) && conditional(r.Header):
		s.refuse(w, r, id, errBlindCondition, res.AccessKeyID, "a condition on stored objects from a key that may not read bucket "+op.bucket)
		return
	case op.spec.newKey && len(op.key) > s.limits.MaxKeyLength:
		s.refuse(w, r, id, s3err.ErrKeyTooLong.With("new object keys are at most %d bytes; this one is %d", s.limits.MaxKeyLength, len(op.key)),
			res.AccessKeyID, "key too long")
		return
	}
	s.perform(w, r.WithContext(withTenant(r.Context(), t)), id, op, res, ring, t)
}

// conditionHeaders make an answer depend on what the bucket holds: whether the object exists,
// its ETag (the MD5 of its bytes, so a condition confirms a guess of them) and its age.
var conditionHeaders = []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"}

// conditional says whether h carries a condition on the stored object.
func conditional(h http.Header) bool {
	for _, k := range conditionHeaders {
		if _, ok := h[k]; ok {
			return true
		}
	}
	return false
}

// errBlindCondition refuses a condition from a key that may not read the bucket: its answer
// (412 or 200, 304 or 200) would tell the key whether an object exists and confirm guesses of
// its content, which is a read.
var errBlindCondition = s3err.ErrAccessDenied.With("a key that may not read this bucket may not send If-Match, If-None-Match, " +
	"If-Modified-Since or If-Unmodified-Since: the answer would depend on what the bucket holds")

// errTenantRequests refuses a request of an account that holds its share of the requests in
// progress.
var errTenantRequests = s3err.ErrSlowDown.With("this account has as many requests in progress as it may now; retry when one ends")

// recoverPanic answers a panic in the store (or here) with InternalError and logs it as one
// line, naming the panic only by what the runtime says or by its type: a panic's value is
// not ours to print. An answer already under way is cut off instead.
func (s *Server) recoverPanic(w *idleWriter, r *http.Request, id requestID) {
	p := recover()
	if p == nil {
		return
	}
	if p == http.ErrAbortHandler { //nolint:errorlint // net/http's own sentinel, compared as it does
		panic(p)
	}
	what := fmt.Sprintf("%T", p)
	if re, ok := p.(runtime.Error); ok {
		what = re.Error()
	}
	s.log.Error("s3 request panicked", zap.Stringer("request_id", id), zap.String("method", r.Method),
		zap.String("path", r.URL.Path), zap.String("panic", what), zap.StackSkip("stack", 2))
	if w.wrote {
		panic(http.ErrAbortHandler)
	}
	h := w.Header()
	for k := range h {
		delete(h, k)
	}
	h.Set("Connection", "close")
	s3err.Write(w, r, s3err.ErrInternal, id.String())
}

// perform rebuilds r as the store must see it for op and hands it over: the query holds only
// what op reads, the copy source is in canonical form, signing headers are gone, and the body
// is bounded, verified, charged to the tenant's share of the budget and read whole.
func (s *Server) perform(w http.ResponseWriter, r *http.Request, id requestID, op *operation, res *sigv4.Result, ring *keyring, t *tenant) {
	var body io.ReadCloser = r.Body
	if res.Body != nil {
		body = res.Body
	}
	var kb *tenantBody
	if op.spec.body != bodyNone {
		kb = &tenantBody{ReadCloser: body, t: t}
		defer kb.release()
		body = kb
	}
	stripSigning(r.Header)
	r.Header.Del("X-Minio-Force-Delete")
	r.Header.Del("X-Amz-Copy-Source")
	if op.spec.copy {
		r.Header.Set("X-Amz-Copy-Source", canonicalCopySource(op.copyBucket, op.copyKey))
	}
	if rng, ok := r.Header["Range"]; ok && len(rng) > 0 {
		r.Header["Range"] = []string{safeRange(rng[0])}
	}
	r.URL.RawQuery = op.query
	r.Form, r.PostForm, r.MultipartForm = nil, nil, nil
	c := commit{s: s, op: op, ring: ring, id: id, key: res.AccessKeyID}

	switch op.spec.body {
	case bodyNone:
		r.Body, r.ContentLength = http.NoBody, 0
		r.Header.Del("Content-Length")
		r.TransferEncoding = nil
		c.serve(w, r)
	case bodyDocument, bodyCompletion:
		// Read whole and verified first: an XML decoder stops at the closing tag and would
		// never reach the end of the body, where the hash is checked.
		sp := spool{budget: &s.budget}
		defer sp.release()
		if err := sp.fill(body, maxRequestDocument); err != nil {
			s.refuseBody(w, r, id, err, res.AccessKeyID, s3err.ErrEntityTooLarge.With("request documents are at most %d bytes", maxRequestDocument))
			return
		}
		if op.spec.name == "DeleteObjects" {
			_, answer, err := scanDeleteDoc(sp.reader())
			if errors.Is(err, errTooManyObjects) {
				s.refuse(w, r, id, s3err.ErrMalformedXML.With("DeleteObjects takes at most %d keys", maxDeleteKeys), res.AccessKeyID, "too many keys to delete")
				return
			}
			// The answer names every key, escaped, and is held whole until the client has
			// read it: up to five times the document, charged to the tenant until then.
			if !t.Take(answer) {
				s.refuse(w, r, id, errTenantShare, res.AccessKeyID, "no room for the answer naming the deleted keys")
				return
			}
			defer t.Give(answer)
			c.answerSize = answer
		}
		setBody(r, io.NopCloser(sp.reader()), sp.n)
		if op.spec.body == bodyCompletion {
			s.completeUpload(w, r, c, sp.reader())
			return
		}
		c.serve(w, r)
	case bodyObject:
		size, ok := s.bodySize(w, r, id, res)
		if !ok {
			return
		}
		// The body streams into the store (objectStore.putObject), which hashes it as it
		// arrives and buffers it (storeBackend.PutObject); the grant is checked again when it
		// has arrived whole and verified (commitAtEOF), and the store commits under the
		// commit lock.
		eb := &commitAtEOF{ReadCloser: body, c: &c}
		defer eb.release()
		// objectStore.putObject reads the length from r.ContentLength alone; a client's
		// Content-Length header (the encoded length, for aws-chunked) goes.
		r.Body, r.ContentLength, r.TransferEncoding = eb, size, nil
		r.Header.Del("Content-Length")
		ans := storeAnswer{header: w.Header()}
		s.store.ServeHTTP(&ans, r)
		eb.release()
		switch {
		case eb.refused:
			clear(w.Header())
			s.refuse(w, r, id, errGrantGone, res.AccessKeyID, "grant gone before PutObject committed on bucket "+op.bucket)
		case kb.failed() != nil:
			// The store saw a failed Read (a verification, the tenant's share, a timeout) and
			// would call it an internal error.
			clear(w.Header())
			s.refuse(w, r, id, kb.failed(), res.AccessKeyID, "request body failed")
		default:
			c.answer(w, r, &ans)
		}
	case bodyPart:
		size, ok := s.bodySize(w, r, id, res)
		if !ok {
			return
		}
		// The body is read whole before the store sees it: the store then commits what was
		// verified, at once, under the commit lock, instead of whenever the client finishes.
		sp := spool{budget: &s.budget}
		defer sp.release()
		err := sp.fill(body, size)
		if err == nil && sp.n != size {
			err = errTooShort
		}
		if err != nil {
			s.refuseBody(w, r, id, err, res.AccessKeyID, s3err.ErrIncompleteBody.With("the body is longer than its declared length"))
			return
		}
		setBody(r, io.NopCloser(sp.reader()), size)
		c.serve(w, r)
	}
}

// bodySize is the length of an object's or a part's body, refused when it is unknown or
// over the object size limit (before any of it is read).
func (s *Server) bodySize(w http.ResponseWriter, r *http.Request, id requestID, res *sigv4.Result) (int64, bool) {
	size := r.ContentLength
	if res.Decoded {
		size = res.Body.Length()
	}
	switch {
	case size < 0:
		s.refuse(w, r, id, s3err.ErrMissingContentLength, res.AccessKeyID, "object of unknown length")
		return 0, false
	case size > s.limits.MaxObjectSize:
		s.refuse(w, r, id, s3err.ErrEntityTooLarge.With("the object is %d bytes; this server takes at most %d", size, s.limits.MaxObjectSize),
			res.AccessKeyID, "object too large")
		return 0, false
	}
	return size, true
}

// refuseBody answers a body that could not be read whole: tooLong is the answer to one
// longer than it may be.
func (s *Server) refuseBody(w http.ResponseWriter, r *http.Request, id requestID, err error, accessKeyID string, tooLong *s3err.Error) {
	switch {
	case errors.Is(err, errNoBudget):
		s.refuse(w, r, id, s3err.ErrSlowDown.With("the server is holding as many request bodies as it may; retry later"), accessKeyID, "no room for the body")
	case errors.Is(err, errTooLong):
		s.refuse(w, r, id, tooLong, accessKeyID, "body too long")
	case errors.Is(err, errTooShort):
		s.refuse(w, r, id, s3err.ErrIncompleteBody, accessKeyID, "body cut short")
	default:
		s.refuse(w, r, id, err, accessKeyID, "request body failed verification")
	}
}

// commit is one request on its way to the store, with what it was authorised against.
type commit struct {
	s    *Server
	op   *operation
	ring *keyring // the grants in force when it was authorised
	id   requestID
	key  string
	// answerSize bounds the store's answer, which is held whole (storeAnswer) and was charged
	// to the tenant at that size; 0: a short answer, not charged.
	answerSize int64
}

// serve hands r to the store. A request that changes the store is authorised again first, as
// the store performs it: under the commit lock, which the Go API holds exclusively while it
// changes the grants in force, the key must still hold its grant (and read on a copy's source)
// on the bucket it was authorised against, not on one deleted and created again since. A
// write that began before a revoke or a bucket delete and finishes after it is refused with
// AccessDenied and stores nothing. The check costs a pointer comparison while no grant changed.
func (c commit) serve(w http.ResponseWriter, r *http.Request) {
	s := c.s
	if !c.op.spec.commits {
		// A read may be refused for want of the tenant's share (a GET's answer, a listing's
		// page), which gofakes3 answers as 500; such an answer is kept (it is short) and sent
		// with its own status.
		sf := &statusFixer{ResponseWriter: w}
		s.store.ServeHTTP(sf, r)
		if sf.held != nil {
			c.answer(w, r, sf.held)
		}
		return
	}
	ans := storeAnswer{header: w.Header()}
	// Grown at once to the size charged, the buffer does not double past it as it fills.
	ans.body.Grow(int(c.answerSize))
	if !c.commitLocked(&ans, r) {
		s.refuse(w, r, c.id, errGrantGone, c.key, "grant gone before "+c.op.spec.name+" committed on bucket "+c.op.bucket)
		return
	}
	c.answer(w, r, &ans)
}

// statusFixer passes the store's answer on as it comes, except one with status 500, which it
// keeps for commit.answer to send with the status of its code.
type statusFixer struct {
	http.ResponseWriter
	held *storeAnswer
	sent bool
}

func (f *statusFixer) WriteHeader(code int) {
	switch {
	case f.sent || f.held != nil:
	case code == http.StatusInternalServerError:
		f.held = &storeAnswer{header: f.ResponseWriter.Header(), code: code}
	default:
		f.sent = true
		f.ResponseWriter.WriteHeader(code)
	}
}

func (f *statusFixer) Write(p []byte) (int, error) {
	if f.held != nil {
		return f.held.body.Write(p)
	}
	f.sent = true
	return f.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (f *statusFixer) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// errGrantGone answers a write whose grant went while it was under way.
var errGrantGone = s3err.ErrAccessDenied.With("the grant this request was authorised by was revoked before it completed")

// answer sends the store's answer, kept in ans, to the client; the codes of the backend that
// gofakes3 sends as 500 go with their own status.
func (c commit) answer(w http.ResponseWriter, r *http.Request, ans *storeAnswer) {
	if ans.code == http.StatusInternalServerError {
		if e := storeCodes[s3Code(ans.body.Bytes())]; e != nil {
			clear(w.Header())
			c.s.refuse(w, r, c.id, e.With("%s", s3Message(ans.body.Bytes())), c.key, "the store refused "+c.op.spec.name)
			return
		}
	}
	if ans.code != 0 {
		w.WriteHeader(ans.code)
	}
	if ans.body.Len() > 0 {
		_, _ = w.Write(ans.body.Bytes())
	}
}

// commitAtEOF is a PUT's body on its way into the store: when it ends, verified (the SigV4
// body ends only after its hash or last chunk checked out), it takes the commit lock shared
// and checks the grant again; the store then commits before the handler releases the lock.
// A grant gone by then fails the read, so the store stores nothing.
type commitAtEOF struct {
	io.ReadCloser
	c       *commit
	locked  bool
	refused bool
}

func (e *commitAtEOF) Read(p []byte) (int, error) {
	if e.refused {
		return 0, errGrantGone
	}
	n, err := e.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !e.locked {
		e.c.s.commitMu.RLock()
		e.locked = true
		if !e.c.s.stillGranted(e.c.op, e.c.key, e.c.ring) {
			e.refused = true
			return n, errGrantGone
		}
	}
	return n, err
}

// release gives the commit lock back, once the store has returned.
func (e *commitAtEOF) release() {
	if e.locked {
		e.locked = false
		e.c.s.commitMu.RUnlock()
	}
}

// commitLocked checks the grant again and has the store perform r, under the commit lock
// (released however the store returns, a panic included); false: the grant is gone.
func (c commit) commitLocked(ans *storeAnswer, r *http.Request) bool {
	c.s.commitMu.RLock()
	defer c.s.commitMu.RUnlock()
	if !c.s.stillGranted(c.op, c.key, c.ring) {
		return false
	}
	c.s.store.ServeHTTP(ans, r)
	return true
}

// storeCodes are the S3 errors the backend answers that gofakes3 does not know (it sends them
// with status 500), with the status they travel with.
var storeCodes = map[string]*s3err.Error{
	string(codeSlowDown):       s3err.ErrSlowDown,
	string(codeEntityTooLarge): s3err.ErrEntityTooLarge,
	string(codeQuotaExceeded):  s3err.ErrQuotaExceeded,
}

// stillGranted says whether the key still holds what op needs, on the same buckets, in the
// grants in force now; then is the keyring op was authorised against.
func (s *Server) stillGranted(op *operation, accessKeyID string, then *keyring) bool {
	now := s.keys.Load()
	if now == then {
		return true
	}
	e, ok := now.byKey[accessKeyID]
	if !ok || !e.grants[op.bucket].allows(op.spec.need) || now.gen[op.bucket] != then.gen[op.bucket] {
		return false
	}
	if op.spec.copy && (!e.grants[op.copyBucket].allows(needRead) || now.gen[op.copyBucket] != then.gen[op.copyBucket]) {
		return false
	}
	return true
}

// setBody gives r a body of n bytes, as the store reads its length: from Content-Length.
func setBody(r *http.Request, body io.ReadCloser, n int64) {
	r.Body = body
	r.ContentLength = n
	r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
	r.TransferEncoding = nil
}

// requestID numbers the requests of a Server; it is formatted only when an answer or a log
// line names it: a refusal, a failure, or a PutObject (answered by memorys3 itself; gofakes3
// answers the other operations with IDs of its own).
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
	if errors.Is(err, s3err.ErrSlowDown) {
		w.Header().Set("Retry-After", "1")
	}
	if r.ContentLength != 0 {
		// The body may be unread: the connection ends with the answer instead of waiting
		// for bytes a refused client need not send.
		w.Header().Set("Connection", "close")
	}
	if w.Header().Get("Connection") == "close" {
		if b := lingerBody(w); b != nil {
			b.linger()
		}
		// net/http reads on up to 256 KiB of an unread body after the answer, to reuse the
		// connection it is about to close, waiting up to the idle timeout for bytes a
		// refused client (one that asked for 100 Continue, or a slow one) may never send:
		// the connection would hold its slot meanwhile.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
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
		if _, ok := e.grants[b.Name]; ok && gofakes3.ValidateBucketName(b.Name) == nil {
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
