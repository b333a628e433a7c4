package s3server_test

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// node is one run of memorys3 on a state directory: the S3 server, its HTTP endpoint and the
// COSI backend the sidecar's calls reach.
type node struct {
	srv *s3server.Server
	hs  *httptest.Server
	be  *bucketdriver.Backend
}

// start runs memorys3 on dir until stop or the end of the test.
func start(t *testing.T, dir string) *node {
	t.Helper()
	srv, err := s3server.New(s3server.Config{StateDir: dir})
	if err != nil {
		t.Fatalf("New on %s: %v", dir, err)
	}
	n := &node{srv: srv, hs: httptest.NewServer(srv), be: bucketdriver.New(srv)}
	t.Cleanup(n.stop)
	return n
}

// stop ends the run as a crash would for the state files: every commit is durable, nothing
// else is flushed. Stopping twice is harmless.
func (n *node) stop() {
	n.hs.Close()
	_ = n.srv.Close()
}

// client is aws-sdk-go-v2, path-style, no retries, signing with c.
func (n *node) client(c *bucket.S3Credentials) *s3.Client {
	return s3.New(s3.Options{
		Region:       s3server.DefaultRegion,
		BaseEndpoint: aws.String(n.hs.URL),
		UsePathStyle: true,
		HTTPClient:   n.hs.Client(),
		Retryer:      aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
	})
}

// s3Code is the S3 error code of an aws-sdk-go-v2 error ("" for none).
func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func (n *node) create(t *testing.T, name string) string {
	t.Helper()
	b, err := n.be.CreateBucket(context.Background(), &bucket.CreateBucketRequest{Name: name})
	if err != nil {
		t.Fatalf("CreateBucket %s: %v", name, err)
	}
	return b.ID
}

func (n *node) grant(account string, buckets ...string) (*bucket.Access, error) {
	req := &bucket.GrantBucketAccessRequest{AccountName: account, Protocol: bucket.S3, Authentication: bucket.AuthKey}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, bucket.Grant{BucketID: b, Mode: bucket.ReadWrite})
	}
	return n.be.GrantBucketAccess(context.Background(), req)
}

// get reads bucket/key with c and answers the S3 error code ("" when it read it).
func get(c *s3.Client, bucket, key string) string {
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		out.Body.Close()
	}
	return s3Code(err)
}

func put(c *s3.Client, bucket, key string) string {
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("data")})
	return s3Code(err)
}

