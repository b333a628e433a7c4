package s3server

import (
	"bytes"
	"context"
	"crypto/md5"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
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

// TestAPutIsHashedOnceWithTheRightSum: gofakes3 hashes a PUT's body with MD5 as it arrives
// (for the ETag); the store takes that sum instead of hashing the bytes a second time, which
// was most of what a PUT cost the server. The sum the store keeps is the MD5 of the bytes it
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
// MD5's length; otherwise it hashes the bytes itself (bodyMD5 of a plain reader).
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
	if got := bodyMD5(bytes.NewReader(body), body); got != md5.Sum(body) {
		t.Fatalf("bodyMD5 of a plain reader: %x", got)
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
