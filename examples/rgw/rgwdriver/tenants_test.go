package rgwdriver_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	mimemultipart "mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/ceph/go-ceph/rgw/admin"
	"google.golang.org/grpc/codes"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
	"github.com/csikit/csikit/internal/cephtest"
)

// These tests attack the driver as one tenant holding several keys and buckets would: what a key
// leaves behind in a bucket (objects it owns, ACLs it wrote) must reach nobody once its grants
// are gone, and a bucket's end must end every key that had it.

// ownerS3 is an S3 client with the bucket owner's key, for a test to act behind the driver's back
// as an administrator (or an earlier version of the driver) would.
func ownerS3(t *testing.T, c *cephtest.Cluster) *s3.Client {
	t.Helper()
	u, err := adminAPI(t, c).GetUser(context.Background(), admin.User{ID: rgwdriver.DefaultOwnerUID})
	if err != nil || len(u.Keys) == 0 {
		t.Fatalf("the bucket owner's key: %v", err)
	}
	return s3As(c.RGW.Endpoint, bucket.S3Credentials{AccessKeyID: u.Keys[0].AccessKey, SecretAccessKey: u.Keys[0].SecretKey})
}

// denied says whether err is RGW's refusal: AccessDenied, or a bare 403 for a HEAD, whose answer
// has no body to carry a code, or for a PUT refused before its body was sent, whose connection
// RGW may close before the answer's body is read.
func denied(err error) bool {
	var re *smithyhttp.ResponseError
	c := s3Code(err)
	return c == "AccessDenied" || c == "Forbidden" || errors.As(err, &re) && re.HTTPStatusCode() == http.StatusForbidden
}

// adminS3 is an S3 client of the cluster's admin user: an RGW user that no grant names.
func adminS3(c *cephtest.Cluster) *s3.Client {
	return s3As(c.RGW.Endpoint, bucket.S3Credentials{AccessKeyID: c.RGW.AccessKey, SecretAccessKey: string(c.RGW.SecretKey)})
}

// withHeader adds a header to one request, before it is signed.
func withHeader(name, value string) func(*s3.Options) {
	return func(o *s3.Options) { o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(name, value)) }
}

// anonymousGET answers the HTTP status of an unsigned GET of bucketName/key.
func anonymousGET(t *testing.T, endpoint, bucketName, key string) int {
	t.Helper()
	resp, err := http.Get(endpoint + "/" + bucketName + "/" + key)
	if err != nil {
		t.Fatalf("anonymous GET: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// postObject uploads key to bucketName as a browser form does (POST, a policy signed by keys), with
// the form field acl when acl is not empty; it answers the HTTP status.
func postObject(ctx context.Context, endpoint string, keys bucket.S3Credentials, bucketName, key, acl string) (int, error) {
	var conditions []any
	if acl != "" {
		conditions = append(conditions, map[string]string{"acl": acl})
	}
	signed, err := s3.NewPresignClient(s3As(endpoint, keys)).PresignPostObject(ctx,
		&s3.PutObjectInput{Bucket: aws.String(bucketName), Key: aws.String(key)},
		func(o *s3.PresignPostOptions) { o.Conditions = conditions })
	if err != nil {
		return 0, err
	}
	var body bytes.Buffer
	form := mimemultipart.NewWriter(&body)
	fields := signed.Values
	if acl != "" {
		fields["acl"] = acl
	}
	for name, value := range fields {
		if err := form.WriteField(name, value); err != nil {
			return 0, err
		}
	}
	file, err := form.CreateFormFile("file", "upload")
	if err != nil {
		return 0, err
	}
	if _, err := file.Write([]byte("posted")); err != nil {
		return 0, err
	}
	if err := form.Close(); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/"+bucketName, &body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// multipartWithACL runs a one-part multipart upload of key whose start carries acl.
func multipartWithACL(ctx context.Context, c *s3.Client, bucketName, key string, acl s3types.ObjectCannedACL) error {
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucketName), Key: aws.String(key), ACL: acl})
	if err != nil {
		return err
	}
	part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucketName), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("one part")})
	if err != nil {
		return err
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucketName), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: []s3types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}}})
	return err
}

