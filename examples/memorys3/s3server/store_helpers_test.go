package s3server

import (
	"net/http"
	"net/url"

	"github.com/johannesboyne/gofakes3"
)

// storeRecorder keeps the store's answer to an in-process call.
type storeRecorder = storeAnswer

// storeCall sends one request to the store, in process and unauthenticated, and returns its
// status and S3 error code.
func (s *Server) storeCall(method, path, rawQuery string) (int, string) {
	rec := &storeRecorder{header: http.Header{}}
	s.store.ServeHTTP(rec, storeRequest(method, path, rawQuery))
	return rec.code, s3Code(rec.body.Bytes())
}

// storeRequest is a request for the store as the server would rebuild it, from a host no
// client uses (the probe tells the server's own calls by it).
func storeRequest(method, path, rawQuery string) *http.Request {
	return &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery}, Host: "memorys3.internal",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{}, Body: http.NoBody}
}

// listUploads lists every multipart upload in progress in bucket.
func (s *Server) listUploads(bucket string) ([]gofakes3.ListMultipartUploadItem, error) {
	out, err := s.uploads.ListMultipartUploads(bucket, nil, gofakes3.Prefix{}, 0)
	if err != nil {
		return nil, err
	}
	return out.Uploads, nil
}

// partSizes are the sizes of an upload's parts by part number; none for an upload that does
// not exist.
func (s *Server) partSizes(bucket, key, uploadID string) (map[int]int64, error) {
	u := s.uploads
	u.mu.Lock()
	defer u.mu.Unlock()
	sizes := map[int]int64{}
	if up, err := u.get(bucket, key, gofakes3.UploadID(uploadID)); err == nil {
		for n, p := range up.parts {
			sizes[n] = int64(len(p.body))
		}
	}
	return sizes, nil
}
