package s3server

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"

	"github.com/johannesboyne/gofakes3"
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