// publicWrites are the ways a read-write key can try to leave an object readable by anyone,
// each writing key with a public-read ACL and answering the error.
func publicWrites(ep, bk, source string, keys bucket.S3Credentials) map[string]func(ctx context.Context, key string) error {
	c := s3As(ep, keys)
	return map[string]func(context.Context, string) error{
		"put": func(ctx context.Context, key string) error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String(key), Body: strings.NewReader("x"),
				ACL: s3types.ObjectCannedACLPublicRead})
			return err
		},
		"copy": func(ctx context.Context, key string) error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(bk), Key: aws.String(key), CopySource: aws.String(bk + "/" + source),
				ACL: s3types.ObjectCannedACLPublicRead})
			return err
		},
		"multipart": func(ctx context.Context, key string) error {
			return multipartWithACL(ctx, c, bk, key, s3types.ObjectCannedACLPublicRead)
		},
		"post": func(ctx context.Context, key string) error {
			status, err := postObject(ctx, ep, keys, bk, key, string(s3types.ObjectCannedACLPublicRead))
			if err == nil && status/100 != 2 {
				err = fmt.Errorf("POST answered %d", status)
			}
			return err
		},
	}
}

// TestRevokesNeverOpenTheBucket: a read-write key copies another account's private object onto
// itself with a public-read ACL (and tries every other way to write one). Whatever RGW accepted
// stays unreadable to anonymous requests and to other RGW users after every step of a sequence of
// revokes and grants that ends with no grant at all, and even once the bucket policy is deleted
// behind the driver's back.
func TestRevokesNeverOpenTheBucket(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	bk, err := w.create(ctx, "bc-closed")
	if err != nil {
		t.Fatal(err)
	}
	ids, keys := map[string]string{}, map[string]bucket.S3Credentials{}
	grant := func(name string, mode cosi2.AccessMode_Mode) error {
		id, k, err := w.grant(ctx, "ba-closed-"+name, map[string]cosi2.AccessMode_Mode{bk: mode})
		ids[name], keys[name] = id, k
		return err
	}
	revoke := func(name string) error { return w.revoke(ctx, ids[name], bk) }
	for _, name := range []string{"a", "b"} {
		if err := grant(name, rw); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s3As(ep, keys["b"]).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("secret"),
		Body: strings.NewReader("b's private data")}); err != nil {
		t.Fatal(err)
	}
	objects := []string{"secret"}
	for how, write := range publicWrites(ep, bk, "secret", keys["a"]) {
		if err := write(ctx, "public-"+how); err != nil {
			t.Logf("%s with a public-read ACL: refused (%s)", how, s3Code(err))
			continue
		}
		objects = append(objects, "public-"+how)
	}
	if len(objects) == 1 {
		t.Fatal("no public-read object was written: nothing here to prove")
	}
	slices.Sort(objects)
	stranger := adminS3(c)
	check := func(after string) {
		t.Helper()
		for _, o := range objects {
			if got := anonymousGET(t, ep, bk, o); got != http.StatusForbidden {
				t.Errorf("after %s: anonymous GET of %s answered %d, want 403", after, o, got)
			}
			if _, err := stranger.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk), Key: aws.String(o)}); s3Code(err) != "AccessDenied" {
				t.Errorf("after %s: another RGW user's GET of %s: %q, want AccessDenied", after, o, s3Code(err))
			}
		}
	}
	check("the uploads")
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"revoking a", func() error { return revoke("a") }},
		{"revoking b, the bucket's last grant", func() error { return revoke("b") }},
		{"granting c write-only", func() error { return grant("c", wo) }},
		{"granting a read-only again", func() error { return grant("a", ro) }},
		{"revoking c", func() error { return revoke("c") }},
		{"revoking a again", func() error { return revoke("a") }},
		{"the bucket owner deleting the bucket policy", func() error {
			_, err := ownerS3(t, c).DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bk)})
			return err
		}},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		check(step.name)
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Fatal(err)
	}
}

