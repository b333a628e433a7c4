package s3server

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
)

// offered is one request per operation memorys3 offers, in the form clients send it; the
// matrix and agreement tests drive every operation through these.
type offered struct {
	op     string
	row    string // the matrix row, when it is not op's own
	method string
	path   string
	query  string
	hdr    http.Header
	body   []byte
}

// rowName is o's row in the matrix.
func (o offered) rowName() string {
	if o.row != "" {
		return o.row
	}
	return o.op
}

func offeredRequests(uploadID string) []offered {
	etag := md5.Sum([]byte("part one"))
	complete := fmt.Sprintf(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"%s"</ETag></Part></CompleteMultipartUpload>`, hex.EncodeToString(etag[:]))
	up := "uploadId=" + url.QueryEscape(uploadID)
	return []offered{
		{op: "ListBuckets", method: "GET", path: "/"},
		{op: "HeadBucket", method: "HEAD", path: "/bkt"},
		{op: "ListObjects", method: "GET", path: "/bkt", query: "list-type=2&prefix=k&encoding-type=url"},
		{op: "GetBucketLocation", method: "GET", path: "/bkt", query: "location"},
		{op: "GetBucketVersioning", method: "GET", path: "/bkt", query: "versioning"},
		{op: "ListMultipartUploads", method: "GET", path: "/bkt", query: "uploads"},
		{op: "DeleteObjects", method: "POST", path: "/bkt", query: "delete", body: []byte(`<Delete><Object><Key>k</Key></Object></Delete>`)},
		{op: "GetObject", method: "GET", path: "/bkt/k", query: "x-id=GetObject"},
		{op: "HeadObject", method: "HEAD", path: "/bkt/k"},
		{op: "PutObject", method: "PUT", path: "/bkt/k", query: "x-id=PutObject", body: []byte("overwritten")},
		{op: "CopyObject", method: "PUT", path: "/bkt/k", hdr: http.Header{"X-Amz-Copy-Source": {"/oth/k"}}},
		{op: "DeleteObject", method: "DELETE", path: "/bkt/k"},
		{op: "CreateMultipartUpload", method: "POST", path: "/bkt/k", query: "uploads"},
		{op: "UploadPart", method: "PUT", path: "/bkt/k", query: "partNumber=2&" + up, body: []byte("part two")},
		{op: "CompleteMultipartUpload", method: "POST", path: "/bkt/k", query: up, body: []byte(complete)},
		{op: "AbortMultipartUpload", method: "DELETE", path: "/bkt/k", query: up},
		{op: "ListParts", method: "GET", path: "/bkt/k", query: up},
	}
}

// TestOfferedOperationsReachTheStoreAsThemselves: each operation of the allow-list, sent as a
// client sends it, is decided as itself and performed by the store as itself.
func TestOfferedOperationsReachTheStoreAsThemselves(t *testing.T) {
	reqs := offeredRequests("")
	if len(reqs) != len(operations) {
		t.Fatalf("%d offered requests for %d operations: every operation needs one", len(reqs), len(operations))
	}
	for _, o := range reqs {
		t.Run(o.op, func(t *testing.T) {
			f := newProbeFixture(t, Config{})
			o := offeredRequests(f.uploadID)[slices.IndexFunc(reqs, func(x offered) bool { return x.op == o.op })]
			rec := f.serve(f.signed(t, "rw", o.method, o.path, o.query, o.hdr, o.body))
			if f.charged == nil || f.charged.spec.name != o.op {
				t.Fatalf("decided %s, want %s (answer %d %s)", opName(f.charged), o.op, rec.Code, rec.Body.String())
			}
			if rec.Code >= 300 {
				t.Fatalf("answer %d %s", rec.Code, rec.Body.String())
			}
			f.checkAgreement(t, o.op, rec)
			if requests, _, _ := f.probe.seen(); o.op != "ListBuckets" && requests != 1 {
				t.Fatalf("the store got %d requests, want 1", requests)
			}
		})
	}
}

// routeNames are the query parameter names the generated requests combine: every S3
// sub-resource, the parameters the offered operations read, and ones nobody reads.
func routeNames() []string {
	names := []string{"prefix", "max-keys", "list-type", "encoding-type", "max-parts", "max-uploads",
		"response-content-type", "X-Amz-Checksum-Mode", "x-id", "foo", "Uploadid"}
	for n := range subResources {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// pairNames are the names whose pairs are generated: those the store routes on, and two
// sub-resources it does not know.
var pairNames = []string{"uploadId", "uploads", "partNumber", "versioning", "versions", "versionId",
	"location", "delete", "tagging", "acl", "x-id", "prefix"}

// paramForms are the ways a name appears in a generated query: bare, empty, and with a value
// that the store accepts where one is needed.
func paramForms(name, uploadID string) []string {
	val := "x"
	switch name {
	case "uploadId":
		val = url.QueryEscape(uploadID)
	case "partNumber", "max-keys", "max-parts", "list-type":
		val = "2"
	}
	return []string{name, name + "=", name + "=" + val}
}

// generatedQueries: no query, every name in every form, and pairs of the routing names in
// their empty and valued forms.
func generatedQueries(uploadID string) []string {
	qs := []string{""}
	for _, n := range routeNames() {
		qs = append(qs, paramForms(n, uploadID)...)
	}
	for i, a := range pairNames {
		for _, b := range pairNames[i+1:] {
			for _, fa := range paramForms(a, uploadID)[1:] {
				for _, fb := range paramForms(b, uploadID)[1:] {
					qs = append(qs, fa+"&"+fb)
				}
			}
		}
	}
	return qs
}

var (
	routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete}
	routePaths   = []string{"/", "/bkt", "/bkt/", "/bkt/k", "/bkt/k/deeper"}
)

// routeBody is what a generated request carries: an XML document the store could act on for
// POST, bytes for PUT.
func routeBody(method string) []byte {
	switch method {
	case http.MethodPost:
		return []byte(`<Delete><Object><Key>k</Key></Object></Delete>`)
	case http.MethodPut:
		return []byte("generated")
	}
	return nil
}

// TestRouteAgreesWithStore generates requests (methods x paths x every sub-resource in every
// form, pairs of the routing ones, with and without a copy source) and holds, for each, the
// operation the server decided and authorised against what the store performed: the same,
// or nothing at all for a refused request.
func TestRouteAgreesWithStore(t *testing.T) {
	f := newProbeFixture(t, Config{})
	n := 0
	for _, q := range generatedQueries(f.uploadID) {
		for _, m := range routeMethods {
			for _, p := range routePaths {
				for _, cp := range []string{"", "/oth/k"} {
					if cp != "" && m != http.MethodPut {
						continue
					}
					var hdr http.Header
					if cp != "" {
						hdr = http.Header{"X-Amz-Copy-Source": {cp}}
					}
					what := fmt.Sprintf("%s %s?%s copy=%q", m, p, q, cp)
					rec := f.serve(f.signed(t, "rw", m, p, q, hdr, routeBody(m)))
					f.checkAgreement(t, what, rec)
					n++
				}
			}
		}
	}
	t.Logf("%d generated requests agreed", n)
}

// FuzzRoute is TestRouteAgreesWithStore's check on any query and copy source. The seeds are
// the requests the review used to make the two disagree.
func FuzzRoute(f *testing.F) {
	for _, s := range []struct {
		method, path uint8
		query, copy  string
	}{
		{0, 3, "uploadId=", ""}, {0, 1, "uploadId=", ""}, {1, 3, "uploadId", ""}, {4, 1, "uploadId=", ""},
		{2, 1, "uploadId=", ""}, {2, 3, "versioning", ""}, {2, 3, "acl", ""}, {2, 3, "tagging", ""},
		{4, 3, "tagging", ""}, {0, 3, "versionId=null", ""}, {0, 3, "partNumber=1", ""},
		{2, 3, "partNumber=1&uploadId=x", "/oth/k"}, {3, 1, "delete&versioning", ""}, {0, 3, "uploadId=a&uploadId=b", ""},
		{0, 3, "%75ploadId=x", ""}, {0, 3, ";uploadId=x", ""}, {2, 3, "", "/oth/k?versionId=1"},
		{2, 3, "", "oth%2Fk"}, {2, 3, "", "/bkt/../oth/k"}, {0, 0, "uploads", ""}, {3, 3, "uploads&uploadId=x", ""},
	} {
		f.Add(s.method, s.path, s.query, s.copy)
	}
	fx := newProbeFixture(f, Config{})
	f.Fuzz(func(t *testing.T, method, path uint8, query, copySrc string) {
		m := routeMethods[int(method)%len(routeMethods)]
		p := routePaths[int(path)%len(routePaths)]
		var hdr http.Header
		if copySrc != "" {
			if strings.ContainsAny(copySrc, "\r\n\x00") {
				return // not a header value an HTTP server would pass on
			}
			hdr = http.Header{"X-Amz-Copy-Source": {copySrc}}
		}
		rec := fx.serve(fx.signed(t, "rw", m, p, query, hdr, routeBody(m)))
		fx.checkAgreement(t, fmt.Sprintf("%s %s?%s copy=%q", m, p, query, copySrc), rec)
	})
}

// storeState is everything a request could change: the buckets, every object's bytes and
// metadata, and the multipart uploads in progress with their parts.
func (f *probeFixture) storeState(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	buckets, err := f.srv.backend.ListBuckets()
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(buckets, func(a, b gofakes3.BucketInfo) int { return strings.Compare(a.Name, b.Name) })
	for _, bk := range buckets {
		fmt.Fprintf(&b, "bucket %s\n", bk.Name)
		list, err := f.srv.backend.ListBucket(bk.Name, nil, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list.Contents {
			obj, err := f.srv.backend.GetObject(bk.Name, c.Key, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(obj.Contents)
			obj.Contents.Close()
			keys := make([]string, 0, len(obj.Metadata))
			for k := range obj.Metadata {
				keys = append(keys, k+"="+obj.Metadata[k])
			}
			slices.Sort(keys)
			fmt.Fprintf(&b, "  object %s %q %v\n", c.Key, data, keys)
		}
		uploads, err := f.srv.listUploads(bk.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range uploads {
			sizes, err := f.srv.partSizes(bk.Name, u.Key, string(u.UploadID))
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "  upload %s %s %v\n", u.Key, u.UploadID, sizes)
		}
	}
	return b.String()
}

// TestReviewAttacksAreRefused replays the adversarial review's requests, each with a key
// that holds a grant: every one is refused with the status that says why, and changes
// nothing.
func TestReviewAttacksAreRefused(t *testing.T) {
	cases := []struct {
		rule          string
		key           string
		method, path  string
		query         string
		hdr           http.Header
		body          []byte
		status        int
		code          string
		aws           string // the aws CLI command that sends it, for the record
		mustNotAnswer string
	}{
		{rule: "a write-only key cannot read an object as an empty-upload part listing", key: "wo", method: "GET", path: "/bkt/k", query: "uploadId=",
			status: 400, code: "InvalidArgument", aws: "s3api list-parts --upload-id ''", mustNotAnswer: probeObject},
		{rule: "a write-only key cannot list a bucket as an empty-upload listing", key: "wo", method: "GET", path: "/bkt", query: "uploadId=",
			status: 501, code: "NotImplemented", mustNotAnswer: "<Key>k</Key>"},
		{rule: "a write-only key cannot HEAD an object with a bare uploadId", key: "wo", method: "HEAD", path: "/bkt/k", query: "uploadId",
			status: 501},
		{rule: "a write key cannot delete a bucket as an empty-upload abort", key: "wo", method: "DELETE", path: "/bkt", query: "uploadId=",
			status: 501, code: "NotImplemented"},
		{rule: "a write key cannot create a bucket as an empty-upload part", key: "rw", method: "PUT", path: "/newbucket", query: "uploadId=",
			status: 501, code: "NotImplemented"},
		{rule: "a write key cannot create a bucket", key: "rw", method: "PUT", path: "/newbucket",
			status: 403, code: "AccessDenied"},
		{rule: "a write key cannot re-create its bucket with an uploadId", key: "rw", method: "PUT", path: "/bkt", query: "uploadId=",
			status: 501, code: "NotImplemented"},
		{rule: "versioning cannot be configured through an object path", key: "rw", method: "PUT", path: "/bkt/anykey", query: "versioning",
			body: []byte(`<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`), status: 501, code: "NotImplemented"},
		{rule: "an ACL document does not replace the object", key: "rw", method: "PUT", path: "/bkt/k", query: "acl",
			body: []byte(`<AccessControlPolicy/>`), status: 501, code: "NotImplemented", aws: "s3api put-object-acl"},
		{rule: "a tagging document does not replace the object", key: "rw", method: "PUT", path: "/bkt/k", query: "tagging",
			body: []byte(`<Tagging><TagSet/></Tagging>`), status: 501, code: "NotImplemented", aws: "s3api put-object-tagging"},
		{rule: "deleting tags does not delete the object", key: "rw", method: "DELETE", path: "/bkt/k", query: "tagging",
			status: 501, code: "NotImplemented", aws: "s3api delete-object-tagging"},
		{rule: "a version ID is not an object read the store routes elsewhere", key: "rw", method: "GET", path: "/bkt/k", query: "versionId=abc",
			status: 501, code: "NotImplemented"},
		{rule: "an object version cannot be deleted", key: "rw", method: "DELETE", path: "/bkt/k", query: "versionId=abc",
			status: 501, code: "NotImplemented"},
		{rule: "a bucket cannot be deleted", key: "rw", method: "DELETE", path: "/bkt",
			status: 403, code: "AccessDenied"},
		{rule: "a bucket cannot be deleted with minio's force header either", key: "rw", method: "DELETE", path: "/bkt",
			hdr: http.Header{"X-Minio-Force-Delete": {"true"}}, status: 403, code: "AccessDenied"},
		{rule: "a browser upload form is not offered", key: "rw", method: "POST", path: "/bkt",
			body: []byte("--x--"), status: 501, code: "NotImplemented"},
		{rule: "a part cannot be copied from another object", key: "rw", method: "PUT", path: "/bkt/k", query: "partNumber=1&uploadId=x",
			hdr: http.Header{"X-Amz-Copy-Source": {"/oth/k"}}, status: 501, code: "NotImplemented"},
		{rule: "a repeated uploadId is refused rather than read in one of two ways", key: "wo", method: "GET", path: "/bkt/k", query: "uploadId=a&uploadId=",
			status: 400, code: "InvalidArgument", mustNotAnswer: probeObject},
		{rule: "an unknown parameter is not passed on as something else", key: "rw", method: "PUT", path: "/bkt/k", query: "newsubresource",
			body: []byte("<Config/>"), status: 501, code: "NotImplemented"},
		{rule: "a copy of a versioned source is not offered", key: "rw", method: "PUT", path: "/bkt/copy",
			hdr: http.Header{"X-Amz-Copy-Source": {"/oth/k?versionId=1"}}, status: 501, code: "NotImplemented"},
		{rule: "a read-only key cannot copy into its bucket", key: "ro", method: "PUT", path: "/bkt/copy",
			hdr: http.Header{"X-Amz-Copy-Source": {"/bkt/k"}}, status: 403, code: "AccessDenied"},
		{rule: "a part listing cannot start past the highest part number", key: "wo", method: "GET", path: "/bkt/k", query: "uploadId=x&part-number-marker=10001",
			status: 400, code: "InvalidArgument"},
		{rule: "a part listing takes no negative count", key: "wo", method: "GET", path: "/bkt/k", query: "uploadId=x&max-parts=-1",
			status: 400, code: "InvalidArgument"},
		{rule: "an object listing takes no negative count (gofakes3 would list without a bound)", key: "ro", method: "GET", path: "/bkt", query: "max-keys=-1",
			status: 400, code: "InvalidArgument"},
		{rule: "an object key is at most 1024 bytes", key: "rw", method: "PUT", path: "/bkt/" + strings.Repeat("k", 1025),
			body: []byte("x"), status: 400, code: "KeyTooLongError"},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			f := newProbeFixture(t, Config{})
			before := f.storeState(t)
			rec := f.serve(f.signed(t, tc.key, tc.method, tc.path, tc.query, tc.hdr, tc.body))
			if rec.Code != tc.status || (tc.code != "" && !strings.Contains(rec.Body.String(), "<Code>"+tc.code+"</Code>")) {
				t.Fatalf("got %d %s, want %d %s", rec.Code, rec.Body.String(), tc.status, tc.code)
			}
			if tc.mustNotAnswer != "" && strings.Contains(rec.Body.String(), tc.mustNotAnswer) {
				t.Fatalf("the answer gives away %q", tc.mustNotAnswer)
			}
			if requests, events, calls := f.probe.seen(); requests != 0 || len(events) != 0 || len(calls) != 0 {
				t.Fatalf("the store saw the request: %d requests, events %q, calls %q", requests, events, calls)
			}
			if after := f.storeState(t); after != before {
				t.Fatalf("a refused request changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// keyStates are the keys of the matrix: a grant in each mode on "bkt", a key with no grant on
// "bkt" (it holds one on "oth"), and a revoked key.
var keyStates = []string{"rw", "ro", "wo", "none", "revoked"}

// conditionalRequests are the offered requests on a bucket or an object, each carrying one of
// the conditions on stored objects (the headers taking turns).
func conditionalRequests(uploadID string) []offered {
	var out []offered
	for i, o := range offeredRequests(uploadID) {
		if o.op == "ListBuckets" {
			continue // answered from the key's grants, with no object to be conditional on
		}
		h := conditionHeaders[i%len(conditionHeaders)]
		v := `"` + strings.Repeat("0", 32) + `"`
		if strings.HasSuffix(h, "-Since") {
			v = "Mon, 02 Jan 2006 15:04:05 GMT"
		}
		o.hdr = o.hdr.Clone()
		if o.hdr == nil {
			o.hdr = http.Header{}
		}
		o.hdr.Set(h, v)
		o.row = o.op + " with " + h
		out = append(out, o)
	}
	return out
}

// matrix is the authorisation table (README "What a key may do"): which operations each key
// may perform on bucket "bkt".
var matrix = map[string][]string{
	"rw":   {"ListBuckets", "HeadBucket", "ListObjects", "GetBucketLocation", "GetBucketVersioning", "ListMultipartUploads", "DeleteObjects", "GetObject", "HeadObject", "PutObject", "CopyObject", "DeleteObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload", "ListParts"},
	"ro":   {"ListBuckets", "HeadBucket", "ListObjects", "GetBucketLocation", "GetBucketVersioning", "GetObject", "HeadObject"},
	"wo":   {"ListBuckets", "HeadBucket", "DeleteObjects", "PutObject", "DeleteObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload"},
	"none": {"ListBuckets"},
}

// conditionalMatrix is the matrix's row for requests carrying a condition on stored objects:
// a key that may read the bucket may make any request it may make without one conditional; a
// key that may not read it (write-only) may make none, since the answer would read for it.
var conditionalMatrix = map[string][]string{"rw": matrix["rw"], "ro": matrix["ro"]}

// allowedIn says whether the matrix lets key make o.
func allowedIn(key string, o offered) bool {
	if o.row != "" {
		return slices.Contains(conditionalMatrix[key], o.op)
	}
	return slices.Contains(matrix[key], o.op)
}

// TestAuthorisationMatrix drives every offered operation with every key state, plain and with
// a condition on stored objects. Allowed ones reach the store as themselves; denied ones
// answer 403 and leave buckets, objects, metadata and uploads exactly as they were. A copy
// needs read on its source ("oth", where each key holds the same mode as on "bkt"; the key
// without a grant on "bkt" reads "oth").
func TestAuthorisationMatrix(t *testing.T) {
	requests := func(uploadID string) []offered {
		return append(offeredRequests(uploadID), conditionalRequests(uploadID)...)
	}
	for _, key := range keyStates {
		for i, o := range requests("") {
			t.Run(key+"/"+o.rowName(), func(t *testing.T) {
				f := newProbeFixture(t, Config{})
				o := requests(f.uploadID)[i]
				before := f.storeState(t)
				rec := f.serve(f.signed(t, key, o.method, o.path, o.query, o.hdr, o.body))
				allowed := allowedIn(key, o)
				if !allowed {
					if rec.Code != http.StatusForbidden {
						t.Fatalf("denied operation answered %d %s, want 403", rec.Code, rec.Body.String())
					}
					if after := f.storeState(t); after != before {
						t.Fatalf("a denied request changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
					}
					if requests, _, _ := f.probe.seen(); requests != 0 {
						t.Fatalf("a denied request reached the store")
					}
					return
				}
				if rec.Code == http.StatusForbidden {
					t.Fatalf("allowed operation answered 403 %s", rec.Body.String())
				}
				f.checkAgreement(t, o.op, rec)
				if o.op == "ListBuckets" && key == "none" && (strings.Contains(rec.Body.String(), "<Name>bkt</Name>") || !strings.Contains(rec.Body.String(), "<Name>oth</Name>")) {
					t.Fatalf("ListBuckets shows buckets other than the key's: %s", rec.Body.String())
				}
			})
		}
	}
}

// TestMatrixIsComplete keeps the matrix and the allow-list in step: every operation offered
// has a request here, and the matrix names only offered operations.
func TestMatrixIsComplete(t *testing.T) {
	var names []string
	for _, s := range operations {
		names = append(names, s.name)
	}
	for _, o := range offeredRequests("") {
		if !slices.Contains(names, o.op) {
			t.Errorf("offered request %s is not an operation", o.op)
		}
	}
	for key, ops := range matrix {
		for _, op := range ops {
			if !slices.Contains(names, op) {
				t.Errorf("matrix row %s names %s, which is not offered", key, op)
			}
		}
	}
}
