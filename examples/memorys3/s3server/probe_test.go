package s3server

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/johannesboyne/gofakes3"
)

// storeProbe observes what the object store does behind the server: every request the server
// hands it, the lines its handlers log as they start (gofakes3 names the operation there),
// and the calls it makes on its backend.
type storeProbe struct {
	mu       sync.Mutex
	requests int
	events   []string
	calls    []string
}

func (p *storeProbe) event(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, line)
}

func (p *storeProbe) call(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, name)
}

func (p *storeProbe) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests, p.events, p.calls = 0, nil, nil
}

func (p *storeProbe) seen() (requests int, events, calls []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests, slices.Clone(p.events), slices.Clone(p.calls)
}

// handler counts the requests the server hands the store on a client's behalf (not its own
// in-process housekeeping calls, which use the storeRequest host).
func (p *storeProbe) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "memorys3.internal" {
			p.mu.Lock()
			p.requests++
			p.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// probedBackend records the backend calls of the store.
type probedBackend struct {
	gofakes3.Backend
	p *storeProbe
}

func (b probedBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	b.p.call("ListBuckets")
	return b.Backend.ListBuckets()
}

func (b probedBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	b.p.call("ListBucket")
	return b.Backend.ListBucket(name, prefix, page)
}

func (b probedBackend) CreateBucket(name string) error {
	b.p.call("CreateBucket")
	return b.Backend.CreateBucket(name)
}

func (b probedBackend) BucketExists(name string) (bool, error) {
	b.p.call("BucketExists")
	return b.Backend.BucketExists(name)
}

func (b probedBackend) DeleteBucket(name string) error {
	b.p.call("DeleteBucket")
	return b.Backend.DeleteBucket(name)
}

func (b probedBackend) ForceDeleteBucket(name string) error {
	b.p.call("ForceDeleteBucket")
	return b.Backend.ForceDeleteBucket(name)
}

func (b probedBackend) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	b.p.call("GetObject")
	return b.Backend.GetObject(bucket, key, rng)
}

func (b probedBackend) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	b.p.call("HeadObject")
	return b.Backend.HeadObject(bucket, key)
}

func (b probedBackend) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	b.p.call("DeleteObject")
	return b.Backend.DeleteObject(bucket, key)
}

func (b probedBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	b.p.call("PutObject")
	return b.Backend.PutObject(bucket, key, meta, input, size, cond)
}

func (b probedBackend) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	b.p.call("DeleteMulti")
	return b.Backend.DeleteMulti(bucket, keys...)
}

func (b probedBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	b.p.call("CopyObject")
	return b.Backend.CopyObject(srcBucket, srcKey, dstBucket, dstKey, meta)
}

// storeCalls are, per operation, the backend calls the store may make performing it. A call
// outside the set (a write while performing a read) is a disagreement as much as a wrong
// operation is.
var storeCalls = map[string][]string{
	"HeadBucket":              {"BucketExists"},
	"ListObjects":             {"BucketExists", "ListBucket"},
	"GetBucketLocation":       {"BucketExists"},
	"GetBucketVersioning":     {"BucketExists"},
	"ListMultipartUploads":    {"BucketExists"},
	"DeleteObjects":           {"BucketExists", "DeleteMulti"},
	"GetObject":               {"BucketExists", "GetObject"},
	"HeadObject":              {"BucketExists", "HeadObject"},
	"PutObject":               {"BucketExists", "PutObject"},
	"CopyObject":              {"BucketExists", "HeadObject", "CopyObject"},
	"DeleteObject":            {"BucketExists", "DeleteObject"},
	"CreateMultipartUpload":   {"BucketExists"},
	"UploadPart":              {"BucketExists"},
	"CompleteMultipartUpload": {"BucketExists", "PutObject"},
	"AbortMultipartUpload":    {"BucketExists"},
	"ListParts":               {"BucketExists"},
}

