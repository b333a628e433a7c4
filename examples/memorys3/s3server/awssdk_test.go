package s3server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestAWSSDKGrantedKeyWorks drives the full object life cycle with aws-sdk-go-v2 in its default
// configuration. Over plain HTTP it signs a hex SHA-256 of the body and sends a CRC32 header;
// over TLS it sends STREAMING-UNSIGNED-PAYLOAD-TRAILER with a CRC32 trailer. Both must work.
func TestAWSSDKGrantedKeyWorks(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
		form string
	}{
		{"over http the body is signed by its sha256", false, "hex"},
		{"over https the body is unsigned with a checksum trailer", true, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tls := tc.tls
			f := newFixture(t, tls, Config{})
			creds := f.bucketWithAccount("bkt", "ba-1", ReadWrite)
			c := f.awsClient(creds)
			ctx := context.Background()
			body := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB

			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/a b+c.txt"), Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/a b+c.txt")})
			if err != nil {
				t.Fatalf("GetObject: %v", err)
			}
			data, _ := io.ReadAll(got.Body)
			got.Body.Close()
			if !bytes.Equal(data, body) {
				t.Fatalf("GetObject returned %d bytes, want the %d put", len(data), len(body))
			}
			if got.ContentEncoding != nil && strings.Contains(*got.ContentEncoding, "aws-chunked") {
				t.Errorf("the stored object kept the transport encoding: %q", *got.ContentEncoding)
			}
			rng, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/a b+c.txt"), Range: aws.String("bytes=16-31")})
			if err != nil {
				t.Fatalf("ranged GetObject: %v", err)
			}
			part, _ := io.ReadAll(rng.Body)
			rng.Body.Close()
			if !bytes.Equal(part, body[16:32]) {
				t.Errorf("ranged GetObject = %q", part)
			}
			if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/a b+c.txt")}); err != nil {
				t.Errorf("HeadObject: %v", err)
			}
			list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
			if err != nil || len(list.Contents) != 1 || *list.Contents[0].Key != "dir/a b+c.txt" {
				t.Fatalf("ListObjectsV2 = %v, %v", list, err)
			}
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("empty"), Body: bytes.NewReader(nil)}); err != nil {
				t.Errorf("PutObject of an empty object: %v", err)
			}
			if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("copy"), CopySource: aws.String("bkt/empty")}); err != nil {
				t.Errorf("CopyObject within the bucket: %v", err)
			}
			if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("copy")}, {Key: aws.String("empty")}}}}); err != nil {
				t.Errorf("DeleteObjects: %v", err)
			}
			multipartUpload(t, c, "bkt", "big")
			if !f.sawForm(tc.form) {
				t.Errorf("no PUT used the %s form; forms seen: %v", tc.form, f.forms)
			}
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("big")}); err != nil {
				t.Errorf("DeleteObject: %v", err)
			}
		})
	}
}

// multipartUpload uploads two parts (5 MiB, the S3 minimum for a non-last part, and 1 KiB)
// and reads the object back.
func multipartUpload(t *testing.T, c *s3.Client, bucket, key string) {
	t.Helper()
	ctx := context.Background()
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("CreateMultipartUpload: %v", err)
	}
	parts := [][]byte{bytes.Repeat([]byte{'a'}, 5<<20), bytes.Repeat([]byte{'b'}, 1024)}
	var done []types.CompletedPart
	for i, p := range parts {
		n := int32(i + 1)
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
		done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatalf("CompleteMultipartUpload: %v", err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil || aws.ToInt64(head.ContentLength) != 5<<20+1024 {
		t.Fatalf("HeadObject after multipart = %v, %v", head, err)
	}
}

// TestAWSSDKPresignedURLs checks presigned GET and PUT made by aws-sdk-go-v2's presigner, used
// by a plain HTTP client, and that X-Amz-Expires is honoured.
func TestAWSSDKPresignedURLs(t *testing.T) {
	f := newFixture(t, false, Config{})
	creds := f.bucketWithAccount("bkt", "ba-1", ReadWrite)
	p := s3.NewPresignClient(f.awsClient(creds), s3.WithPresignExpires(time.Minute))
	ctx := context.Background()

	put, err := p.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("p")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(put.Method, put.URL, strings.NewReader("presigned body"))
	for k, v := range put.SignedHeader {
		if !strings.EqualFold(k, "host") {
			req.Header[k] = v
		}
	}
	if resp := do(t, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("presigned PUT: %d %s", resp.StatusCode, resp.body)
	}

	get, err := p.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("p")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest(http.MethodGet, get.URL, nil)
	if resp := do(t, req); resp.StatusCode != http.StatusOK || resp.body != "presigned body" {
		t.Fatalf("presigned GET: %d %q", resp.StatusCode, resp.body)
	}

	tampered := strings.Replace(get.URL, "/bkt/p?", "/bkt/q?", 1)
	req, _ = http.NewRequest(http.MethodGet, tampered, nil)
	if resp := do(t, req); resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.body, "SignatureDoesNotMatch") {
		t.Errorf("presigned GET of another key: %d %s", resp.StatusCode, resp.body)
	}

	f.clock.Advance(2 * time.Minute)
	req, _ = http.NewRequest(http.MethodGet, get.URL, nil)
	if resp := do(t, req); resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.body, "expired") {
		t.Errorf("presigned GET after X-Amz-Expires: %d %s", resp.StatusCode, resp.body)
	}
}

