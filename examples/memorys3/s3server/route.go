package s3server

import (
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// Authorisation and the object store must agree on what a request does. gofakes3 routes on
// its own rules (a multipart route only for a non-empty uploadId, versioning and versions
// before the shape of the path, any sub-resource it does not know as a plain object write),
// so deciding the operation by other rules let a request be charged as one thing and
// performed as another: a read charged as an upload, a bucket deleted as an abort. Here the
// server decides once, from an allow-list of the operations memorys3 offers, and hands the
// store a request rebuilt from that decision alone: the method and path as they came, and a
// query holding only the parameters the decided operation reads. The store therefore has
// nothing left to route on but what was authorised. Everything else is refused before the
// store sees it: 403 for what no key may do (buckets belong to the COSI driver), 501 for an
// operation, sub-resource or parameter memorys3 does not offer.

// resource is the kind of thing a path-style URL names.
type resource int

const (
	onService resource = iota // "/"
	onBucket                  // "/bucket" or "/bucket/"
	onObject                  // "/bucket/key"
)

// opSpec is one S3 operation memorys3 serves: the request shape that selects it and what a
// grant must allow.
type opSpec struct {
	name   string   // the S3 API's name for it
	method string   // HTTP method
	on     resource // what the path names
	sub    []string // the sub-resources that select it: all present, and no other
	copy   bool     // selected by an x-amz-copy-source header
	params []string // further query parameters the store reads for it
	need   need
	body   bodyKind // what its request body is
	// commits: it changes the store, which is authorised again as it commits (see commit).
	commits bool
	// newKey: it makes an object (or an upload of one) under the key it names, which must
	// be within MaxKeyLength.
	newKey bool
}

// bodyKind says how a request body reaches the store.
type bodyKind int

const (
	bodyNone       bodyKind = iota // none: whatever was sent is dropped
	bodyDocument                   // an XML document, read whole and verified first
	bodyCompletion                 // CompleteMultipartUpload's document, checked against the size limit
	bodyObject                     // object bytes, bounded, streamed into the store, which buffers them
	bodyPart                       // a part's bytes, read whole and bounded, then stored
)

// Parameters the store reads for listings and object reads.
var (
	listObjectsParams = []string{"prefix", "delimiter", "marker", "max-keys", "encoding-type", "list-type",
		"continuation-token", "start-after", "fetch-owner"}
	listUploadsParams = []string{"prefix", "delimiter", "key-marker", "upload-id-marker", "max-uploads", "encoding-type"}
	listPartsParams   = []string{"max-parts", "part-number-marker", "encoding-type"}
	// responseParams override the headers of a GET answer (gofakes3 applies them). The
	// checksum mode asks for checksum headers in the answer, which the store does not keep;
	// presigned URLs carry it in the query (aws-sdk-go-v2 hoists it), where it is ignored.
	responseParams = []string{"response-cache-control", "response-content-disposition", "response-content-encoding",
		"response-content-language", "response-content-type", "response-expires", "X-Amz-Checksum-Mode"}
)

// operations is the allow-list: every S3 operation memorys3 serves, and nothing else.
var operations = []opSpec{
	{name: "ListBuckets", method: http.MethodGet, on: onService, need: needListBuckets},
	{name: "HeadBucket", method: http.MethodHead, on: onBucket, need: needAny},
	{name: "ListObjects", method: http.MethodGet, on: onBucket, params: listObjectsParams, need: needRead},
	{name: "GetBucketLocation", method: http.MethodGet, on: onBucket, sub: []string{"location"}, need: needRead},
	{name: "GetBucketVersioning", method: http.MethodGet, on: onBucket, sub: []string{"versioning"}, need: needRead},
	{name: "ListMultipartUploads", method: http.MethodGet, on: onBucket, sub: []string{"uploads"}, params: listUploadsParams, need: needReadWrite},
	{name: "DeleteObjects", method: http.MethodPost, on: onBucket, sub: []string{"delete"}, need: needWrite, body: bodyDocument, commits: true},
	{name: "GetObject", method: http.MethodGet, on: onObject, params: responseParams, need: needRead},
	{name: "HeadObject", method: http.MethodHead, on: onObject, params: []string{"X-Amz-Checksum-Mode"}, need: needRead},
	{name: "PutObject", method: http.MethodPut, on: onObject, need: needWrite, body: bodyObject, commits: true, newKey: true},
	{name: "CopyObject", method: http.MethodPut, on: onObject, copy: true, need: needWrite, commits: true, newKey: true},
	{name: "DeleteObject", method: http.MethodDelete, on: onObject, need: needWrite, commits: true},
	{name: "CreateMultipartUpload", method: http.MethodPost, on: onObject, sub: []string{"uploads"}, need: needWrite, body: bodyDocument, commits: true, newKey: true},
	{name: "UploadPart", method: http.MethodPut, on: onObject, sub: []string{"partNumber", "uploadId"}, need: needWrite, body: bodyPart, commits: true},
	{name: "CompleteMultipartUpload", method: http.MethodPost, on: onObject, sub: []string{"uploadId"}, need: needWrite, body: bodyCompletion, commits: true},
	{name: "AbortMultipartUpload", method: http.MethodDelete, on: onObject, sub: []string{"uploadId"}, need: needWrite, commits: true},
	{name: "ListParts", method: http.MethodGet, on: onObject, sub: []string{"uploadId"}, params: listPartsParams, need: needReadWrite},
}

// reserved are S3 operations that exist and that no key may perform: buckets are created and
// deleted by the COSI driver, never through S3.
var reserved = []opSpec{
	{name: "CreateBucket", method: http.MethodPut, on: onBucket},
	{name: "DeleteBucket", method: http.MethodDelete, on: onBucket},
}

// subResources are the query parameters with which the S3 API selects an operation (its
// sub-resources), whether memorys3 offers the operation or not. A request carrying one that
// its operation does not read is refused rather than served as something else: that is how a
// tagging or ACL document once replaced an object.
var subResources = setOf(
	"accelerate", "acl", "analytics", "attributes", "cors", "delete", "encryption", "intelligent-tiering",
	"inventory", "legal-hold", "lifecycle", "location", "logging", "metadataConfiguration",
	"metadataTable", "metrics", "notification", "object-lock", "ownershipControls", "partNumber",
	"policy", "policyStatus", "publicAccessBlock", "renameObject", "replication", "requestPayment",
	"restore", "retention", "select", "select-type", "session", "tagging", "torrent", "uploadId",
	"uploads", "versionId", "versioning", "versions", "website",
)

// anywhere are parameters any request may carry; the store reads none of them. x-id is the
// operation name aws-sdk-go-v2 adds to every URL; the X-Amz-* ones carry a presigned URL's
// signature, checked before routing.
var anywhere = setOf("x-id", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
	"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Content-Sha256")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// operation is a request reduced to what authorisation decides on and the store performs.
type operation struct {
	spec   *opSpec
	bucket string
	key    string
	// query is the raw query the store gets: the parameters spec reads, and nothing else.
	query string
	// copySource is the bucket and key named by x-amz-copy-source (CopyObject only); the key
	// must be able to read the source, and the store gets the same source in canonical form.
	copyBucket, copyKey string
}

// route decides which operation r is, from the allow-list. The error is the S3 error to
// answer with: 403 for an operation reserved to the driver, 501 for one memorys3 does not
// offer, 400 for a malformed one.
func route(r *http.Request) (*operation, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		// url.URL.Query, which the store uses, drops what ParseQuery cannot read; refusing
		// keeps the two views from differing.
		return nil, s3err.ErrInvalidArgument.With("malformed query string")
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	on := onObject
	switch {
	case bucket == "" && key != "":
		return nil, s3err.ErrInvalidArgument.With("the path names an object without a bucket")
	case bucket == "":
		on = onService
	case key == "":
		on = onBucket
	}
	var sub []string
	for k, vs := range q {
		if len(vs) > 1 {
			return nil, s3err.ErrInvalidArgument.With("query parameter %q is given %d times", truncate(k), len(vs))
		}
		if subResources[k] {
			sub = append(sub, k)
		}
	}
	slices.Sort(sub)
	copySrc := r.Header.Get("X-Amz-Copy-Source")
	spec := findSpec(operations, r.Method, on, sub, copySrc != "")
	if spec == nil {
		if res := findSpec(reserved, r.Method, on, sub, copySrc != ""); res != nil {
			return nil, s3err.ErrAccessDenied.With("%s is not allowed through S3: buckets are created and deleted by the COSI driver", res.name)
		}
		return nil, notOffered(r.Method, on, sub, copySrc != "")
	}
	if len(key) > gofakes3.KeySizeLimit {
		return nil, s3err.ErrKeyTooLong.With("object keys are at most %d bytes; this one is %d", gofakes3.KeySizeLimit, len(key))
	}
	op := &operation{spec: spec, bucket: bucket, key: key}
	keep := url.Values{}
	for k, vs := range q {
		switch {
		case slices.Contains(spec.sub, k) || slices.Contains(spec.params, k):
			keep[k] = vs
		case anywhere[k]:
		default:
			return nil, s3err.ErrNotImplemented.With("%s does not take the query parameter %q here", spec.name, truncate(k))
		}
	}
	if err := checkValues(spec, q); err != nil {
		return nil, err
	}
	op.query = keep.Encode()
	if spec.copy {
		if op.copyBucket, op.copyKey, err = parseCopySource(copySrc); err != nil {
			return nil, err
		}
		if len(op.copyKey) > gofakes3.KeySizeLimit {
			return nil, s3err.ErrKeyTooLong.With("the copy source's key is %d bytes; keys are at most %d", len(op.copyKey), gofakes3.KeySizeLimit)
		}
	}
	return op, nil
}

// findSpec is the spec in specs that r's shape selects, or nil.
func findSpec(specs []opSpec, method string, on resource, sub []string, hasCopy bool) *opSpec {
	for i := range specs {
		s := &specs[i]
		// The copy header selects only among PUTs of an object; elsewhere it is ignored, as
		// S3 ignores it, and removed before the store sees the request.
		if s.method == method && s.on == on && sameSet(s.sub, sub) && (s.copy == hasCopy || method != http.MethodPut || on != onObject) {
			return s
		}
	}
	return nil
}

func sameSet(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// notOffered is the 501 for a request shape outside the allow-list, naming what was asked.
func notOffered(method string, on resource, sub []string, hasCopy bool) error {
	what := map[resource]string{onService: "the service", onBucket: "a bucket", onObject: "an object"}[on]
	shape := method + " on " + what
	if len(sub) > 0 {
		shape += " with ?" + strings.Join(sub, "&?")
	}
	if hasCopy {
		shape += " with x-amz-copy-source"
	}
	return s3err.ErrNotImplemented.With("memorys3 does not offer this S3 operation (%s)", truncate(shape))
}

// counts are the numeric parameters the store reads, with the values S3 allows: an empty
// value means the default. gofakes3 clamps what it parses, but its part listing sliced the
// parts at part-number-marker unchecked, and a negative max-keys lists without a bound.
var counts = map[string]struct{ lo, hi int }{
	"max-keys":           {0, math.MaxInt32},
	"max-uploads":        {0, math.MaxInt32},
	"max-parts":          {0, math.MaxInt32},
	"part-number-marker": {0, gofakes3.MaxUploadPartNumber},
}

// checkValues checks the parameters whose value the store relies on: an upload ID must be
// given, a part number must be one S3 allows, and counts and markers must be numbers in range.
func checkValues(spec *opSpec, q url.Values) error {
	for name, r := range counts {
		v := q.Get(name)
		if v == "" || !slices.Contains(spec.params, name) {
			continue
		}
		if n, err := strconv.Atoi(v); err != nil || n < r.lo || n > r.hi {
			return s3err.ErrInvalidArgument.With("%s must be an integer from %d to %d", name, r.lo, r.hi)
		}
	}
	if slices.Contains(spec.sub, "uploadId") && q.Get("uploadId") == "" {
		return s3err.ErrInvalidArgument.With("uploadId must not be empty")
	}
	if slices.Contains(spec.sub, "partNumber") {
		n, err := strconv.Atoi(q.Get("partNumber"))
		if err != nil || n < 1 || n > gofakes3.MaxUploadPartNumber {
			return s3err.ErrInvalidArgument.With("partNumber must be an integer from 1 to %d", gofakes3.MaxUploadPartNumber)
		}
	}
	return nil
}

// parseCopySource reads x-amz-copy-source ("/bucket/key" or "bucket/key", URL-encoded, with
// an optional "?versionId=") the way S3 documents it.
func parseCopySource(src string) (bucket, key string, err error) {
	path, query, hasQuery := strings.Cut(src, "?")
	if hasQuery {
		q, qErr := url.ParseQuery(query)
		if qErr != nil || len(q) != 1 || !q.Has("versionId") {
			return "", "", s3err.ErrInvalidArgument.With("x-amz-copy-source may carry only ?versionId")
		}
		return "", "", s3err.ErrNotImplemented.With("memorys3 keeps no object versions to copy from")
	}
	dec, decErr := url.PathUnescape(path)
	if decErr != nil {
		return "", "", s3err.ErrInvalidArgument.With("x-amz-copy-source is not URL-encoded correctly")
	}
	bucket, key, _ = strings.Cut(strings.TrimPrefix(dec, "/"), "/")
	if bucket == "" || key == "" {
		return "", "", s3err.ErrInvalidArgument.With("x-amz-copy-source must name a bucket and a key")
	}
	return bucket, key, nil
}

// canonicalCopySource is the x-amz-copy-source the store gets for a parsed source: gofakes3
// splits it at the first '/' and query-unescapes the key, which gives back exactly key.
func canonicalCopySource(bucket, key string) string {
	return bucket + "/" + url.QueryEscape(key)
}

// safeRange is the Range header the store gets for h. gofakes3 computes the end of a range as
// start plus length, which overflows for an end of 2^63-1 ("bytes=1-9223372036854775807"),
// so the range escapes its clamp to the object's size and the backend slices out of bounds.
// An end no object reaches means "to the end" (RFC 9110: a last position past the
// representation's end is the end), and is given to the store so; every other header goes
// as it came, for the store to read or refuse as before.
func safeRange(h string) string {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return h
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return h
	}
	first, last = strings.TrimSpace(first), strings.TrimSpace(last)
	if first == "" || last == "" {
		return h
	}
	if end, err := strconv.ParseInt(last, 10, 64); err != nil || end < math.MaxInt64/2 {
		return h
	}
	return "bytes=" + first + "-"
}

// truncate bounds client-chosen text repeated in an error message.
func truncate(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}
