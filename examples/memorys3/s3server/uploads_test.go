package s3server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"slices"
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

// TestCompletionSizeCountsEveryPart: completeUpload summed the part sizes that partSizes
// listed through the store, page by page (max-parts=1000). gofakes3's
// ListParts numbers the parts of every page after the first relative to the marker
// (`for partNumber, part := range mpu.parts[marker:]`), so parts beyond the first page are
// filed under the wrong numbers and a completion naming them is charged 0 bytes for them: an
// upload with more than 1000 parts completes into an object larger than MaxObjectSize.
//
// Here the limit is 4 KiB; parts 1..1000 are one byte each and parts 1001 and 1002 are 4000
// bytes each (each within the limit on its own). Completing with parts 1000, 1001, 1002 is
// charged 1 byte and stored an 8001-byte object. The upload store now knows every part's
// size, and the completion is EntityTooLarge.
func TestCompletionSizeCountsEveryPart(t *testing.T) {
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

// TestInputNeverReachesStorePanics: values the router passed through unchecked reached
// slice expressions in gofakes3 that panic. net/http recovers a handler's panic (the
// connection drops and a plain-text stack trace goes to stderr, outside the JSON log), so the
// process lives on, but "never panic on input" does not hold, and nothing in memorys3
// recovered: a panic on a path without net/http's recovery would end the process. The
// router now checks part-number-marker, and hands the store a range whose end cannot
// overflow; the answers are 400 InvalidArgument and the object from byte 1.
//   - ListParts with a part-number-marker beyond the upload's highest part: gofakes3 slices
//     mpu.parts[marker:] (a ReadWrite key).
//   - GET with Range: bytes=1-9223372036854775807: gofakes3's ObjectRangeRequest.Range
//     computes start+length, which overflows, so the "clamp to size" branch is skipped and
//     the backend slices data[1:-9223372036854775808] (a ReadOnly key).
func TestInputNeverReachesStorePanics(t *testing.T) {
	f := newFixture(t, false, Config{})
	w := f.bucketWithAccount("bkt", "w", ReadWrite)
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
		rule   string
		req    *http.Request
		status int
		body   string
	}{
		{"ListParts with part-number-marker=5000", signedRequest(t, f, w, http.MethodGet,
			"/bkt/obj?"+url.Values{"uploadId": {id}, "part-number-marker": {"5000"}}.Encode(), nil, "", time.Now(), nil), 200, "<ListPartsResult"},
		{"ListParts with part-number-marker=10001", signedRequest(t, f, w, http.MethodGet,
			"/bkt/obj?"+url.Values{"uploadId": {id}, "part-number-marker": {"10001"}}.Encode(), nil, "", time.Now(), nil), 400, "InvalidArgument"},
		{"ListParts with max-parts=-1", signedRequest(t, f, w, http.MethodGet,
			"/bkt/obj?"+url.Values{"uploadId": {id}, "max-parts": {"-1"}}.Encode(), nil, "", time.Now(), nil), 400, "InvalidArgument"},
		{"GetObject with Range: bytes=1-9223372036854775807", signedRequest(t, f, reader.Credentials, http.MethodGet,
			"/bkt/k", nil, "", time.Now(), http.Header{"Range": {"bytes=1-9223372036854775807"}}), 206, "ello"},
		{"HeadObject with Range: bytes=1-9223372036854775807", signedRequest(t, f, reader.Credentials, http.MethodHead,
			"/bkt/k", nil, "", time.Now(), http.Header{"Range": {"bytes=1-9223372036854775807"}}), 206, ""},
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
			if rec.code != tc.status || !strings.Contains(rec.body.String(), tc.body) {
				t.Fatalf("got %d %s, want %d with %q", rec.code, rec.body.String(), tc.status, tc.body)
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

func (r *panicRecorder) Header() http.Header { return r.header }
func (r *panicRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *panicRecorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(p)
}

// TestAnUploadHoldsWhatItsPartsHold: multipart uploads in progress lived in gofakes3's own
// memory, with no bound on their number and none on their age (only a bucket delete aborts
// them), and gofakes3 kept an upload's parts in a slice indexed by part number. A WriteOnly
// key that starts an upload (one POST without a body) and stores a one-byte part numbered
// 10000 pins about 80 KiB: two requests of a few hundred bytes each, repeated, fill the
// process's memory at tens of megabytes a second (and with --state-dir as well: parts are
// never on disk). The bound asserted here, 8 KiB retained per upload, is generous: the upload
// store keeps parts in a map by number. Their number is bounded too (TestUploadBounds).
func TestAnUploadHoldsWhatItsPartsHold(t *testing.T) {
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

// TestDeletingABucketsUploadsDoesNotStallTheDriver: DeleteBucket aborted the bucket's uploads
// one by one through gofakes3 while holding the server's lock, which every COSI call of every
// tenant takes (create, delete, grant, revoke). gofakes3 kept the uploads of one key in a
// slice and removed each aborted one by copying the rest, so aborting n uploads of one key
// cost O(n^2): 10k took 0.2 s, 40k 1.1 s, 160k 10 s. Each upload is one header-only POST a
// WriteOnly key may send; they are made in process here only to keep the test fast, and the
// limits are raised to let 40000 of them in. A grant for another tenant's bucket sent while
// the delete drops them is served, and the delete leaves none. How long the grant waits is
// a matter of time, which a unit test does not judge: BenchmarkDeleteBucketWithUploads
// measures the delete at two sizes.
func TestDeletingABucketsUploadsDoesNotStallTheDriver(t *testing.T) {
	const uploads = 40000
	f := newUploadsFixture(t, uploads)
	started := make(chan struct{})
	var once sync.Once
	f.srv.uploadsDropped = func(string) { once.Do(func() { close(started) }) }
	deleted := make(chan error, 1)
	go func() { deleted <- f.srv.DeleteBucket(context.Background(), "bkt") }()
	<-started
	if _, err := f.srv.GrantAccess(context.Background(), "bystander", map[string]Mode{"other": ReadWrite}); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteBucket: %v", err)
	}
	if got, _ := f.srv.listUploads("bkt"); len(got) != 0 {
		t.Fatalf("%d uploads left after the delete", len(got))
	}
}

// newUploadsFixture is a server with the bucket "bkt" holding n uploads of one key, and the
// bucket "other".
func newUploadsFixture(tb testing.TB, n int) *fixture {
	tb.Helper()
	f := newFixture(tb, false, Config{Limits: Limits{MaxUploads: n, MaxUploadsPerBucket: n}})
	f.bucketWithAccount("bkt", "attacker", WriteOnly)
	if err := f.srv.CreateBucket(context.Background(), "other"); err != nil {
		tb.Fatal(err)
	}
	for range n {
		if code, s3code := f.srv.storeCall(http.MethodPost, "/bkt/same-key", "uploads"); code != http.StatusOK {
			tb.Fatalf("create upload: %d %s", code, s3code)
		}
	}
	return f
}

// BenchmarkDeleteBucketWithUploads: DeleteBucket of a bucket holding n uploads of one key,
// which holds the server's lock throughout. Four times the uploads cost four to eight times
// as much (the maps outgrow the caches), where the quadratic abort cost sixteen.
func BenchmarkDeleteBucketWithUploads(b *testing.B) {
	for _, n := range []int{10000, 40000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				f := newUploadsFixture(b, n)
				b.StartTimer()
				if err := f.srv.DeleteBucket(context.Background(), "bkt"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEveryObjectOperationHoldsTheKeyLimit: gofakes3 refuses a PutObject or CopyObject whose
// key is longer than S3's 1024 bytes (KeyTooLongError), but CreateMultipartUpload checked
// nothing, and the completion stored the object under any key the request line could carry
// (up to the 64 KiB header limit under Serve, 1 MiB in httptest). Each such upload also kept
// its key in memory until it was completed or its bucket deleted. Now every object operation
// is refused with 400 KeyTooLongError before the store sees it, for the key and for a copy's
// source.
func TestEveryObjectOperationHoldsTheKeyLimit(t *testing.T) {
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

	long := strings.Repeat("x", 1025)
	for _, o := range offeredRequests("") {
		if o.path != "/bkt/k" {
			continue
		}
		cases := []offered{o}
		cases[0].path = "/bkt/" + long
		if o.op == "CopyObject" {
			fromLong := o
			fromLong.hdr = http.Header{"X-Amz-Copy-Source": {"/oth/" + long}}
			cases = append(cases, fromLong)
		}
		for i, tc := range cases {
			t.Run(fmt.Sprint(o.op, i), func(t *testing.T) {
				pf := newProbeFixture(t, Config{})
				tc.query = strings.ReplaceAll(tc.query, "uploadId=", "uploadId="+url.QueryEscape(pf.uploadID))
				rec := pf.serve(pf.signed(t, "rw", tc.method, tc.path, tc.query, tc.hdr, tc.body))
				if rec.Code != http.StatusBadRequest || (tc.method != http.MethodHead && s3Code(rec.Body.Bytes()) != "KeyTooLongError") {
					t.Fatalf("%s with a key of 1025 bytes: %d %s, want 400 KeyTooLongError", o.op, rec.Code, rec.Body.String())
				}
				if requests, _, _ := pf.probe.seen(); requests != 0 {
					t.Fatalf("the store saw %s with a key of 1025 bytes", o.op)
				}
			})
		}
	}
}

// TestUploadBounds: uploads in progress are bounded per bucket, per server, and in the bytes
// their parts hold; past a bound, the request is refused with 503 SlowDown (the shortage ends
// as uploads complete or are aborted, and clients retry SlowDown with backoff), and an abort
// makes room again at once.
func TestUploadBounds(t *testing.T) {
	ctx := context.Background()
	t.Run("uploads per bucket and per server", func(t *testing.T) {
		f := newFixture(t, false, Config{Limits: Limits{MaxUploadsPerBucket: 2, MaxUploads: 3}})
		a := f.awsClient(f.bucketWithAccount("bkt-a", "a", WriteOnly))
		b := f.awsClient(f.bucketWithAccount("bkt-b", "b", WriteOnly))
		c := f.awsClient(f.bucketWithAccount("bkt-c", "c", WriteOnly))
		create := func(c *s3.Client, bucket string) (string, error) {
			out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("k")})
			if err != nil {
				return "", err
			}
			return aws.ToString(out.UploadId), nil
		}
		first, err := create(a, "bkt-a")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := create(a, "bkt-a"); err != nil {
			t.Fatal(err)
		}
		if _, err := create(a, "bkt-a"); apiCode(err) != "SlowDown" || httpStatus(err) != http.StatusServiceUnavailable {
			t.Fatalf("a third upload in a bucket that may hold 2: %v, want 503 SlowDown", err)
		}
		if _, err := create(b, "bkt-b"); err != nil {
			t.Fatalf("another bucket's first upload: %v", err)
		}
		if _, err := create(c, "bkt-c"); apiCode(err) != "SlowDown" {
			t.Fatalf("a fourth upload on a server that may hold 3: %v, want SlowDown", err)
		}
		if _, err := a.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt-a"), Key: aws.String("k"), UploadId: aws.String(first)}); err != nil {
			t.Fatal(err)
		}
		if _, err := create(c, "bkt-c"); err != nil {
			t.Fatalf("an upload after an abort made room: %v", err)
		}
	})
	t.Run("bytes held in parts", func(t *testing.T) {
		f := newFixture(t, false, Config{Limits: Limits{MaxPartBytes: 1 << 20}})
		c := f.bucketWithAccount("bkt", "w", WriteOnly)
		id := f.startUpload(c, "bkt", "k")
		part := bytes.Repeat([]byte("p"), 600<<10)
		uploadRawPart(t, f, c, "bkt", "k", id, 1, part)
		uploadRawPart(t, f, c, "bkt", "k", id, 1, part) // replacing a part holds no more
		q := url.Values{"partNumber": {"2"}, "uploadId": {id}}
		resp := do(t, signedRequest(t, f, c, http.MethodPut, "/bkt/k?"+q.Encode(), part, "UNSIGNED-PAYLOAD", time.Now(), nil))
		if resp.StatusCode != http.StatusServiceUnavailable || s3Code([]byte(resp.body)) != "SlowDown" {
			t.Fatalf("a part past the bytes parts may hold: %d %s, want 503 SlowDown", resp.StatusCode, resp.body)
		}
		if sizes, _ := f.srv.partSizes("bkt", "k", id); len(sizes) != 1 {
			t.Fatalf("the refused part was kept: %v", sizes)
		}
		if _, err := f.awsClient(c).AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("k"), UploadId: aws.String(id)}); err != nil {
			t.Fatal(err)
		}
		if used := f.srv.budget.used.Load(); used != 0 {
			t.Fatalf("%d buffered bytes still counted after the upload was aborted", used)
		}
		id = f.startUpload(c, "bkt", "k")
		uploadRawPart(t, f, c, "bkt", "k", id, 2, part)
	})
}

// TestListPartsPagesPastAThousandParts: ListParts pages through more parts than one page
// holds, each part under its own number with its own size (gofakes3 numbered the parts of
// every page after the first relative to the marker).
func TestListPartsPagesPastAThousandParts(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "w", ReadWrite)
	id := f.startUpload(c, "bkt", "obj")
	want := map[int32]int64{}
	for n := 1; n <= 2500; n += 2 { // sparse: every other number
		size := 1 + n%7
		uploadRawPart(t, f, c, "bkt", "obj", id, n, bytes.Repeat([]byte("x"), size))
		want[int32(n)] = int64(size)
	}
	got := map[int32]int64{}
	pages := 0
	p := s3.NewListPartsPaginator(f.awsClient(c), &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), UploadId: aws.String(id)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, part := range out.Parts {
			n := aws.ToInt32(part.PartNumber)
			if _, dup := got[n]; dup {
				t.Fatalf("part %d listed twice", n)
			}
			got[n] = aws.ToInt64(part.Size)
		}
	}
	if pages != 2 || len(got) != len(want) {
		t.Fatalf("%d parts in %d pages, want %d in 2", len(got), pages, len(want))
	}
	for n, size := range want {
		if got[n] != size {
			t.Fatalf("part %d listed with %d bytes, want %d", n, got[n], size)
		}
	}
}

