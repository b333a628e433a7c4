package s3server

import (
	"encoding/xml"
	"io"
	"net/http"

	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// maxPartNumber is the highest part number S3 allows.
const maxPartNumber = gofakes3.MaxUploadPartNumber

// completeUpload checks a CompleteMultipartUpload document before the store assembles the
// object: part numbers strictly ascending, as S3 requires (gofakes3 sorted a copy and accepted
// repeats, so one part named ten thousand times would have made it allocate ten thousand times
// its size), and the parts' total within the object size limit, as the upload store counts
// them. The store checks both again as it completes, under its lock.
func (s *Server) completeUpload(w http.ResponseWriter, r *http.Request, c commit, doc io.Reader) {
	var in gofakes3.CompleteMultipartUploadRequest
	if err := xml.NewDecoder(doc).Decode(&in); err != nil {
		s.refuse(w, r, c.id, s3err.ErrMalformedXML, c.key, "completion document is not XML")
		return
	}
	if len(in.Parts) == 0 {
		s.refuse(w, r, c.id, s3err.ErrMalformedXML.With("a completion names at least one part"), c.key, "completion without parts")
		return
	}
	for i, p := range in.Parts {
		if p.PartNumber < 1 || p.PartNumber > maxPartNumber || (i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber) {
			s.refuse(w, r, c.id, s3err.ErrInvalidPartOrder, c.key, "parts not in strictly ascending order")
			return
		}
	}
	total, err := s.uploads.completedSize(c.op.bucket, c.op.key, gofakes3.UploadID(r.URL.Query().Get("uploadId")), in.Parts)
	switch {
	case err != nil:
		// No such upload, or parts that do not match: the store answers as S3 does.
	case total > s.limits.MaxObjectSize:
		s.refuse(w, r, c.id, s3err.ErrEntityTooLarge.With("the parts add up to %d bytes; this server takes objects of at most %d", total, s.limits.MaxObjectSize),
			c.key, "completed object too large")
		return
	}
	c.serve(w, r)
}

// s3Code is the Code of an S3 error document, or "".
func s3Code(body []byte) string {
	e, _ := s3Error(body)
	return e.Code
}

// s3Message is the Message of an S3 error document, or "".
func s3Message(body []byte) string {
	e, _ := s3Error(body)
	return e.Message
}

type errorDoc struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func s3Error(body []byte) (errorDoc, error) {
	var e errorDoc
	err := xml.Unmarshal(body, &e)
	return e, err
}
