package s3server

import (
	"net/http"
	"net/url"
	"strings"
)

// need is what an S3 request needs from a grant.
type need int

const (
	needDeny        need = iota // never allowed through S3
	needListBuckets             // GET /: answered from the key's own grants
	needAny                     // any grant on the bucket (HEAD bucket)
	needRead
	needWrite
)

// operation is an S3 request reduced to what authorisation decides on.
type operation struct {
	need   need
	bucket string
	// copySource is the bucket of x-amz-copy-source, which the key must be able to read: a
	// copy is a read of the source as much as a write of the destination.
	copySource string
	why        string // for the log when denied
}

// classify maps a path-style S3 request to the grant it needs. The rules:
//   - GET / lists the buckets the key is granted (and only those);
//   - GET/HEAD of an object, listing a bucket, its location or versioning state: read;
//   - PUT/DELETE of an object, POST ?delete, and every multipart call: write;
//   - HEAD of a bucket: any grant, because clients probe a bucket before writing to it;
//   - creating or deleting a bucket or changing its configuration through S3: never, since
//     buckets belong to the driver; browser POST uploads: never (they use policy documents,
//     not SigV4 headers).
func classify(r *http.Request) operation {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	if bucket == "" {
		if r.Method == http.MethodGet {
			return operation{need: needListBuckets}
		}
		return operation{need: needDeny, why: "only GET is served at /"}
	}
	has := func(k string) bool { return queryHas(r.URL.RawQuery, k) }
	op := operation{bucket: bucket}
	switch {
	case has("uploadId") || has("uploads"):
		op.need = needWrite
	case key == "":
		switch {
		case r.Method == http.MethodGet:
			op.need = needRead
		case r.Method == http.MethodHead:
			op.need = needAny
		case r.Method == http.MethodPost && has("delete"):
			op.need = needWrite
		default:
			op.need, op.why = needDeny, "buckets are created, configured and deleted by the driver only"
		}
	default:
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			op.need = needRead
		case http.MethodPut, http.MethodDelete:
			op.need = needWrite
		default:
			op.need, op.why = needDeny, "method not allowed on an object"
		}
	}
	if src := r.Header.Get("X-Amz-Copy-Source"); src != "" && op.need == needWrite {
		op.copySource = copySourceBucket(src)
		if op.copySource == "" {
			op.need, op.why = needDeny, "x-amz-copy-source names no bucket"
		}
	}
	return op
}

// copySourceBucket extracts the bucket from "/bucket/key" or "bucket/key", either of which
// may be URL-encoded as a whole.
func copySourceBucket(src string) string {
	if dec, err := url.PathUnescape(src); err == nil {
		src = dec
	}
	b, _, _ := strings.Cut(strings.TrimPrefix(src, "/"), "/")
	return b
}

// allows says whether a grant mode satisfies a need.
func (m Mode) allows(n need) bool {
	switch n {
	case needAny:
		return m.valid()
	case needRead:
		return m == ReadWrite || m == ReadOnly
	case needWrite:
		return m == ReadWrite || m == WriteOnly
	}
	return false
}
