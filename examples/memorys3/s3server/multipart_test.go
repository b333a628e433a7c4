package s3server

import (
	"bytes"
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// startUpload begins a multipart upload of key with one part uploaded and returns its ID.
func startUpload(t *testing.T, c *s3.Client, bucket, key string) string {
	t.Helper()
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(bytes.Repeat([]byte{'p'}, 5<<20))}); err != nil {
		t.Fatalf("UploadPart: %v", err)
	}
	return aws.ToString(up.UploadId)
}

// TestDeleteBucketAbortsUploads: deleting a bucket aborts its multipart uploads in progress
// (gofakes3 would keep their parts in memory for good), and a bucket created again under the
// name shows none of them to its new grantee, who cannot complete them either.
func TestDeleteBucketAbortsUploads(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		rule   string
		delete func(f *fixture, bucket string) error
	}{
		{"DeleteBucket aborts them", func(f *fixture, bucket string) error { return f.srv.DeleteBucket(ctx, bucket) }},
		// An upload started while a delete ran outlives it in gofakes3: the bucket is removed
		// here behind the server's back, and CreateBucket must sweep what is left.
		{"CreateBucket sweeps what a delete left", func(f *fixture, bucket string) error {
			type forceDeleter interface{ ForceDeleteBucket(string) error }
			return f.srv.backend.(forceDeleter).ForceDeleteBucket(bucket)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			f := newFixture(t, false, Config{})
			old := f.awsClient(f.bucketWithAccount("mpu", "first", ReadWrite))
			id := startUpload(t, old, "mpu", "big/object")
			startUpload(t, old, "mpu", "other")
			if got, err := f.srv.listUploads("mpu"); err != nil || len(got) != 2 {
				t.Fatalf("uploads before the delete: %v, %v; want 2", got, err)
			}
			if err := tc.delete(f, "mpu"); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if tc.rule == "DeleteBucket aborts them" {
				// Recreated in the store alone (no sweep): nothing is left to find.
				if err := f.srv.backend.CreateBucket("mpu"); err != nil {
					t.Fatal(err)
				}
				if got, err := f.srv.listUploads("mpu"); err != nil || len(got) != 0 {
					t.Fatalf("uploads after the delete: %v, %v; want none", got, err)
				}
				if err := f.srv.backend.DeleteBucket("mpu"); err != nil {
					t.Fatal(err)
				}
			}

			c := f.awsClient(f.bucketWithAccount("mpu", "second", ReadWrite))
			list, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")})
			if err != nil && apiCode(err) != "NoSuchUpload" {
				t.Fatalf("ListMultipartUploads in the new bucket: %v", err)
			}
			if err == nil && len(list.Uploads) != 0 {
				t.Errorf("the new bucket lists %d uploads of the old one", len(list.Uploads))
			}
			_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpu"), Key: aws.String("big/object"),
				UploadId: aws.String(id), MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1)}}}})
			if apiCode(err) != "NoSuchUpload" {
				t.Errorf("completing the old bucket's upload in the new one: %v, want NoSuchUpload", err)
			}
		})
	}
}
