package s3server

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"hash"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// sumProbe notes whether each body the store is given comes with its MD5 (a summedBody).
type sumProbe struct {
	gofakes3.Backend
	mu     *sync.Mutex
	summed *[]bool
}

func (p sumProbe) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	_, ok := input.(*summedBody)
	p.mu.Lock()
	*p.summed = append(*p.summed, ok)
	p.mu.Unlock()
	return p.Backend.PutObject(bucket, key, meta, input, size, cond)
}

// TestAPutIsHashedOnceWithTheRightSum: a PUT's body is hashed with MD5 as it arrives (for the
// ETag); the store takes that sum instead of hashing the bytes a second time, which was most
// of what a PUT cost the server. The sum the store keeps is the MD5 of the bytes it
// keeps, for a signed PUT, an aws-chunked one, and a completed multipart upload (whose body
// the store hashes itself); an object written over keeps no trace of the old sum.
func TestAPutIsHashedOnceWithTheRightSum(t *testing.T) {
	var mu sync.Mutex
	var summed []bool
	f := newFixture(t, false, Config{instrument: func(b gofakes3.Backend) gofakes3.Backend {
		return sumProbe{Backend: b, mu: &mu, summed: &summed}
	}})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	ctx := context.Background()
	check := func(key string, body []byte) {
		t.Helper()
		obj, err := f.srv.backend.HeadObject("bkt", key)
		if err != nil {
			t.Fatal(err)
		}
		if sum := md5.Sum(body); !bytes.Equal(obj.Hash, sum[:]) || obj.Size != int64(len(body)) {
			t.Fatalf("%s: the store keeps MD5 %x of %d bytes, want %x of %d", key, obj.Hash, obj.Size, sum, len(body))
		}
		got, err := f.awsClient(c).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if !bytes.Equal(data, body) || aws.ToString(got.ETag) != gofakes3.FormatETag(obj.Hash) {
			t.Fatalf("%s: GET answers %d bytes with ETag %s", key, len(data), aws.ToString(got.ETag))
		}
	}

	for _, body := range [][]byte{bytes.Repeat([]byte("a"), 100<<10), []byte("second"), {}} {
		out, err := f.awsClient(c).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("signed"), Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		if sum := md5.Sum(body); aws.ToString(out.ETag) != gofakes3.FormatETag(sum[:]) {
			t.Fatalf("PUT of %d bytes answers ETag %s", len(body), aws.ToString(out.ETag))
		}
		check("signed", body)
	}

	mc, err := minio.New(strings.TrimPrefix(f.hs.URL, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, ""), Region: DefaultRegion, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	chunked := bytes.Repeat([]byte("chunk"), 30<<10)
	if _, err := mc.PutObject(ctx, "bkt", "chunked", bytes.NewReader(chunked), int64(len(chunked)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	check("chunked", chunked)

	id := f.startUpload(c, "bkt", "mpu")
	part := bytes.Repeat([]byte("p"), 64<<10)
	up, err := f.awsClient(c).UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("mpu"), UploadId: aws.String(id),
		PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.awsClient(c).CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mpu"),
		UploadId: aws.String(id), MultipartUpload: &s3types.CompletedMultipartUpload{Parts: []s3types.CompletedPart{{PartNumber: aws.Int32(1), ETag: up.ETag}}}}); err != nil {
		t.Fatal(err)
	}
	check("mpu", part)

	mu.Lock()
	defer mu.Unlock()
	// Four PUTs came with their sum; the completion's body the store hashed itself.
	if want := []bool{true, true, true, true, false}; !slices.Equal(summed, want) {
		t.Fatalf("bodies given with their sum: %v, want %v", summed, want)
	}
}

// badSum is a reader with a Sum method that is not an MD5's.
type badSum struct{ io.Reader }

func (badSum) Sum([]byte) []byte { return []byte{1, 2, 3} }

// hashed is a reader with the Sum of a hash.
type hashed struct {
	io.Reader
	h hash.Hash
}

func (r hashed) Sum(b []byte) []byte { return r.h.Sum(b) }

// TestReaderMD5TakesOnlyAnMD5: the store takes a sum only from a reader that keeps one of an
// MD5's length; otherwise it hashes the bytes itself (storedBytes of a plain reader).
func TestReaderMD5TakesOnlyAnMD5(t *testing.T) {
	if _, ok := readerMD5(strings.NewReader("x")); ok {
		t.Fatal("a reader without Sum gave a sum")
	}
	if _, ok := readerMD5(badSum{strings.NewReader("x")}); ok {
		t.Fatal("a Sum of 3 bytes was taken for an MD5")
	}
	h := md5.New()
	h.Write([]byte("abc"))
	if sum, ok := readerMD5(hashed{strings.NewReader(""), h}); !ok || sum != md5.Sum([]byte("abc")) {
		t.Fatalf("readerMD5 of an MD5 hasher: %x %v", sum, ok)
	}
	body := []byte("plain")
	if got, sum, err := storedBytes(bytes.NewReader(body), int64(len(body))); err != nil || !bytes.Equal(got, body) || sum != md5.Sum(body) {
		t.Fatalf("storedBytes of a plain reader: %q %x %v", got, sum, err)
	}
	if _, _, err := storedBytes(bytes.NewReader(body), int64(len(body))+1); code(err) != gofakes3.ErrIncompleteBody {
		t.Fatalf("storedBytes of a reader shorter than its size: %v", err)
	}
}

// TestMemStoreReadsSurviveAnOverwrite: a GET reads the stored bytes without a copy, so a PUT
// must never write into them: an answer in progress reads the object it began with.
func TestMemStoreReadsSurviveAnOverwrite(t *testing.T) {
	m := newMemStore(time.Now)
	if err := m.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, m, "bkt", "k", "first", nil)
	obj, err := m.GetObject("bkt", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, m, "bkt", "k", "other", nil)
	if _, err := m.CopyObject("bkt", "k", "bkt", "k2", nil); err != nil {
		t.Fatal(err)
	}
	if err := m.ForceDeleteBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	if got := readObject(t, obj); got != "first" {
		t.Fatalf("a GET begun before an overwrite read %q", got)
	}
}