// TestDeleteBucketCrash stops DeleteBucket after each of its durable steps, as kill -9 would
// (the object store and the access state are separate files, committed separately), and
// checks what is left: the old key never reaches the bucket again, whether the deletion is
// finished by a retried delete through the COSI backend, by a restart, or by a create of the
// same name; a bucket created again under the name is empty and closed to the old key until
// the same grant is repeated.
func TestDeleteBucketCrash(t *testing.T) {
	steps := []struct {
		name string
		step s3server.DeleteStep
	}{
		{"after the grants are revoked", s3server.DeleteBegun},
		{"after the uploads are aborted", s3server.DeleteUploadsAborted},
		{"after the store deleted the bucket", s3server.DeleteStoreDeleted},
	}
	for _, st := range steps {
		for _, finish := range []string{"retried delete", "restart", "create of the name"} {
			t.Run(st.name+"/"+finish, func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				n := start(t, dir)
				doomed, kept := n.create(t, "bc-doomed"), n.create(t, "bc-kept")
				acc, err := n.grant("ba-both", doomed, kept)
				if err != nil {
					t.Fatal(err)
				}
				keys := acc.Credentials.S3
				c := n.client(keys)
				for _, b := range []string{doomed, kept} {
					if code := put(c, b, "k"); code != "" {
						t.Fatalf("put to %s: %s", b, code)
					}
				}
				up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(doomed), Key: aws.String("big")})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(doomed), Key: aws.String("big"), UploadId: up.UploadId,
					PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part"))}); err != nil {
					t.Fatal(err)
				}

				s3server.StopDeleteAfter(n.srv, st.step)
				if err := n.be.DeleteBucket(ctx, &bucket.DeleteBucketRequest{ID: doomed}); !errors.Is(err, s3server.ErrSimulatedCrash) {
					t.Fatalf("DeleteBucket with a crash point: %v, want the simulated crash", err)
				}
				s3server.StopDeleteAfter(n.srv, 0)

				// Whatever is left, the key lost the bucket in the first commit.
				if code := get(c, doomed, "k"); code != "AccessDenied" {
					t.Errorf("old key on the half-deleted bucket: %q, want AccessDenied", code)
				}
				if code := get(c, kept, "k"); code != "" {
					t.Errorf("old key on the bucket not being deleted: %q, want it readable", code)
				}
				if _, err := n.be.GetBucket(ctx, &bucket.GetBucketRequest{ID: doomed}); !errors.Is(err, driver.ErrNotFound) {
					t.Errorf("GetBucket of the half-deleted bucket: %v, want ErrNotFound", err)
				}
				if _, err := n.grant("ba-late", doomed); !errors.Is(err, driver.ErrNotFound) {
					t.Errorf("a grant of the half-deleted bucket: %v, want ErrNotFound", err)
				}

				switch finish {
				case "retried delete":
					if err := n.be.DeleteBucket(ctx, &bucket.DeleteBucketRequest{ID: doomed}); err != nil {
						t.Fatalf("retried DeleteBucket: %v", err)
					}
				case "restart":
					n.stop()
					n = start(t, dir)
					c = n.client(keys)
					recorded, _ := s3server.Recorded(n.srv, doomed)
					inStore, err := s3server.StoreHas(n.srv, doomed)
					if recorded || inStore || err != nil {
						t.Errorf("after a restart: recorded %v, in the store %v (%v); want the start-up to have finished the deletion", recorded, inStore, err)
					}
					if code := get(c, doomed, "k"); code != "AccessDenied" {
						t.Errorf("old key on the half-deleted bucket after a restart: %q, want AccessDenied", code)
					}
					if code := get(c, kept, "k"); code != "" {
						t.Errorf("old key on the other bucket after a restart: %q, want it readable", code)
					}
					if err := n.be.DeleteBucket(ctx, &bucket.DeleteBucketRequest{ID: doomed}); err != nil {
						t.Fatalf("DeleteBucket retried after the restart: %v", err)
					}
				}
				if finish != "create of the name" {
					recorded, _ := s3server.Recorded(n.srv, doomed)
					inStore, err := s3server.StoreHas(n.srv, doomed)
					if recorded || inStore || err != nil {
						t.Errorf("after the deletion was finished: recorded %v, in the store %v (%v); want neither", recorded, inStore, err)
					}
				}

				if id := n.create(t, "bc-doomed"); id != doomed {
					t.Fatalf("the bucket created again has ID %q, want %q", id, doomed)
				}
				for _, code := range []string{get(c, doomed, "k"), put(c, doomed, "new")} {
					if code != "AccessDenied" {
						t.Errorf("old key on the bucket created again: %q, want AccessDenied", code)
					}
				}
				again, err := n.grant("ba-both", doomed, kept)
				if err != nil || again.AccountID != acc.AccountID || *again.Credentials.S3 != *keys {
					t.Fatalf("the same grant repeated on the bucket created again: %v; want OK, the same account and keys", err)
				}
				if code := get(c, doomed, "k"); code != "NoSuchKey" {
					t.Errorf("object of the deleted bucket in the one created again: %q, want NoSuchKey", code)
				}
				list, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(doomed)})
				if err == nil && len(list.Uploads) > 0 {
					t.Errorf("the bucket created again lists %d uploads of the deleted one", len(list.Uploads))
				}
			})
		}
	}
}