// storeOperation names the operation the store performed, from what it logged, the backend
// calls it made and its answer. gofakes3's handlers log their name as they start; the few
// that log nothing are told by the document they answer with.
func storeOperation(events []string, status int, body []byte) string {
	byEvent := []struct{ prefix, op string }{
		{"initiate multipart upload", "CreateMultipartUpload"},
		{"put multipart upload", "UploadPart"},
		{"complete multipart upload", "CompleteMultipartUpload"},
		{"abort multipart upload", "AbortMultipartUpload"},
		{"delete multi", "DeleteObjects"},
		{"COPY:", "CopyObject"},
		{"CREATE OBJECT THROUGH BROWSER UPLOAD", "PostObject"},
		{"CREATE BUCKET:", "CreateBucket"},
		{"DELETE BUCKET:", "DeleteBucket"},
		{"PUT VERSIONING:", "PutBucketVersioning"},
		{"DELETE VERSION:", "DeleteObjectVersion"},
		{"CREATE OBJECT:", "PutObject"},
		{"DELETE:", "DeleteObject"},
		{"GET OBJECT", "GetObject"},
		{"HEAD OBJECT", "HeadObject"},
		{"HEAD BUCKET", "HeadBucket"},
		{"GET BUCKET LOCATION", "GetBucketLocation"},
		{"LIST BUCKET", "ListObjects"},
	}
	for _, e := range byEvent {
		for _, line := range events {
			if strings.HasPrefix(line, e.prefix) {
				return e.op
			}
		}
	}
	var doc struct {
		XMLName xml.Name
		Code    string `xml:"Code"`
	}
	if xml.Unmarshal(body, &doc) == nil {
		switch doc.XMLName.Local {
		case "VersioningConfiguration":
			return "GetBucketVersioning"
		case "ListMultipartUploadsResult":
			return "ListMultipartUploads"
		case "ListPartsResult":
			return "ListParts"
		case "ListVersionsResult":
			return "ListObjectVersions"
		case "Error":
			if doc.Code == string(gofakes3.ErrNoSuchUpload) {
				return "ListParts" // the only multipart handler that fails without logging
			}
		}
	}
	if len(events) > 0 || status != 0 {
		return "unrecognised"
	}
	return ""
}

// The fixture of the differential tests: bucket "bkt" with object "k" and a multipart upload of
// "k" in progress, bucket "oth" with object "k", and keys with each mode on "bkt".
const (
	probeObject = "hello, object"
	probeSecret = "0123456789abcdef0123456789abcdef01234567"
)

type probeFixture struct {
	t        testing.TB
	srv      *Server
	probe    *storeProbe
	uploadID string
	keys     map[string]Credentials // by key state: rw, ro, wo, none, revoked
	charged  *operation
}