// TestRevokeReachesOwnedObjects: an account granted two buckets uploads to one, then loses it.
// Its key keeps working on the other bucket but reaches nothing in the revoked one, not even the
// objects it owns there (whose ACLs RGW would otherwise decide by, and alone decides by for the
// source of an UploadPartCopy), whether or not other accounts are still granted that bucket.
func TestRevokeReachesOwnedObjects(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ep := c.RGW.Endpoint
	for i, tc := range []struct {
		name   string
		others bool
	}{{"its grant was the bucket's last", false}, {"another account keeps the bucket", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := callCtx(t)
			x, err := w.create(ctx, fmt.Sprintf("bc-owned-x%d", i))
			if err != nil {
				t.Fatal(err)
			}
			y, err := w.create(ctx, fmt.Sprintf("bc-owned-y%d", i))
			if err != nil {
				t.Fatal(err)
			}
			id, k, err := w.grant(ctx, fmt.Sprintf("ba-owned-%d", i), map[string]cosi2.AccessMode_Mode{x: rw, y: rw})
			if err != nil {
				t.Fatal(err)
			}
			otherID := ""
			if tc.others {
				if otherID, _, err = w.grant(ctx, fmt.Sprintf("ba-owned-other-%d", i), map[string]cosi2.AccessMode_Mode{x: rw}); err != nil {
					t.Fatal(err)
				}
			}
			kc := s3As(ep, k)
			if _, err := kc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(x), Key: aws.String("mine"), Body: strings.NewReader("mine")}); err != nil {
				t.Fatal(err)
			}
			if err := w.revoke(ctx, id, x); err != nil {
				t.Fatal(err)
			}
			obj := func() (*string, *string) { return aws.String(x), aws.String("mine") }
			for _, op := range []struct {
				name string
				do   func() error
			}{
				{"get", func() error {
					bk, key := obj()
					out, err := kc.GetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: key})
					if err == nil {
						out.Body.Close()
					}
					return err
				}},
				{"head", func() error {
					bk, key := obj()
					_, err := kc.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bk, Key: key})
					return err
				}},
				{"get its ACL", func() error {
					bk, key := obj()
					_, err := kc.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: bk, Key: key})
					return err
				}},
				{"set its ACL to public-read", func() error {
					bk, key := obj()
					_, err := kc.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: key, ACL: s3types.ObjectCannedACLPublicRead})
					return err
				}},
				{"copy it into the bucket still granted", func() error {
					_, err := kc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(y), Key: aws.String("copied"), CopySource: aws.String(x + "/mine")})
					return err
				}},
				{"copy it into the bucket still granted as an upload's part", func() error {
					return partCopy(ctx, kc, y, x+"/mine")
				}},
				{"overwrite it", func() error {
					bk, key := obj()
					_, err := kc.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: key, Body: strings.NewReader("x")})
					return err
				}},
				{"delete it", func() error {
					bk, key := obj()
					_, err := kc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: key})
					return err
				}},
				{"list the bucket", func() error {
					_, err := kc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(x)})
					return err
				}},
			} {
				if err := op.do(); !denied(err) {
					t.Errorf("the revoked key could %s in the revoked bucket: %q, want AccessDenied", op.name, s3Code(err))
				}
			}
			if got := anonymousGET(t, ep, x, "mine"); got != http.StatusForbidden {
				t.Errorf("anonymous GET of the object: %d, want 403", got)
			}
			if _, err := kc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(y)}); err != nil {
				t.Errorf("the bucket still granted: %v", err)
			}
			if err := w.revoke(ctx, id, y); err != nil {
				t.Fatal(err)
			}
			if otherID != "" {
				if err := w.revoke(ctx, otherID, x); err != nil {
					t.Fatal(err)
				}
			}
			for _, bk := range []string{x, y} {
				if err := w.remove(ctx, bk); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// partCopy copies bucketName/key into a new upload's part in dst with c and aborts the upload;
// it answers the copy's error.
func partCopy(ctx context.Context, c *s3.Client, dst, src string) error {
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(dst), Key: aws.String("part-copied")})
	if err != nil {
		return fmt.Errorf("starting an upload in %s: %w", dst, err)
	}
	defer c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(dst), Key: aws.String("part-copied"), UploadId: up.UploadId})
	_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(dst), Key: aws.String("part-copied"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), CopySource: aws.String(src)})
	return err
}

