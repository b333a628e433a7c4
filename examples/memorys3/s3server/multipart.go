package s3server

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// maxAbortRounds bounds abortUploads: each round lists up to 1000 uploads and aborts them, so
// this is a million uploads, far beyond what a client can start while its bucket goes away.
const maxAbortRounds = 1000

// abortUploads aborts the multipart uploads in progress in bucket, which frees their parts.
//
// gofakes3 keeps uploads in memory of its own, outside the Backend, and does not forget them
// when a bucket is deleted (its uploader says "FIXME: make sure the uploader responds to
// DeleteBucket"): their parts would stay in memory for good, and a bucket created again under
// the same name would list them to its new grantees, who could complete them into objects.
// They are reachable only through gofakes3's S3 API, so the server lists and aborts them
// through it, in process, with no authentication in front. It is called before a bucket is
// deleted and again when one is created, for an upload a client started while the delete ran.
func (s *Server) abortUploads(bucket string) error {
	for range maxAbortRounds {
		uploads, err := s.listUploads(bucket)
		if err != nil || len(uploads) == 0 {
			return err
		}
		for _, u := range uploads {
			code, s3code := s.storeCall(http.MethodDelete, "/"+bucket+"/"+u.Key, "uploadId="+url.QueryEscape(string(u.UploadID)))
			if code != http.StatusNoContent && s3code != string(gofakes3.ErrNoSuchUpload) { // gone already: fine
				return fmt.Errorf("abort multipart upload of %s/%s: the store answered %d %s", bucket, u.Key, code, s3code)
			}
		}
	}
	return fmt.Errorf("abort the multipart uploads of %s: more than %d rounds", bucket, maxAbortRounds)
}

// listUploads lists up to 1000 multipart uploads in progress in bucket.
func (s *Server) listUploads(bucket string) ([]gofakes3.ListMultipartUploadItem, error) {
	rec := &storeRecorder{header: http.Header{}}
	s.store.ServeHTTP(rec, storeRequest(http.MethodGet, "/"+bucket, "uploads&max-uploads=1000"))
	switch code := s3Code(rec.body.Bytes()); {
	case rec.code == http.StatusOK:
	case code == string(gofakes3.ErrNoSuchUpload), code == string(gofakes3.ErrNoSuchBucket):
		return nil, nil // no upload was ever started there, or no bucket
	default:
		return nil, fmt.Errorf("list the multipart uploads of %s: the store answered %d %s", bucket, rec.code, code)
	}
	var out gofakes3.ListMultipartUploadsResult
	if err := xml.Unmarshal(rec.body.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("list the multipart uploads of %s: %w", bucket, err)
	}
	return out.Uploads, nil
}

// storeCall sends one request to the store and returns its status and S3 error code.
func (s *Server) storeCall(method, path, rawQuery string) (int, string) {
	rec := &storeRecorder{header: http.Header{}}
	s.store.ServeHTTP(rec, storeRequest(method, path, rawQuery))
	return rec.code, s3Code(rec.body.Bytes())
}

func storeRequest(method, path, rawQuery string) *http.Request {
	return &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery}, Host: "memorys3.internal",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: http.NoBody}
}

// s3Code is the Code of an S3 error document, or "".
func s3Code(body []byte) string {
	var e struct {
		Code string `xml:"Code"`
	}
	if xml.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Code
}

// storeRecorder keeps the store's answer to an in-process call.
type storeRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *storeRecorder) Header() http.Header { return r.header }

func (r *storeRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *storeRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}

// uploadLocks serialise, per upload, storing a part and completing the upload: the size check
// of a completion must see the parts the store then assembles, not ones replaced in between.
// Striped by upload ID, they hold only in-memory work: a part's bytes are read before its
// stripe is taken.
type uploadLocks [64]sync.Mutex