func newProbeFixture(t testing.TB, cfg Config) *probeFixture {
	t.Helper()
	p := &storeProbe{}
	cfg.storeEvents = p.event
	cfg.instrument = func(b gofakes3.Backend) gofakes3.Backend { return probedBackend{Backend: b, p: p} }
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	f := &probeFixture{t: t, srv: srv, probe: p, keys: map[string]Credentials{}}
	ctx := context.Background()
	for _, b := range []string{"bkt", "oth"} {
		if err := srv.CreateBucket(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.backend.PutObject(b, "k", map[string]string{"X-Amz-Meta-Color": "blue"},
			strings.NewReader(probeObject), int64(len(probeObject)), nil); err != nil {
			t.Fatal(err)
		}
	}
	for name, modes := range map[string]map[string]Mode{
		"rw": {"bkt": ReadWrite, "oth": ReadWrite}, "ro": {"bkt": ReadOnly, "oth": ReadOnly}, "wo": {"bkt": WriteOnly, "oth": WriteOnly},
		"none": {"oth": ReadWrite}, "revoked": {"bkt": ReadWrite, "oth": ReadWrite},
	} {
		acc, err := srv.GrantAccess(ctx, name, modes)
		if err != nil {
			t.Fatal(err)
		}
		f.keys[name] = acc.Credentials
	}
	if err := srv.RevokeAccess(ctx, AccountID("revoked")); err != nil {
		t.Fatal(err)
	}
	f.uploadID = f.startUpload("bkt", "k")
	srv.store = p.handler(srv.store)
	srv.charged = func(op *operation) { f.charged = op }
	p.reset()
	return f
}

// startUpload starts a multipart upload through the store, in process, with one part.
func (f *probeFixture) startUpload(bucket, key string) string {
	f.t.Helper()
	rec := &storeRecorder{header: http.Header{}}
	f.srv.store.ServeHTTP(rec, storeRequest(http.MethodPost, "/"+bucket+"/"+key, "uploads"))
	var out gofakes3.InitiateMultipartUploadResult
	if err := xml.Unmarshal(rec.body.Bytes(), &out); err != nil || out.UploadID == "" {
		f.t.Fatalf("start upload: %d %s", rec.code, rec.body.String())
	}
	part := storeRequest(http.MethodPut, "/"+bucket+"/"+key, "partNumber=1&uploadId="+url.QueryEscape(string(out.UploadID)))
	part.Body, part.ContentLength = io.NopCloser(strings.NewReader("part one")), 8
	part.Header.Set("Content-Length", "8")
	rec = &storeRecorder{header: http.Header{}}
	f.srv.store.ServeHTTP(rec, part)
	if rec.code != 0 && rec.code != http.StatusOK { // 0: the store wrote nothing, which is 200
		f.t.Fatalf("upload part: %d %s", rec.code, rec.body.String())
	}
	return string(out.UploadID)
}

// signed builds a server-side request signed by aws-sdk-go-v2's signer with the named key,
// as a client would send it, for ServeHTTP in process.
func (f *probeFixture) signed(t testing.TB, key, method, path, rawQuery string, hdr http.Header, body []byte) *http.Request {
	t.Helper()
	c := f.keys[key]
	if key == "unknown" {
		c = Credentials{AccessKeyID: "MS3KUNKNOWNUNKNOWN00", SecretAccessKey: probeSecret}
	}
	u := &url.URL{Scheme: "http", Host: "s3.test", Path: path, RawQuery: rawQuery}
	req, err := http.NewRequest(method, "http://s3.test/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL = u // keep the raw query exactly as given
	req.ContentLength = int64(len(body))
	for k, v := range hdr {
		req.Header[k] = v
	}
	payload := "UNSIGNED-PAYLOAD"
	req.Header.Set("X-Amz-Content-Sha256", payload)
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		req, payload, "s3", DefaultRegion, time.Now(), func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
	srvReq := httptest.NewRequest(method, "http://s3.test/", bytes.NewReader(body))
	srvReq.URL = &url.URL{Path: path, RawQuery: rawQuery}
	srvReq.RequestURI = srvReq.URL.RequestURI()
	srvReq.Host = "s3.test"
	srvReq.Header = req.Header
	srvReq.ContentLength = int64(len(body))
	if len(body) > 0 {
		srvReq.Header.Set("Content-Length", strconv.Itoa(len(body)))
	} else {
		srvReq.Body = http.NoBody
	}
	return srvReq
}

// serve runs one request through the server and reports the answer.
func (f *probeFixture) serve(r *http.Request) *httptest.ResponseRecorder {
	f.charged = nil
	f.probe.reset()
	rec := httptest.NewRecorder()
	f.srv.ServeHTTP(rec, r)
	return rec
}

// checkAgreement is the differential check: a request the server refused reached nothing in
// the store; a request it handed on was performed by the store as exactly the operation that
// was authorised, with no backend call that operation does not make.
func (f *probeFixture) checkAgreement(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	requests, events, calls := f.probe.seen()
	op := f.charged
	if requests == 0 {
		if len(events) > 0 || len(calls) > 0 {
			t.Fatalf("%s: the store acted without a request: events %q, calls %q", what, events, calls)
		}
		if op != nil && op.spec.name == "ListBuckets" {
			return // answered by the server from the key's grants
		}
		if rec.Code < 400 {
			t.Fatalf("%s: answered %d without the store, charged %v", what, rec.Code, opName(op))
		}
		return
	}
	if op == nil {
		t.Fatalf("%s: the store got a request nobody authorised (events %q)", what, events)
	}
	got := storeOperation(events, rec.Code, rec.Body.Bytes())
	if got != op.spec.name {
		t.Fatalf("%s: authorised as %s, the store performed %q (answer %d %s, events %q, calls %q)",
			what, op.spec.name, got, rec.Code, rec.Body.String(), events, calls)
	}
	allowed := storeCalls[op.spec.name]
	for _, c := range calls {
		if !slices.Contains(allowed, c) {
			t.Fatalf("%s: performing %s, the store called %s (calls %q)", what, op.spec.name, c, calls)
		}
	}
}

func opName(op *operation) string {
	if op == nil {
		return "nothing"
	}
	return op.spec.name
}