// TestRegrantedAccountReachesNoOldObjects: an account loses its only bucket (its user and key go)
// and is later granted another one. Its new key has the same RGW user ID, which the ACLs of the
// objects it uploaded to the first bucket named; it reads none of them, not even as the source
// of an UploadPartCopy, which RGW checks by the object's ACL alone.
func TestRegrantedAccountReachesNoOldObjects(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	x, err := w.create(ctx, "bc-regranted-x")
	if err != nil {
		t.Fatal(err)
	}
	y, err := w.create(ctx, "bc-regranted-y")
	if err != nil {
		t.Fatal(err)
	}
	id, k, err := w.grant(ctx, "ba-regranted", map[string]cosi2.AccessMode_Mode{x: rw})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3As(c.RGW.Endpoint, k).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(x), Key: aws.String("mine"),
		Body: strings.NewReader("mine")}); err != nil {
		t.Fatal(err)
	}
	if err := w.revoke(ctx, id, x); err != nil {
		t.Fatal(err)
	}
	id2, k2, err := w.grant(ctx, "ba-regranted", map[string]cosi2.AccessMode_Mode{y: rw})
	if err != nil {
		t.Fatal(err)
	}
	if id2 != id {
		t.Fatalf("the account's new grant answered user %q, want %q", id2, id)
	}
	if err := partCopy(ctx, s3As(c.RGW.Endpoint, k2), y, x+"/mine"); !denied(err) {
		t.Errorf("the account's new key copied what it uploaded to the bucket it lost: %q, want AccessDenied", s3Code(err))
	}
	if err := w.revoke(ctx, id2, y); err != nil {
		t.Fatal(err)
	}
	for _, bk := range []string{x, y} {
		if err := w.remove(ctx, bk); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeleteBucketRevokesEveryGrant: deleting a bucket ends every grant of it. A key that had
// only that bucket no longer authenticates; a key that has other buckets keeps them and reaches
// nothing in a new bucket of the same name. A grant repeated once the bucket is created again
// answers the same account with a new key, never the old one; one that would give a key still
// alive the new bucket is refused.
func TestDeleteBucketRevokesEveryGrant(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	x, err := w.create(ctx, "bc-deleted")
	if err != nil {
		t.Fatal(err)
	}
	y, err := w.create(ctx, "bc-deleted-other")
	if err != nil {
		t.Fatal(err)
	}
	onlyX := map[string]cosi2.AccessMode_Mode{x: rw}
	both := map[string]cosi2.AccessMode_Mode{x: ro, y: rw}
	idA, kA, err := w.grant(ctx, "ba-deleted-a", onlyX)
	if err != nil {
		t.Fatal(err)
	}
	idB, kB, err := w.grant(ctx, "ba-deleted-b", both)
	if err != nil {
		t.Fatal(err)
	}
	a, bc := s3As(ep, kA), s3As(ep, kB)
	if _, err := a.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(x), Key: aws.String("obj"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if err := w.remove(ctx, x); err != nil {
		t.Fatal(err)
	}
	list := func(c *s3.Client, bk string) string {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bk)})
		return s3Code(err)
	}
	if got := list(a, y); got != "InvalidAccessKeyId" {
		t.Errorf("the key of the deleted bucket alone: %q, want InvalidAccessKeyId", got)
	}
	if got := list(bc, y); got != "" {
		t.Errorf("the key that also has another bucket, on that bucket: %q", got)
	}
	if _, _, err := w.grant(ctx, "ba-deleted-a", onlyX); code(err) != codes.NotFound {
		t.Errorf("grant of the deleted bucket: %v, want NOT_FOUND", err)
	}
	if _, err := w.create(ctx, "bc-deleted"); err != nil {
		t.Fatal(err)
	}
	if got := list(bc, x); got != "AccessDenied" {
		t.Errorf("the surviving key on the re-created bucket: %q, want AccessDenied", got)
	}
	idA2, kA2, err := w.grant(ctx, "ba-deleted-a", onlyX)
	if err != nil {
		t.Fatal(err)
	}
	if idA2 != idA {
		t.Errorf("the repeated grant answered account %q, want %q", idA2, idA)
	}
	if kA2.AccessKeyID == kA.AccessKeyID || kA2.SecretAccessKey == kA.SecretAccessKey {
		t.Error("the grant on the re-created bucket answered the key of the deleted one")
	}
	if got := list(a, x); got != "InvalidAccessKeyId" {
		t.Errorf("the old key on the re-created bucket: %q, want InvalidAccessKeyId", got)
	}
	if got := list(s3As(ep, kA2), x); got != "" {
		t.Errorf("the new key on the re-created bucket: %q", got)
	}
	if _, _, err := w.grant(ctx, "ba-deleted-b", both); code(err) != codes.AlreadyExists {
		t.Errorf("a repeated grant that would give a surviving key the re-created bucket: %v, want ALREADY_EXISTS", err)
	}
	if got := list(bc, x); got != "AccessDenied" {
		t.Errorf("the surviving key on the re-created bucket after its grant was repeated: %q, want AccessDenied", got)
	}
	for id, bk := range map[string]string{idA2: x, idB: y} {
		if err := w.revoke(ctx, id, bk); err != nil {
			t.Fatal(err)
		}
	}
	for _, bk := range []string{x, y} {
		if err := w.remove(ctx, bk); err != nil {
			t.Fatal(err)
		}
	}
}

