package s3server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// uploadRawPart stores one part with an UNSIGNED-PAYLOAD signature (cheap to send many).
func uploadRawPart(t *testing.T, f *fixture, c Credentials, bucket, key, uploadID string, n int, body []byte) string {
	t.Helper()
	q := url.Values{"partNumber": {fmt.Sprint(n)}, "uploadId": {uploadID}}
	resp := do(t, signedRequest(t, f, c, http.MethodPut, "/"+bucket+"/"+key+"?"+q.Encode(), body, "UNSIGNED-PAYLOAD", time.Now(), nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("UploadPart %d: %d %s", n, resp.StatusCode, resp.body)
	}
	return resp.header.Get("ETag")
}

// TestAttackCompletionSizeCheckMiscountsPastAThousandParts: completeUpload sums the part
// sizes that partSizes lists through the store, page by page (max-parts=1000). gofakes3's
// ListParts numbers the parts of every page after the first relative to the marker
// (`for partNumber, part := range mpu.parts[marker:]`), so parts beyond the first page are
// filed under the wrong numbers and a completion naming them is charged 0 bytes for them: an
// upload with more than 1000 parts completes into an object larger than MaxObjectSize.
//
// Here the limit is 4 KiB; parts 1..1000 are one byte each and parts 1001 and 1002 are 4000
// bytes each (each within the limit on its own). Completing with parts 1000, 1001, 1002 is
// charged 1 byte and stores an 8001-byte object.
func TestAttackCompletionSizeCheckMiscountsPastAThousandParts(t *testing.T) {
	const limit = 4 << 10
	f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: limit}})
	c := f.bucketWithAccount("bkt", "w", WriteOnly)
	id := f.startUpload(c, "bkt", "obj")
	etags := map[int]string{}
	for n := 1; n <= 1000; n++ {
		etags[n] = uploadRawPart(t, f, c, "bkt", "obj", id, n, []byte{'x'})
	}
	big := bytes.Repeat([]byte("B"), 4000)
	for n := 1001; n <= 1002; n++ {
		etags[n] = uploadRawPart(t, f, c, "bkt", "obj", id, n, big)
	}
	var doc strings.Builder
	doc.WriteString("<CompleteMultipartUpload>")
	for _, n := range []int{1000, 1001, 1002} {
		fmt.Fprintf(&doc, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", n, etags[n])
	}
	doc.WriteString("</CompleteMultipartUpload>")
	resp := do(t, signedRequest(t, f, c, http.MethodPost, "/bkt/obj?uploadId="+url.QueryEscape(id), []byte(doc.String()), "", time.Now(), nil))
	if resp.StatusCode == http.StatusOK {
		reader, err := f.srv.GrantAccess(context.Background(), "reader", map[string]Mode{"bkt": ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		head, err := f.awsClient(reader.Credentials).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
		size := int64(-1)
		if err == nil {
			size = aws.ToInt64(head.ContentLength)
		}
		t.Fatalf("a completion of 1 + 4000 + 4000 bytes with MaxObjectSize %d was accepted (object size %d, HEAD err %v); want EntityTooLarge", limit, size, err)
	}
	if code := s3Code([]byte(resp.body)); code != "EntityTooLarge" {
		t.Fatalf("got %d %s, want 400 EntityTooLarge", resp.StatusCode, code)
	}
}

// TestAttackInputReachesStorePanics: values the router passes through unchecked reach
// slice expressions in gofakes3 that panic. net/http recovers a handler's panic (the
// connection drops and a plain-text stack trace goes to stderr, outside the JSON log), so the
// process lives on, but "never panic on input" does not hold, and nothing in memorys3
// recovers: a panic on a path without net/http's recovery would end the process.
//   - ListParts with a part-number-marker beyond the upload's highest part: gofakes3 slices
//     mpu.parts[marker:] (a WriteOnly key).
//   - GET with Range: bytes=1-9223372036854775807: gofakes3's ObjectRangeRequest.Range
//     computes start+length, which overflows, so the "clamp to size" branch is skipped and
//     the backend slices data[1:-9223372036854775808] (a ReadOnly key).
func TestAttackInputReachesStorePanics(t *testing.T) {
	f := newFixture(t, false, Config{})
	w := f.bucketWithAccount("bkt", "w", WriteOnly)
	reader, err := f.srv.GrantAccess(context.Background(), "r", map[string]Mode{"bkt": ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	id := f.startUpload(w, "bkt", "obj")
	uploadRawPart(t, f, w, "bkt", "obj", id, 1, []byte("x"))
	if _, err := f.awsClient(w).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"),
		Body: strings.NewReader("hello")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rule string
		req  *http.Request
	}{
		{"ListParts with part-number-marker=5000", signedRequest(t, f, w, http.MethodGet,
			"/bkt/obj?"+url.Values{"uploadId": {id}, "part-number-marker": {"5000"}}.Encode(), nil, "", time.Now(), nil)},
		{"GetObject with Range: bytes=1-9223372036854775807", signedRequest(t, f, reader.Credentials, http.MethodGet,
			"/bkt/k", nil, "", time.Now(), http.Header{"Range": {"bytes=1-9223372036854775807"}})},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			rec := &panicRecorder{header: http.Header{}}
			func() {
				defer func() {
					if p := recover(); p != nil {
						rec.panicked = fmt.Sprint(p)
					}
				}()
				// In process, so the panic is seen rather than swallowed by net/http.
				f.srv.ServeHTTP(rec, tc.req)
			}()
			if rec.panicked != "" {
				t.Fatalf("the handler panicked: %s", rec.panicked)
			}
		})
	}
}

type panicRecorder struct {
	header   http.Header
	code     int
	body     bytes.Buffer
	panicked string
}

func (r *panicRecorder) Header() http.Header         { return r.header }
func (r *panicRecorder) WriteHeader(code int)        { r.code = code }
func (r *panicRecorder) Write(p []byte) (int, error) { return r.body.Write(p) }

// TestAttackUploadsPinMemoryCheaply: multipart uploads in progress live in gofakes3's own
// memory, with no bound on their number and none on their age (only a bucket delete aborts
// them), and gofakes3 keeps an upload's parts in a slice indexed by part number. A WriteOnly
// key that starts an upload (one POST without a body) and stores a one-byte part numbered
// 10000 pins about 80 KiB: two requests of a few hundred bytes each, repeated, fill the
// process's memory at tens of megabytes a second (and with --state-dir as well: parts are
// never on disk). The bound asserted here, 8 KiB retained per upload, is generous.
func TestAttackUploadsPinMemoryCheaply(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "w", WriteOnly)
	client := f.awsClient(c)
	const uploads = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range uploads {
		key := fmt.Sprintf("k%d", i)
		out, err := client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		uploadRawPart(t, f, c, "bkt", key, aws.ToString(out.UploadId), 10000, []byte{'x'})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perUpload := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / uploads
	if perUpload > 8<<10 {
		t.Fatalf("each upload with one 1-byte part numbered 10000 pins %d bytes of heap (%d uploads: %d MiB); a key can repeat this without bound",
			perUpload, uploads, perUpload*uploads>>20)
	}
}

// TestAttackUploadsStallTheDriver: DeleteBucket aborts the bucket's uploads one by one while
// holding the server's lock, which every COSI call of every tenant takes (create, delete,
// grant, revoke). gofakes3 keeps the uploads of one key in a slice and removes each aborted
// one by copying the rest, so aborting n uploads of one key costs O(n^2): 10k take 0.2 s,
// 40k 1.1 s, 160k 10 s on the reference machine, and past a million abortUploads gives up
// ("more than 1000 rounds") after holding the lock all that time, to start again on the
// retry. Each upload is one header-only POST a WriteOnly key may send (~550 bytes of heap
// each); they are made in process here only to keep the test fast. While the delete runs,
// a grant for another tenant's bucket must not wait for it.
func TestAttackUploadsStallTheDriver(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	events := func(line string) {
		if strings.HasPrefix(line, "abort multipart upload") {
			once.Do(func() { close(started) })
		}
	}
	f := newFixture(t, false, Config{storeEvents: events})
	f.bucketWithAccount("bkt", "attacker", WriteOnly)
	if err := f.srv.CreateBucket(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	const uploads = 40000
	for range uploads {
		if code, s3code := f.srv.storeCall(http.MethodPost, "/bkt/same-key", "uploads"); code != http.StatusOK {
			t.Fatalf("create upload: %d %s", code, s3code)
		}
	}
	deleted := make(chan time.Duration, 1)
	begin := time.Now()
	go func() {
		if err := f.srv.DeleteBucket(context.Background(), "bkt"); err != nil {
			t.Errorf("DeleteBucket: %v", err)
		}
		deleted <- time.Since(begin)
	}()
	<-started
	t0 := time.Now()
	if _, err := f.srv.GrantAccess(context.Background(), "bystander", map[string]Mode{"other": ReadWrite}); err != nil {
		t.Fatal(err)
	}
	waited := time.Since(t0)
	took := <-deleted
	if waited > 250*time.Millisecond {
		t.Fatalf("a grant on another bucket waited %v for DeleteBucket of a bucket holding %d uploads of one key (the delete took %v)", waited, uploads, took)
	}
}

// TestAttackMultipartKeysSkipTheKeyLimit: gofakes3 refuses a PutObject or CopyObject whose key
// is longer than S3's 1024 bytes (KeyTooLongError), but CreateMultipartUpload checks nothing,
// and the completion stores the object under any key the request line could carry (up to the
// 64 KiB header limit under Serve, 1 MiB in httptest). Each such upload also keeps its key in
// memory until it is completed or its bucket deleted (see TestAttackUploadsPinMemoryCheaply).
func TestAttackMultipartKeysSkipTheKeyLimit(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "w", WriteOnly)
	key := strings.Repeat("k", 32<<10)
	_, err := f.awsClient(c).CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
	if err == nil {
		t.Fatalf("CreateMultipartUpload with a %d-byte key was accepted; PutObject refuses keys over %d bytes", len(key), 1024)
	}
	if code := apiCode(err); code != "KeyTooLongError" {
		t.Fatalf("got %v, want KeyTooLongError", err)
	}
}
