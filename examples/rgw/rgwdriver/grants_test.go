package rgwdriver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

const (
	rw = cosi2.AccessMode_READ_WRITE
	ro = cosi2.AccessMode_READ_ONLY
	wo = cosi2.AccessMode_WRITE_ONLY
)

// TestAccessModes proves with aws-sdk-go-v2 against RGW what each mode's key can do: read-write
// puts, gets, lists and deletes; read-only cannot put or delete; write-only cannot get or list;
// one account never reaches another's bucket, nor creates, deletes or re-policies one; a
// revoked key fails on the very next request.
func TestAccessModes(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	bktA, err := w.create(ctx, "bc-modes-a")
	if err != nil {
		t.Fatal(err)
	}
	bktB, err := w.create(ctx, "bc-modes-b")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bucket.S3Credentials{}
	ids := map[string]string{}
	for name, grant := range map[string]map[string]cosi2.AccessMode_Mode{
		"rw": {bktA: rw}, "ro": {bktA: ro}, "wo": {bktA: wo}, "other": {bktB: rw},
	} {
		id, k, err := w.grant(ctx, "ba-modes-"+name, grant)
		if err != nil {
			t.Fatalf("grant %s: %v", name, err)
		}
		ids[name], keys[name] = id, k
	}
	const denied = "AccessDenied"
	for _, tc := range []struct {
		key, bucket string
		want        keyOps
	}{
		{"rw", bktA, keyOps{}},
		{"ro", bktA, keyOps{put: denied, del: denied}},
		{"wo", bktA, keyOps{get: denied, list: denied}},
		{"other", bktA, keyOps{put: denied, get: denied, list: denied, del: denied}},
		{"rw", bktB, keyOps{put: denied, get: denied, list: denied, del: denied}},
	} {
		writer := keys["rw"]
		if tc.bucket == bktB {
			writer = keys["other"]
		}
		if got := probeKey(t, ep, tc.bucket, keys[tc.key], writer); got != tc.want {
			t.Errorf("%s key on %s: got %+v, want %+v", tc.key, tc.bucket, got, tc.want)
		}
	}

	// Multipart uploads are writes: read-write and write-only run one to completion, read-only
	// cannot start one. Their listings are reads (keys, and the parts' MD5s): read-write only.
	for name, want := range map[string]string{"rw": "", "wo": "", "ro": denied, "other": denied} {
		if got := multipart(ctx, s3As(ep, keys[name]), bktA, "mp-"+name); got != want {
			t.Errorf("multipart upload with the %s key: %q, want %q", name, got, want)
		}
	}
	up, err := s3As(ep, keys["rw"]).CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bktA), Key: aws.String("mp-open")})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"rw": "", "wo": denied, "ro": denied, "other": denied} {
		c := s3As(ep, keys[name])
		_, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bktA)})
		if got := s3Code(err); got != want {
			t.Errorf("listing the uploads in progress with the %s key: %q, want %q", name, got, want)
		}
		_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bktA), Key: aws.String("mp-open"), UploadId: up.UploadId})
		if got := s3Code(err); got != want {
			t.Errorf("listing an upload's parts with the %s key: %q, want %q", name, got, want)
		}
	}
	if _, err := s3As(ep, keys["rw"]).AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bktA),
		Key: aws.String("mp-open"), UploadId: up.UploadId}); err != nil {
		t.Fatal(err)
	}

	// Nothing beyond objects: no bucket of its own, no delete or policy of the granted bucket.
	rwc := s3As(ep, keys["rw"])
	if _, err := rwc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bc-modes-own")}); err == nil {
		t.Error("a granted key created a bucket of its own")
	}
	if _, err := rwc.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bktB),
		Policy: aws.String(`{"Version":"2012-10-17","Statement":[]}`)}); s3Code(err) == "" {
		t.Error("a granted key replaced the policy of another account's bucket")
	}
	if _, err := rwc.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bktA)}); s3Code(err) == "" {
		t.Error("a read-write key deleted its bucket's policy")
	}
	if _, err := rwc.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bktB)}); s3Code(err) == "" {
		t.Error("a granted key deleted another account's bucket")
	}
	if _, err := rwc.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bktA)}); s3Code(err) == "" {
		t.Error("a read-write key deleted its bucket")
	}
	if _, err := rwc.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bktA),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); s3Code(err) == "" {
		t.Error("a read-write key configured its bucket's versioning")
	}
	if _, err := rwc.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(bktA), ACL: s3types.BucketCannedACLPublicReadWrite}); s3Code(err) == "" {
		t.Error("a read-write key set its bucket's ACL")
	}
	if _, err := rwc.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bktA)}); s3Code(err) == "" {
		t.Error("a read-write key read its bucket's policy (the other accounts' user IDs)")
	}

	// Revoke: the key fails at once, and the other keys on the bucket keep working.
	if err := w.revoke(ctx, ids["rw"], bktA); err != nil {
		t.Fatal(err)
	}
	_, err = rwc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bktA), Key: aws.String("after"), Body: strings.NewReader("x")})
	if got := s3Code(err); got != "InvalidAccessKeyId" {
		t.Errorf("put with the revoked key: %q, want InvalidAccessKeyId", got)
	}
	if _, err := s3As(ep, keys["ro"]).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bktA)}); err != nil {
		t.Errorf("the read-only key after another account's revoke: %v", err)
	}
	for _, name := range []string{"ro", "wo", "other"} {
		bk := bktA
		if name == "other" {
			bk = bktB
		}
		if err := w.revoke(ctx, ids[name], bk); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{bktA, bktB} {
		if err := w.remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMultiBucketRevoke grants one account two buckets in different modes and revokes them one
// at a time: the first revoke closes that bucket only, the second deletes the key.
func TestMultiBucketRevoke(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	one, err := w.create(ctx, "bc-multi-one")
	if err != nil {
		t.Fatal(err)
	}
	two, err := w.create(ctx, "bc-multi-two")
	if err != nil {
		t.Fatal(err)
	}
	id, k, err := w.grant(ctx, "ba-multi", map[string]cosi2.AccessMode_Mode{one: rw, two: ro})
	if err != nil {
		t.Fatal(err)
	}
	w2 := s3As(c.RGW.Endpoint, k)
	if got := probeKey(t, c.RGW.Endpoint, one, k, k); got != (keyOps{}) {
		t.Errorf("read-write bucket: %+v", got)
	}
	if _, err := w2.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(two)}); err != nil {
		t.Errorf("read-only bucket: %v", err)
	}
	if err := w.revoke(ctx, id, one); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(one)}); s3Code(err) != "AccessDenied" {
		t.Errorf("list of the revoked bucket: %q, want AccessDenied", s3Code(err))
	}
	if _, err := w2.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(two)}); err != nil {
		t.Errorf("the bucket still granted: %v", err)
	}
	if err := w.revoke(ctx, id, two); err != nil {
		t.Fatal(err)
	}
	if _, err := w2.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(two)}); s3Code(err) != "InvalidAccessKeyId" {
		t.Errorf("after the last revoke: %q, want InvalidAccessKeyId", s3Code(err))
	}
	// A revoke repeated after the user is gone is OK.
	if err := w.revoke(ctx, id, two); err != nil {
		t.Errorf("repeated revoke: %v", err)
	}
	for _, bk := range []string{one, two} {
		if err := w.remove(ctx, bk); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentGrantsOneBucket grants eight accounts one bucket at once: each grant rewrites the
// bucket's policy, and none may lose another's statement, so every key works afterwards; then
// eight revokes at once leave the bucket's own Denies alone and every key refused.
func TestConcurrentGrantsOneBucket(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	bk, err := w.create(ctx, "bc-concurrent")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	type result struct {
		id   string
		keys bucket.S3Credentials
		err  error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			id, k, err := w.grant(ctx, fmt.Sprintf("ba-concurrent-%d", i), map[string]cosi2.AccessMode_Mode{bk: rw})
			results <- result{id, k, err}
		}()
	}
	var granted []result
	for range n {
		r := <-results
		if r.err != nil {
			t.Errorf("grant: %v", r.err)
			continue
		}
		granted = append(granted, r)
	}
	for i, r := range granted {
		if _, err := s3As(c.RGW.Endpoint, r.keys).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bk)}); err != nil {
			t.Errorf("key %d after the concurrent grants: %v", i, err)
		}
	}
	errs := make(chan error, len(granted))
	for _, r := range granted {
		go func() { errs <- w.revoke(ctx, r.id, bk) }()
	}
	for range granted {
		if err := <-errs; err != nil {
			t.Errorf("revoke: %v", err)
		}
	}
	for i, r := range granted {
		if _, err := s3As(c.RGW.Endpoint, r.keys).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bk)}); s3Code(err) != "InvalidAccessKeyId" {
			t.Errorf("key %d after the concurrent revokes: %q", i, s3Code(err))
		}
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Fatal(err)
	}
}