type response struct {
	StatusCode int
	body       string
	header     http.Header
}

func do(t testing.TB, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{StatusCode: resp.StatusCode, body: string(b), header: resp.Header}
}

// TestAWSSDKModes checks each grant mode against each kind of operation.
func TestAWSSDKModes(t *testing.T) {
	f := newFixture(t, false, Config{})
	ctx := context.Background()
	for _, m := range []Mode{ReadWrite, ReadOnly, WriteOnly} {
		if err := f.srv.CreateBucket(ctx, "b-"+strings.ReplaceAll(m.String(), "-", "")); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := f.srv.GrantAccess(ctx, "seed", map[string]Mode{"b-readwrite": ReadWrite, "b-readonly": ReadWrite, "b-writeonly": ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	seed := f.awsClient(admin.Credentials)
	for _, b := range []string{"b-readwrite", "b-readonly", "b-writeonly"} {
		if _, err := seed.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
			t.Fatal(err)
		}
	}
	type op struct {
		name string
		run  func(c *s3.Client, b string) error
	}
	put := op{"put", func(c *s3.Client, b string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("new"), Body: strings.NewReader("x")})
		return err
	}}
	get := op{"get", func(c *s3.Client, b string) error {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
		if err == nil {
			out.Body.Close()
		}
		return err
	}}
	list := op{"list", func(c *s3.Client, b string) error {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		return err
	}}
	del := op{"delete", func(c *s3.Client, b string) error {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("new")})
		return err
	}}
	multipart := op{"multipart", func(c *s3.Client, b string) error {
		_, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("mp")})
		return err
	}}
	copyOut := op{"copy from a bucket with no grant", func(c *s3.Client, b string) error {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("c"), CopySource: aws.String("b-readwrite/k")})
		return err
	}}
	cases := []struct {
		rule    string
		mode    Mode
		op      op
		allowed bool
	}{
		{"read-write may put", ReadWrite, put, true},
		{"read-write may get", ReadWrite, get, true},
		{"read-write may list", ReadWrite, list, true},
		{"read-write may delete", ReadWrite, del, true},
		{"read-write may start a multipart upload", ReadWrite, multipart, true},
		{"read-only cannot put", ReadOnly, put, false},
		{"read-only may get", ReadOnly, get, true},
		{"read-only may list", ReadOnly, list, true},
		{"read-only cannot delete", ReadOnly, del, false},
		{"read-only cannot start a multipart upload", ReadOnly, multipart, false},
		{"write-only may put", WriteOnly, put, true},
		{"write-only cannot get", WriteOnly, get, false},
		{"write-only cannot list", WriteOnly, list, false},
		{"write-only may delete", WriteOnly, del, true},
		{"write-only may start a multipart upload", WriteOnly, multipart, true},
		{"a copy needs read on the source bucket", WriteOnly, copyOut, false},
	}
	for i, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			b := "b-" + strings.ReplaceAll(tc.mode.String(), "-", "")
			acc, err := f.srv.GrantAccess(ctx, fmt.Sprintf("acct-%d", i), map[string]Mode{b: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			err = tc.op.run(f.awsClient(acc.Credentials), b)
			switch {
			case tc.allowed && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.allowed && (apiCode(err) != "AccessDenied" || httpStatus(err) != http.StatusForbidden):
				t.Errorf("got %v (code %q, status %d), want AccessDenied 403", err, apiCode(err), httpStatus(err))
			}
		})
	}
}