// setMetadata is gofakes3's in-memory backend, noting the metadata each PUT it stores sets:
// gofakes3 merges it with the replaced object's, where S3 (and memorys3) replaces it whole.
type setMetadata struct {
	gofakes3.Backend
	mu  sync.Mutex
	set map[string]map[string]string // by bucket/key
}

func (b *setMetadata) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	set := maps.Clone(meta)
	res, err := b.Backend.PutObject(bucket, key, meta, input, size, cond)
	if err == nil {
		b.mu.Lock()
		b.set[bucket+"/"+key] = set
		b.mu.Unlock()
	}
	return res, err
}

// TestPutObjectAnswersAsGofakes3 is a differential test of the PutObject memorys3 performs
// itself (objectStore) against gofakes3's: the same PUTs, in the same order, to gofakes3 alone
// on its in-memory backend and (signed) to the server, get the same status, S3 code and ETag,
// and leave the same bytes and the metadata gofakes3 takes from the request (not the replaced
// object's, which gofakes3 keeps and S3 does not): metadata headers, Content-MD5 right, wrong,
// malformed and empty, conditions, metadata past the limit, a key past the limit, an empty
// body, and a bucket the store does not have.
func TestPutObjectAnswersAsGofakes3(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	ctx := context.Background()
	if err := f.srv.CreateBucket(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	acc, err := f.srv.GrantAccess(ctx, "gone", map[string]Mode{"gone": ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.backend.ForceDeleteBucket("gone"); err != nil { // behind the server's back
		t.Fatal(err)
	}
	mem := &setMetadata{Backend: s3mem.New(), set: map[string]map[string]string{}}
	if err := mem.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	alone := httptest.NewServer(gofakes3.New(mem).Server())
	defer alone.Close()

	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	body := []byte("the object's bytes")
	sum := md5.Sum(body)
	for _, tc := range []struct {
		name, path string
		body       []byte
		hdr        http.Header
		creds      Credentials
	}{
		{"metadata headers", "/bkt/k", body, http.Header{"X-Amz-Meta-Color": {"blue"}, "Content-Type": {"text/plain"},
			"Content-Disposition": {"inline"}, "Content-Encoding": {"identity"}, "Cache-Control": {"no-cache"}}, c},
		{"a replacement keeps none of the metadata it does not set", "/bkt/k", []byte("v2"), http.Header{"X-Amz-Meta-Size": {"2"}}, c},
		{"Content-MD5 right", "/bkt/md5", body, http.Header{"Content-Md5": {b64(sum[:])}}, c},
		{"Content-MD5 wrong", "/bkt/md5", []byte("other bytes"), http.Header{"Content-Md5": {b64(sum[:])}}, c},
		{"Content-MD5 malformed", "/bkt/md5", body, http.Header{"Content-Md5": {"!!"}}, c},
		{"Content-MD5 too short", "/bkt/md5", body, http.Header{"Content-Md5": {b64(sum[:8])}}, c},
		{"Content-MD5 empty", "/bkt/md5", body, http.Header{"Content-Md5": {""}}, c},
		{"If-None-Match * on an object", "/bkt/k", body, http.Header{"If-None-Match": {"*"}}, c},
		{"If-None-Match * on no object", "/bkt/new", body, http.Header{"If-None-Match": {"*"}}, c},
		{"If-Match another ETag", "/bkt/k", body, http.Header{"If-Match": {`"0123"`}}, c},
		{"If-Match its ETag", "/bkt/md5", []byte("third"), http.Header{"If-Match": {gofakes3.FormatETag(sum[:])}}, c},
		{"metadata past the limit", "/bkt/big", body, http.Header{"X-Amz-Meta-Big": {strings.Repeat("m", gofakes3.DefaultMetadataSizeLimit)}}, c},
		{"a key past the limit", "/bkt/" + strings.Repeat("k", gofakes3.KeySizeLimit+1), body, nil, c},
		{"an empty body", "/bkt/empty", nil, nil, c},
		{"a bucket the store does not have", "/gone/k", body, nil, acc.Credentials},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := do(t, signedRequest(t, f, tc.creds, http.MethodPut, tc.path, tc.body, "", time.Now(), tc.hdr.Clone()))
			req, err := http.NewRequest(http.MethodPut, alone.URL+tc.path, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			maps.Copy(req.Header, tc.hdr)
			theirs := do(t, req)
			if ours.StatusCode != theirs.StatusCode || s3Code([]byte(ours.body)) != s3Code([]byte(theirs.body)) ||
				ours.header.Get("ETag") != theirs.header.Get("ETag") {
				t.Fatalf("memorys3 answered %d %s ETag %s; gofakes3 %d %s ETag %s", ours.StatusCode, s3Code([]byte(ours.body)), ours.header.Get("ETag"),
					theirs.StatusCode, s3Code([]byte(theirs.body)), theirs.header.Get("ETag"))
			}
			bucket, key, _ := strings.Cut(strings.TrimPrefix(tc.path, "/"), "/")
			ourObj, ourErr := f.srv.backend.GetObject(bucket, key, nil)
			theirObj, theirErr := mem.GetObject(bucket, key, nil)
			if (ourErr == nil) != (theirErr == nil) {
				t.Fatalf("stored: memorys3 %v, gofakes3 %v", ourErr, theirErr)
			}
			if ourErr != nil {
				return
			}
			mem.mu.Lock()
			set := maps.Clone(mem.set[bucket+"/"+key])
			mem.mu.Unlock()
			delete(ourObj.Metadata, "Last-Modified")
			delete(set, "Last-Modified")
			if got, want := readObject(t, ourObj), readObject(t, theirObj); got != want || !maps.Equal(ourObj.Metadata, set) {
				t.Fatalf("memorys3 stored %q %v; gofakes3 %q, with %v from the request", got, ourObj.Metadata, want, set)
			}
		})
	}
}

// TestHeaderTimeFormatsAsGofakes3: Last-Modified as gofakes3 writes it, whichever second
// was formatted last (it is kept for the next PUT of the same second).
func TestHeaderTimeFormatsAsGofakes3(t *testing.T) {
	gmt := time.FixedZone("GMT", 0)
	base := time.Date(2026, 11, 26, 21, 4, 5, 0, time.UTC)
	for _, at := range []time.Time{base, base.Add(900 * time.Millisecond), base.Add(time.Second), base.In(gmt), base.Add(-time.Hour), base} {
		if got, want := headerTime(at), at.UTC().Format("Mon, 02 Jan 2006 15:04:05")+" GMT"; got != want {
			t.Fatalf("headerTime(%v) = %q, want %q", at, got, want)
		}
	}
}

// FuzzPutObjectAnswersAsGofakes3 is TestPutObjectAnswersAsGofakes3 on generated PUTs: any
// Content-MD5, If-Match, If-None-Match, metadata value and body get the same status, S3 code
// and ETag from memorys3 as from gofakes3 alone, in the same sequence of PUTs to one key.
func FuzzPutObjectAnswersAsGofakes3(f *testing.F) {
	sum := md5.Sum([]byte("body"))
	etag := gofakes3.FormatETag(sum[:])
	for _, seed := range []struct{ md5, ifMatch, ifNoneMatch, meta, body string }{
		{"", "", "", "", "body"},
		{base64.StdEncoding.EncodeToString(sum[:]), "", "", "v", "body"},
		{base64.StdEncoding.EncodeToString(sum[:]), "", "", "", "other"},
		{"not base64!", "", "", "", "body"},
		{"", etag, "", "", "body"},
		{"", `"0"`, "*", "", ""},
		{"", "", "*", strings.Repeat("m", 2100), "body"},
	} {
		f.Add(seed.md5, seed.ifMatch, seed.ifNoneMatch, seed.meta, []byte(seed.body))
	}
	fx := newFixture(f, false, Config{})
	c := fx.bucketWithAccount("bkt", "rw", ReadWrite)
	mem := s3mem.New()
	if err := mem.CreateBucket("bkt"); err != nil {
		f.Fatal(err)
	}
	alone := httptest.NewServer(gofakes3.New(mem).Server())
	f.Cleanup(alone.Close)
	f.Fuzz(func(t *testing.T, contentMD5, ifMatch, ifNoneMatch, meta string, body []byte) {
		hdr := http.Header{}
		for k, v := range map[string]string{"Content-Md5": contentMD5, "If-Match": ifMatch, "If-None-Match": ifNoneMatch, "X-Amz-Meta-Fuzz": meta} {
			if v == "" {
				continue
			}
			for _, r := range v {
				if r < 0x21 || r > 0x7e { // a value a client sends as it is
					t.Skip()
				}
			}
			hdr.Set(k, v)
		}
		ours := do(t, signedRequest(t, fx, c, http.MethodPut, "/bkt/k", body, "", time.Now(), hdr.Clone()))
		req, err := http.NewRequest(http.MethodPut, alone.URL+"/bkt/k", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(req.Header, hdr)
		theirs := do(t, req)
		if ours.StatusCode != theirs.StatusCode || s3Code([]byte(ours.body)) != s3Code([]byte(theirs.body)) ||
			ours.header.Get("ETag") != theirs.header.Get("ETag") {
			t.Fatalf("memorys3 answered %d %s ETag %s; gofakes3 %d %s ETag %s", ours.StatusCode, s3Code([]byte(ours.body)), ours.header.Get("ETag"),
				theirs.StatusCode, s3Code([]byte(theirs.body)), theirs.header.Get("ETag"))
		}
	})
}