// TestObjectACLWritesRefused: no key sets an object ACL, and no PutObject carries one beyond
// "private" (the default), in any mode. CopyObject, CreateMultipartUpload and browser-form POST
// do carry one on RGW 16.2, which gives a bucket policy no condition key for their ACL: what
// they write opens nothing (TestRevokesNeverOpenTheBucket), and this test says so if RGW starts
// refusing them.
func TestObjectACLWritesRefused(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	bk, err := w.create(ctx, "bc-acl-writes")
	if err != nil {
		t.Fatal(err)
	}
	rwID, rwKey, err := w.grant(ctx, "ba-acl-writes-rw", map[string]cosi2.AccessMode_Mode{bk: rw})
	if err != nil {
		t.Fatal(err)
	}
	woID, woKey, err := w.grant(ctx, "ba-acl-writes-wo", map[string]cosi2.AccessMode_Mode{bk: wo})
	if err != nil {
		t.Fatal(err)
	}
	const allUsers = `uri="http://acs.amazonaws.com/groups/global/AllUsers"`
	stranger := `id="` + adminUser + `"`
	for _, tc := range []struct {
		header, value, want string
	}{
		{"", "", ""},
		{"x-amz-acl", "private", ""},
		{"x-amz-acl", "public-read", "AccessDenied"},
		{"x-amz-acl", "public-read-write", "AccessDenied"},
		{"x-amz-acl", "authenticated-read", "AccessDenied"},
		{"x-amz-acl", "bucket-owner-read", "AccessDenied"},
		{"x-amz-acl", "bucket-owner-full-control", "AccessDenied"},
		{"x-amz-grant-read", allUsers, "AccessDenied"},
		{"x-amz-grant-read", stranger, "AccessDenied"},
		{"x-amz-grant-write", stranger, "AccessDenied"},
		{"x-amz-grant-read-acp", stranger, "AccessDenied"},
		{"x-amz-grant-write-acp", stranger, "AccessDenied"},
		{"x-amz-grant-full-control", stranger, "AccessDenied"},
	} {
		for name, keys := range map[string]bucket.S3Credentials{"read-write": rwKey, "write-only": woKey} {
			var opts []func(*s3.Options)
			if tc.header != "" {
				opts = append(opts, withHeader(tc.header, tc.value))
			}
			_, err := s3As(ep, keys).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("acl-put"),
				Body: strings.NewReader("x")}, opts...)
			if got := s3Code(err); got != tc.want {
				t.Errorf("%s key, PutObject with %s: %s: %q, want %q", name, tc.header, tc.value, got, tc.want)
			}
		}
	}
	for name, keys := range map[string]bucket.S3Credentials{"read-write": rwKey, "write-only": woKey} {
		kc := s3As(ep, keys)
		key := aws.String("own-" + name)
		if _, err := kc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: key, Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
		if _, err := kc.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(bk), Key: key,
			ACL: s3types.ObjectCannedACLPublicRead}); s3Code(err) != "AccessDenied" {
			t.Errorf("%s key set its own object's ACL: %q, want AccessDenied", name, s3Code(err))
		}
		if _, err := kc.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(bk), Key: key, VersionId: aws.String("null"),
			ACL: s3types.ObjectCannedACLPublicRead}); s3Code(err) != "AccessDenied" {
			t.Errorf("%s key set its own object version's ACL: %q, want AccessDenied", name, s3Code(err))
		}
		if _, err := kc.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bk)}); s3Code(err) == "" {
			t.Errorf("%s key deleted the bucket's public access block", name)
		}
	}
	if _, err := s3As(ep, rwKey).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("source"),
		Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	for how, write := range publicWrites(ep, bk, "source", rwKey) {
		err := write(ctx, "public-"+how)
		switch {
		case how == "put" && s3Code(err) != "AccessDenied":
			t.Errorf("PutObject with a public-read ACL: %q, want AccessDenied", s3Code(err))
		case how != "put" && err != nil:
			t.Errorf("%s with a public-read ACL was refused (%v): RGW now enforces a condition for it; "+
				"deny it in the bucket policy and update the README's rgw section", how, err)
		}
		if got := anonymousGET(t, ep, bk, "public-"+how); got != http.StatusForbidden {
			t.Errorf("anonymous GET of what %s wrote: %d, want 403", how, got)
		}
	}
	for id := range map[string]bool{rwID: true, woID: true} {
		if err := w.revoke(ctx, id, bk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Fatal(err)
	}
}