func (l *uploadLocks) lock(uploadID string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uploadID))
	m := &l[h.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// uploadPart reads a part whole (bounded, verified), then stores it.
func (s *Server) uploadPart(w http.ResponseWriter, r *http.Request, id requestID, op *operation, body io.ReadCloser, size int64, accessKeyID string) {
	var sp spool
	defer sp.release()
	switch err := sp.fill(body, size); {
	case errors.Is(err, errTooLong):
		s.refuse(w, r, id, s3err.ErrIncompleteBody.With("the body is longer than its declared length"), accessKeyID, "part too long")
		return
	case errors.Is(err, errTooShort):
		s.refuse(w, r, id, s3err.ErrIncompleteBody, accessKeyID, "part cut short")
		return
	case err != nil:
		s.refuse(w, r, id, err, accessKeyID, "part body refused")
		return
	case sp.n != size:
		s.refuse(w, r, id, s3err.ErrIncompleteBody, accessKeyID, "part shorter than declared")
		return
	}
	setBody(r, io.NopCloser(sp.reader()), size)
	defer s.uploads.lock(r.URL.Query().Get("uploadId"))()
	s.store.ServeHTTP(w, r)
}

// maxPartNumber is the highest part number S3 allows.
const maxPartNumber = gofakes3.MaxUploadPartNumber

// completeUpload checks a CompleteMultipartUpload document before the store assembles the
// object: part numbers strictly ascending, as S3 requires (gofakes3 sorts a copy and accepts
// repeats, so one part named ten thousand times would make it allocate ten thousand times its
// size), and the parts' total within the object size limit.
func (s *Server) completeUpload(w http.ResponseWriter, r *http.Request, id requestID, op *operation, doc []byte, accessKeyID string) {
	var in gofakes3.CompleteMultipartUploadRequest
	if err := xml.Unmarshal(doc, &in); err != nil {
		s.refuse(w, r, id, s3err.ErrMalformedXML, accessKeyID, "completion document is not XML")
		return
	}
	for i, p := range in.Parts {
		if p.PartNumber < 1 || p.PartNumber > maxPartNumber || (i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber) {
			s.refuse(w, r, id, s3err.ErrInvalidPartOrder, accessKeyID, "parts not in strictly ascending order")
			return
		}
	}
	uploadID := r.URL.Query().Get("uploadId")
	defer s.uploads.lock(uploadID)()
	sizes, err := s.partSizes(op.bucket, op.key, uploadID)
	if err != nil {
		s.refuse(w, r, id, err, accessKeyID, "")
		return
	}
	var total int64
	for _, p := range in.Parts {
		total += sizes[p.PartNumber] // a part that is not there: the store answers InvalidPart
	}
	if total > s.limits.MaxObjectSize {
		s.refuse(w, r, id, s3err.ErrEntityTooLarge.With("the parts add up to %d bytes; this server takes objects of at most %d", total, s.limits.MaxObjectSize),
			accessKeyID, "completed object too large")
		return
	}
	s.store.ServeHTTP(w, r)
}

// partSizes lists the sizes of an upload's parts through the store, in process. An upload that
// does not exist has none: the completion then fails in the store with NoSuchUpload.
func (s *Server) partSizes(bucket, key, uploadID string) (map[int]int64, error) {
	sizes := map[int]int64{}
	marker := 0
	for range maxPartNumber + 1 { // each round lists at least one part, or stops
		rec := &storeRecorder{header: http.Header{}}
		q := url.Values{"uploadId": {uploadID}, "max-parts": {"1000"}, "part-number-marker": {strconv.Itoa(marker)}}
		s.store.ServeHTTP(rec, storeRequest(http.MethodGet, "/"+bucket+"/"+key, q.Encode()))
		if rec.code != http.StatusOK {
			if code := s3Code(rec.body.Bytes()); code == string(gofakes3.ErrNoSuchUpload) || code == string(gofakes3.ErrNoSuchBucket) {
				return sizes, nil
			}
			return nil, fmt.Errorf("list the parts of upload %s: the store answered %d", uploadID, rec.code)
		}
		var out gofakes3.ListMultipartUploadPartsResult
		if err := xml.Unmarshal(rec.body.Bytes(), &out); err != nil {
			return nil, fmt.Errorf("list the parts of upload %s: %w", uploadID, err)
		}
		for _, p := range out.Parts {
			sizes[p.PartNumber] = p.Size
		}
		if !out.IsTruncated || out.NextPartNumberMarker <= marker {
			return sizes, nil
		}
		marker = out.NextPartNumberMarker
	}
	return sizes, nil
}
