package s3server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

// TestMinioGrantedKeyWorks drives minio-go through its three upload forms: over HTTP a signed
// aws-chunked stream (each 64 KiB chunk signed), over HTTP with trailing headers the same
// stream closed by a signed CRC32C trailer, and over TLS with trailing headers an unsigned
// stream with a CRC32C trailer. minio-go v7.4.1 sends a trailer for a single PutObject only
// when a checksum is asked for (its automatic one disables itself by the x-amz-checksum-
// algorithm header it adds), so the trailer cases ask for CRC32C.
func TestMinioGrantedKeyWorks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tls      bool
		trailing bool
		checksum minio.ChecksumType
		form     string
	}{
		{"over http every chunk is signed", false, false, minio.ChecksumNone, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
		{"over http with trailers the chunks and the checksum trailer are signed", false, true, minio.ChecksumCRC32C, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
		{"over https with trailers the body is unsigned with a checksum trailer", true, true, minio.ChecksumCRC32C, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
		{"over https without trailers the body is unsigned", true, false, minio.ChecksumNone, "UNSIGNED-PAYLOAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.tls, Config{})
			creds := f.bucketWithAccount("bkt", "ba-1", ReadWrite)
			mc := f.minioClient(creds, tc.trailing)
			ctx := context.Background()
			body := bytes.Repeat([]byte("minio-go chunks "), 20000) // 320000 bytes: 5 chunks, the last one short

			if _, err := mc.PutObject(ctx, "bkt", "obj", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{Checksum: tc.checksum}); err != nil {
				t.Fatalf("PutObject: %v", err)
			}
			if !f.sawForm(tc.form) {
				t.Errorf("PutObject did not use %s; forms seen: %v", tc.form, f.forms)
			}
			obj, err := mc.GetObject(ctx, "bkt", "obj", minio.GetObjectOptions{})
			if err != nil {
				t.Fatalf("GetObject: %v", err)
			}
			data, err := io.ReadAll(obj)
			obj.Close()
			if err != nil || !bytes.Equal(data, body) {
				t.Fatalf("GetObject read %d bytes (%v), want %d", len(data), err, len(body))
			}
			var keys []string
			for o := range mc.ListObjects(ctx, "bkt", minio.ListObjectsOptions{Recursive: true}) {
				if o.Err != nil {
					t.Fatalf("ListObjects: %v", o.Err)
				}
				keys = append(keys, o.Key)
			}
			if len(keys) != 1 || keys[0] != "obj" {
				t.Errorf("ListObjects = %v", keys)
			}

			// 6 MiB in 5 MiB parts: a two-part multipart upload.
			big := bytes.Repeat([]byte{'m'}, 6<<20)
			info, err := mc.PutObject(ctx, "bkt", "big", bytes.NewReader(big), int64(len(big)), minio.PutObjectOptions{PartSize: 5 << 20})
			if err != nil || info.Size != int64(len(big)) {
				t.Fatalf("multipart PutObject = %v, %v", info, err)
			}
			st, err := mc.StatObject(ctx, "bkt", "big", minio.StatObjectOptions{})
			if err != nil || st.Size != int64(len(big)) {
				t.Fatalf("StatObject after multipart = %v, %v", st, err)
			}

			put, err := mc.PresignedPutObject(ctx, "bkt", "presigned", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPut, put.String(), strings.NewReader("via minio presign"))
			if resp := doWith(t, f.hs.Client(), req); resp.StatusCode != http.StatusOK {
				t.Fatalf("presigned PUT: %d %s", resp.StatusCode, resp.body)
			}
			get, err := mc.PresignedGetObject(ctx, "bkt", "presigned", time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			req, _ = http.NewRequest(http.MethodGet, get.String(), nil)
			if resp := doWith(t, f.hs.Client(), req); resp.StatusCode != http.StatusOK || resp.body != "via minio presign" {
				t.Fatalf("presigned GET: %d %q", resp.StatusCode, resp.body)
			}
		})
	}
}

// TestMinioRefusals checks minio-go sees S3's codes for refused requests.
func TestMinioRefusals(t *testing.T) {
	f := newFixture(t, false, Config{})
	ro := f.bucketWithAccount("rob", "reader", ReadOnly)
	other := f.bucketWithAccount("other", "someone-else", ReadWrite)
	ctx := context.Background()
	cases := []struct {
		rule string
		c    Credentials
		want string
	}{
		{"a read-only key cannot put", ro, "AccessDenied"},
		{"a wrong secret does not match", Credentials{ro.AccessKeyID, other.SecretAccessKey}, "SignatureDoesNotMatch"},
		{"an unknown key is unknown", Credentials{"MS3KUNKNOWNUNKNOWN00", ro.SecretAccessKey}, "InvalidAccessKeyId"},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			mc := f.minioClient(tc.c, false)
			_, err := mc.PutObject(ctx, "rob", "x", strings.NewReader("data"), 4, minio.PutObjectOptions{})
			if got := minioCode(err); got != tc.want {
				t.Errorf("PutObject: code %q (%v), want %s", got, err, tc.want)
			}
		})
	}
}

func doWith(t testing.TB, c *http.Client, req *http.Request) response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{StatusCode: resp.StatusCode, body: string(b), header: resp.Header}
}