// adminUser is the uid of the cluster's admin user (ceph-up.sh): an RGW user no grant names.
const adminUser = "csikit-admin"

// TestWhatWriteOnlyKeysLearn pins what a write-only key learns on RGW 16.2. Reads tell it
// nothing: GET and HEAD are refused alike for objects that exist and objects that do not, and
// so are the listings of multipart uploads in progress and of their parts, whose ETags are the
// MD5s of the parts (a guess of another writer's data confirmed offline). But a PUT's
// If-None-Match and If-Match headers are answered before the write, and RGW gives a bucket
// policy no condition key for them, so such a key learns whether an object exists and confirms a
// guess of its content (the MD5 of the guess), one request per guess. Keys not granted the
// bucket learn nothing.
func TestWhatWriteOnlyKeysLearn(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	bk, err := w.create(ctx, "bc-oracle")
	if err != nil {
		t.Fatal(err)
	}
	rwID, rwKey, err := w.grant(ctx, "ba-oracle-rw", map[string]cosi2.AccessMode_Mode{bk: rw})
	if err != nil {
		t.Fatal(err)
	}
	woID, woKey, err := w.grant(ctx, "ba-oracle-wo", map[string]cosi2.AccessMode_Mode{bk: wo})
	if err != nil {
		t.Fatal(err)
	}
	const salary = "salary: 100"
	if _, err := s3As(ep, rwKey).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String("salary"),
		Body: strings.NewReader(salary)}); err != nil {
		t.Fatal(err)
	}
	md5Of := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	woc := s3As(ep, woKey)
	rwc := s3As(ep, rwKey)
	up, err := rwc.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bk), Key: aws.String("payroll")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rwc.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bk), Key: aws.String("payroll"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader(salary)}); err != nil {
		t.Fatal(err)
	}
	if _, err := woc.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bk)}); s3Code(err) != "AccessDenied" {
		t.Errorf("write-only listing of the uploads in progress: %q, want AccessDenied", s3Code(err))
	}
	parts, err := woc.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bk), Key: aws.String("payroll"), UploadId: up.UploadId})
	if s3Code(err) != "AccessDenied" {
		etag := ""
		if err == nil && len(parts.Parts) > 0 {
			etag = aws.ToString(parts.Parts[0].ETag)
		}
		t.Errorf("write-only listing of another account's parts: %q (first part's ETag %s, MD5 of its data %s), want AccessDenied",
			s3Code(err), etag, md5Of(salary))
	}
	if _, err := rwc.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bk), Key: aws.String("payroll"),
		UploadId: up.UploadId}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"salary", "missing"} {
		out, err := woc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk), Key: aws.String(key)})
		if err == nil {
			out.Body.Close()
		}
		if s3Code(err) != "AccessDenied" {
			t.Errorf("write-only GET of %s: %q, want AccessDenied", key, s3Code(err))
		}
		if _, err := woc.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bk), Key: aws.String(key)}); !denied(err) {
			t.Errorf("write-only HEAD of %s: %q, want 403", key, s3Code(err))
		}
	}
	put := func(c *s3.Client, key, body string, in func(*s3.PutObjectInput)) string {
		p := &s3.PutObjectInput{Bucket: aws.String(bk), Key: aws.String(key), Body: strings.NewReader(body)}
		in(p)
		_, err := c.PutObject(ctx, p)
		return s3Code(err)
	}
	ifNoneMatch := func(p *s3.PutObjectInput) { p.IfNoneMatch = aws.String("*") }
	ifMatch := func(guess string) func(*s3.PutObjectInput) {
		return func(p *s3.PutObjectInput) { p.IfMatch = aws.String(md5Of(guess)) }
	}
	for _, tc := range []struct {
		name, key, body string
		in              func(*s3.PutObjectInput)
		want            string
	}{
		{"If-None-Match: * on an object that exists", "salary", "x", ifNoneMatch, "PreconditionFailed"},
		{"If-None-Match: * on a key with no object", "new", "x", ifNoneMatch, ""},
		{"If-Match with a wrong guess", "salary", "salary: 200", ifMatch("salary: 200"), "PreconditionFailed"},
		{"If-Match with the right guess", "salary", salary, ifMatch(salary), ""},
	} {
		if got := put(woc, tc.key, tc.body, tc.in); got != tc.want {
			t.Errorf("write-only PUT with %s: %q, want %q (RGW 16.2's answer; if it changed, update the README's rgw section)",
				tc.name, got, tc.want)
		}
	}
	for _, key := range []string{"salary", "absent"} {
		if got := put(adminS3(c), key, "x", ifNoneMatch); got != "AccessDenied" {
			t.Errorf("another RGW user's PUT with If-None-Match on %s: %q, want AccessDenied", key, got)
		}
	}
	for id := range map[string]bool{rwID: true, woID: true} {
		if err := w.revoke(ctx, id, bk); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Fatal(err)
	}
}

