package bucketdriver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// serveS3 serves srv on lis until the test ends.
func serveS3(t *testing.T, lis net.Listener, srv *s3server.Server) {
	t.Helper()
	hs := &http.Server{Handler: srv}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(lis) }()
	t.Cleanup(func() {
		hs.Close()
		<-done
	})
}

// TestStaticBucket: a bucket another tool made in the state directory is what COSI calls
// statically provisioned. The driver finds it and grants keys that really work in it, never
// deletes it (FAILED_PRECONDITION, objects kept), and never adopts it by a create.
func TestStaticBucket(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// The other tool: gofakes3's bbolt store in the shared state directory, one bucket, one object.
	db, err := bolt.Open(filepath.Join(dir, "objects.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := s3bolt.New(db)
	if err := store.CreateBucket("static-bucket"); err != nil {
		t.Fatal(err)
	}
	data := []byte("made by someone else")
	if _, err := store.PutObject("static-bucket", "theirs", map[string]string{}, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newS3(t, s3server.Config{StateDir: dir, Endpoint: "http://" + lis.Addr().String()})
	serveS3(t, lis, srv)
	be := bucketdriver.New(srv)

	b, err := be.GetBucket(ctx, &bucket.GetBucketRequest{ID: "static-bucket"})
	if err != nil {
		t.Fatalf("GetBucket of a static bucket: %v", err)
	}
	if _, err := be.GetBucket(ctx, &bucket.GetBucketRequest{ID: "no-such-bucket"}); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("GetBucket of a missing bucket: %v, want ErrNotFound", err)
	}
	acc, err := be.GrantBucketAccess(ctx, &bucket.GrantBucketAccessRequest{AccountName: "ba-static", Protocol: bucket.S3,
		Authentication: bucket.AuthKey, Buckets: []bucket.Grant{{BucketID: "static-bucket", Mode: bucket.ReadOnly}}})
	if err != nil {
		t.Fatalf("grant on a static bucket: %v", err)
	}
	c := awsClient(b.S3.Endpoint, b.S3.Region, acc.Credentials.S3)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("static-bucket"), Key: aws.String("theirs")})
	if err != nil {
		t.Fatalf("get with the granted key: %v", err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(got, data) {
		t.Errorf("object = %q", got)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("static-bucket"), Key: aws.String("mine"), Body: bytes.NewReader(data)}); err == nil {
		t.Error("a read-only grant on a static bucket could put")
	}

	if err := be.DeleteBucket(ctx, &bucket.DeleteBucketRequest{ID: "static-bucket"}); !errors.Is(err, driver.ErrFailedPrecondition) {
		t.Errorf("DeleteBucket of a static bucket: %v, want ErrFailedPrecondition", err)
	}
	if _, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: "static-bucket"}); !errors.Is(err, driver.ErrAlreadyExists) {
		t.Errorf("CreateBucket over a static bucket: %v, want ErrAlreadyExists", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("static-bucket"), Key: aws.String("theirs")}); err != nil {
		t.Errorf("the static bucket's object after the refused delete: %v", err)
	}
}

// TestDeleteAbortsMultipartUploads: a bucket deleted through the COSI driver takes its
// multipart uploads in progress with it; a bucket created again under the name starts clean.
func TestDeleteAbortsMultipartUploads(t *testing.T) {
	ctx := context.Background()
	srv := s3Fixture(t)
	be := bucketdriver.New(srv)
	create := func() *bucket.Bucket {
		b, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: "bc-multipart"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	grant := func(name string) *bucket.S3Credentials {
		acc, err := be.GrantBucketAccess(ctx, &bucket.GrantBucketAccessRequest{AccountName: name, Protocol: bucket.S3,
			Authentication: bucket.AuthKey, Buckets: []bucket.Grant{{BucketID: "bc-multipart", Mode: bucket.ReadWrite}}})
		if err != nil {
			t.Fatal(err)
		}
		return acc.Credentials.S3
	}
	b := create()
	c := awsClient(b.S3.Endpoint, b.S3.Region, grant("ba-first"))
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b.ID), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b.ID), Key: aws.String("big"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(bytes.Repeat([]byte{'x'}, 5<<20))}); err != nil {
		t.Fatal(err)
	}
	if err := be.DeleteBucket(ctx, &bucket.DeleteBucketRequest{ID: b.ID}); err != nil {
		t.Fatalf("DeleteBucket with an upload in progress: %v", err)
	}

	b = create()
	c = awsClient(b.S3.Endpoint, b.S3.Region, grant("ba-second"))
	list, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b.ID)})
	if err == nil && len(list.Uploads) > 0 {
		t.Errorf("the bucket created again lists %d uploads of the deleted one", len(list.Uploads))
	}
	if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b.ID), Key: aws.String("big"), UploadId: up.UploadId}); err == nil {
		t.Error("the deleted bucket's upload still lists its parts")
	}
}