// TestObjectACLsOpenNothing: RGW lets a user do anything with the objects it uploads, ACLs
// included, unless the bucket policy denies it. A read-write key that uploads with a public-read
// ACL, or sets one afterwards, opens nothing to anonymous requests or other RGW users, and a
// write-only key cannot read back even what it wrote.
func TestObjectACLsOpenNothing(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	bk, err := w.create(ctx, "bc-acls")
	if err != nil {
		t.Fatal(err)
	}
	rwID, rwKey, err := w.grant(ctx, "ba-acls-rw", map[string]cosi2.AccessMode_Mode{bk: rw})
	if err != nil {
		t.Fatal(err)
	}
	woID, woKey, err := w.grant(ctx, "ba-acls-wo", map[string]cosi2.AccessMode_Mode{bk: wo})
	if err != nil {
		t.Fatal(err)
	}
	rwc, woc := s3As(c.RGW.Endpoint, rwKey), s3As(c.RGW.Endpoint, woKey)
	// The upload itself may be refused or accepted; either way the object must stay private.
	_, _ = rwc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("public"), Body: strings.NewReader("x"),
		ACL: s3types.ObjectCannedACLPublicRead})
	if _, err := rwc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("plain"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := rwc.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(bk), Key: aws.String("plain"),
		ACL: s3types.ObjectCannedACLPublicRead}); s3Code(err) != "AccessDenied" {
		t.Errorf("a read-write key set an object's ACL: %q, want AccessDenied", s3Code(err))
	}
	if _, err := woc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("mine"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := woc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk), Key: aws.String("mine")}); s3Code(err) != "AccessDenied" {
		t.Errorf("a write-only key read back its own object: %q, want AccessDenied", s3Code(err))
	}
	stranger := s3As(c.RGW.Endpoint, bucket.S3Credentials{AccessKeyID: c.RGW.AccessKey, SecretAccessKey: string(c.RGW.SecretKey)})
	for _, key := range []string{"public", "plain", ""} {
		resp, err := http.Get(c.RGW.Endpoint + "/" + bk + "/" + key)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous GET /%s/%s: %d, want 403", bk, key, resp.StatusCode)
		}
		if key == "" {
			continue
		}
		if _, err := stranger.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk), Key: aws.String(key)}); s3Code(err) != "AccessDenied" {
			t.Errorf("another RGW user's GET of %s: %q, want AccessDenied", key, s3Code(err))
		}
	}
	for _, id := range []string{rwID, woID} {
		if err := w.revoke(ctx, id, bk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Fatal(err)
	}
}

// multipart runs a one-part multipart upload of key to bucketName and answers the S3 error code
// of the first step that failed ("" when the upload completed).
func multipart(ctx context.Context, c *s3.Client, bucketName, key string) string {
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucketName), Key: aws.String(key)})
	if err != nil {
		return s3Code(err)
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucketName), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("one part")})
	if err != nil {
		return s3Code(err)
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucketName), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: []s3types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
	return s3Code(err)
}