// TestCloseBucketsLeftOpen: a bucket as an earlier version of the driver left it once its last
// grant was revoked (no policy, no public access block), with a public-read object in it, is
// closed by CloseBuckets, and a second run leaves it so.
func TestCloseBucketsLeftOpen(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	bk, err := w.create(ctx, "bc-left-open")
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := w.grant(ctx, "ba-left-open", map[string]cosi2.AccessMode_Mode{bk: rw})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.revoke(ctx, id, bk); err != nil {
		t.Fatal(err)
	}
	owner := ownerS3(t, c)
	if _, err := owner.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bk)}); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bk)}); err != nil {
		t.Fatal(err)
	}
	// Written once the bucket is as an earlier version left it: a revoke now resets the ACLs of
	// what the revoked account owns, so a public object it left would no longer be public.
	if err := multipartWithACL(ctx, owner, bk, "public", s3types.ObjectCannedACLPublicRead); err != nil {
		t.Fatal(err)
	}
	if got := anonymousGET(t, ep, bk, "public"); got != http.StatusOK {
		t.Fatalf("anonymous GET in the bucket as an earlier version left it: %d, want 200 (the set-up failed)", got)
	}
	for run := range 2 {
		if err := b.CloseBuckets(ctx); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if got := anonymousGET(t, ep, bk, "public"); got != http.StatusForbidden {
			t.Errorf("run %d: anonymous GET after CloseBuckets: %d, want 403", run, got)
		}
		if _, err := owner.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bk)}); err != nil {
			t.Errorf("run %d: the bucket policy after CloseBuckets: %v", run, err)
		}
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Fatal(err)
	}
}