// TestListMultipartUploadsPages: uploads are listed by key, then in the order they began,
// paged with the markers S3 answers, with common prefixes under a delimiter.
func TestListMultipartUploadsPages(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "w", ReadWrite)
	var want []string // key/upload ID in the order S3 lists them
	for _, k := range []string{"b", "a", "dir/x", "dir/y", "c"} {
		for range 2 {
			want = append(want, k+"/"+f.startUpload(c, "bkt", k))
		}
	}
	slices.SortStableFunc(want, func(x, y string) int {
		kx, ky := x[:strings.LastIndex(x, "/")], y[:strings.LastIndex(y, "/")]
		return strings.Compare(kx, ky)
	})
	client := f.awsClient(c)
	var got []string
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), MaxUploads: aws.Int32(3)}
	for {
		out, err := client.ListMultipartUploads(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range out.Uploads {
			got = append(got, aws.ToString(u.Key)+"/"+aws.ToString(u.UploadId))
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	if !slices.Equal(got, want) {
		t.Fatalf("listed\n%v\nwant\n%v", got, want)
	}
	out, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CommonPrefixes) != 1 || aws.ToString(out.CommonPrefixes[0].Prefix) != "dir/" || len(out.Uploads) != 6 {
		t.Fatalf("with a delimiter: prefixes %v and %d uploads, want dir/ and 6", out.CommonPrefixes, len(out.Uploads))
	}
}