// TestUploadPartCopyChecksACLsAlone pins what RGW 16.2 leaves open: it checks the source of an
// UploadPartCopy by the source object's ACL alone. An object a read-write key made public-read
// (by a multipart upload, which RGW lets carry an ACL) is copied by another account into its own
// bucket, and a write-only key copies what it uploaded into a bucket it reads; an object whose
// ACL grants them nothing stays out of reach.
func TestUploadPartCopyChecksACLsAlone(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	ep := c.RGW.Endpoint
	x, err := w.create(ctx, "bc-partcopy-x")
	if err != nil {
		t.Fatal(err)
	}
	z, err := w.create(ctx, "bc-partcopy-z")
	if err != nil {
		t.Fatal(err)
	}
	granted := map[string][]string{} // account ID -> its buckets
	grant := func(name string, modes map[string]cosi2.AccessMode_Mode) *s3.Client {
		id, k, err := w.grant(ctx, "ba-partcopy-"+name, modes)
		if err != nil {
			t.Fatal(err)
		}
		granted[id] = slices.Collect(maps.Keys(modes))
		return s3As(ep, k)
	}
	writer := grant("rw", map[string]cosi2.AccessMode_Mode{x: rw})
	writeOnly := grant("wo", map[string]cosi2.AccessMode_Mode{x: wo, z: rw})
	other := grant("other", map[string]cosi2.AccessMode_Mode{z: rw})
	if err := multipartWithACL(ctx, writer, x, "public", s3types.ObjectCannedACLPublicRead); err != nil {
		t.Fatal(err)
	}
	for key, c := range map[string]*s3.Client{"private": writer, "own": writeOnly} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(x), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		who      string
		c        *s3.Client
		key      string
		refused  bool
		whatRead string
	}{
		{"another account", other, "public", false, "a public-read object"},
		{"another account", other, "private", true, "a private object"},
		{"a write-only key", writeOnly, "own", false, "what it uploaded"},
		{"a write-only key", writeOnly, "private", true, "what another account uploaded"},
	} {
		err := partCopy(ctx, tc.c, z, x+"/"+tc.key)
		if tc.refused && !denied(err) {
			t.Errorf("%s copied %s as an upload's part: %q, want AccessDenied", tc.who, tc.whatRead, s3Code(err))
		}
		if !tc.refused && err != nil {
			t.Errorf("%s could not copy %s as an upload's part (%v): RGW now checks the source's bucket policy; "+
				"update the README's rgw section", tc.who, tc.whatRead, err)
		}
	}
	for id, buckets := range granted {
		if err := w.revoke(ctx, id, buckets...); err != nil {
			t.Fatal(err)
		}
	}
	for _, bk := range []string{x, z} {
		if err := w.remove(ctx, bk); err != nil {
			t.Fatal(err)
		}
	}
}
