package s3server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// signedRequest builds a request signed by aws-sdk-go-v2's signer at time at, with payload
// hash payload ("" means the hex SHA-256 of body).
func signedRequest(t testing.TB, f *fixture, c Credentials, method, path string, body []byte, payload string, at time.Time, hdr http.Header) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, f.hs.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(body) == 0 {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if payload == "" {
		sum := sha256.Sum256(body)
		payload = hex.EncodeToString(sum[:])
	}
	req.Header.Set("X-Amz-Content-Sha256", payload)
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		req, payload, "s3", DefaultRegion, at, func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestRefusedRequests checks the authentication failures answer 403 (or 400 for a body that
// is not what was signed) with S3's code, and that a refused write stores nothing.
func TestRefusedRequests(t *testing.T) {
	f := newFixture(t, false, Config{})
	mine := f.bucketWithAccount("mine", "me", ReadWrite)
	theirs := f.bucketWithAccount("theirs", "them", ReadWrite)
	revoked := f.bucketWithAccount("gone", "revoked", ReadWrite)
	if err := f.srv.RevokeAccess(context.Background(), AccountID("revoked")); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := []byte("payload")
	cases := []struct {
		rule   string
		req    func() *http.Request
		status int
		code   string
	}{
		{"an unsigned request is denied", func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, f.hs.URL+"/mine/k", nil)
			return r
		}, 403, "AccessDenied"},
		{"a wrong secret does not match", func() *http.Request {
			return signedRequest(t, f, Credentials{mine.AccessKeyID, theirs.SecretAccessKey}, http.MethodGet, "/mine/k", nil, "", now, nil)
		}, 403, "SignatureDoesNotMatch"},
		{"an unknown access key is unknown", func() *http.Request {
			return signedRequest(t, f, Credentials{"MS3KNOSUCHKEY0000000", mine.SecretAccessKey}, http.MethodGet, "/mine/k", nil, "", now, nil)
		}, 403, "InvalidAccessKeyId"},
		{"a revoked key is unknown at once", func() *http.Request {
			return signedRequest(t, f, revoked, http.MethodGet, "/gone/k", nil, "", now, nil)
		}, 403, "InvalidAccessKeyId"},
		{"a tampered signature does not match", func() *http.Request {
			r := signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now, nil)
			a := r.Header.Get("Authorization")
			last := a[len(a)-1]
			flip := byte('0')
			if last == '0' {
				flip = '1'
			}
			r.Header.Set("Authorization", a[:len(a)-1]+string(flip))
			return r
		}, 403, "SignatureDoesNotMatch"},
		{"a signed header changed after signing does not match", func() *http.Request {
			r := signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now, http.Header{"Range": {"bytes=0-1"}})
			r.Header.Set("Range", "bytes=0-100")
			return r
		}, 403, "SignatureDoesNotMatch"},
		{"a path changed after signing does not match", func() *http.Request {
			r := signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now, nil)
			r.URL.Path = "/theirs/k"
			return r
		}, 403, "SignatureDoesNotMatch"},
		{"a key cannot touch another account's bucket", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodGet, "/theirs/k", nil, "", now, nil)
		}, 403, "AccessDenied"},
		{"a key cannot write to another account's bucket", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodPut, "/theirs/k", body, "", now, nil)
		}, 403, "AccessDenied"},
		{"a clock 16 minutes behind is too skewed", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now.Add(-16*time.Minute), nil)
		}, 403, "RequestTimeTooSkewed"},
		{"a clock 16 minutes ahead is too skewed", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now.Add(16*time.Minute), nil)
		}, 403, "RequestTimeTooSkewed"},
		{"a bucket cannot be created through S3", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodPut, "/newbucket", nil, "", now, nil)
		}, 403, "AccessDenied"},
		{"a granted bucket cannot be deleted through S3", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodDelete, "/mine", nil, "", now, nil)
		}, 403, "AccessDenied"},
		{"a bucket's versioning cannot be changed through S3: memorys3 does not offer it", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodPut, "/mine?versioning", []byte("<VersioningConfiguration/>"), "", now, nil)
		}, 501, "NotImplemented"},
		{"a body other than the signed one is refused", func() *http.Request {
			r := signedRequest(t, f, mine, http.MethodPut, "/mine/tampered", body, "", now, nil)
			r.Body = io.NopCloser(bytes.NewReader([]byte("PAYLOAD")))
			return r
		}, 400, "XAmzContentSHA256Mismatch"},
		{"a large body other than the signed one is refused", func() *http.Request {
			big := bytes.Repeat([]byte("z"), 1<<20) // hashed on the hashing goroutine
			r := signedRequest(t, f, mine, http.MethodPut, "/mine/tampered", big, "", now, nil)
			big[len(big)/2] = 'y'
			r.Body = io.NopCloser(bytes.NewReader(big))
			return r
		}, 400, "XAmzContentSHA256Mismatch"},
		{"a wrong checksum header is refused", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodPut, "/mine/tampered", body, "", now,
				http.Header{"X-Amz-Checksum-Crc32": {base64.StdEncoding.EncodeToString([]byte{1, 2, 3, 4})}})
		}, 400, "BadDigest"},
		{"an x-amz header added after signing is refused", func() *http.Request {
			r := signedRequest(t, f, mine, http.MethodPut, "/mine/copy", nil, "", now, nil)
			r.Header.Set("X-Amz-Copy-Source", "/theirs/k")
			return r
		}, 403, "AccessDenied"},
		{"a session token is refused", func() *http.Request {
			return signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now, http.Header{"X-Amz-Security-Token": {"t"}})
		}, 400, "InvalidToken"},
		{"a scope for another region is malformed", func() *http.Request {
			r := signedRequest(t, f, mine, http.MethodGet, "/mine/k", nil, "", now, nil)
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/us-east-1/", "/eu-west-1/", 1))
			return r
		}, 400, "AuthorizationHeaderMalformed"},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			resp := do(t, tc.req())
			if resp.StatusCode != tc.status || !strings.Contains(resp.body, "<Code>"+tc.code+"</Code>") {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, resp.body, tc.status, tc.code)
			}
		})
	}
	// Nothing refused was stored.
	got, err := f.awsClient(mine).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("mine")})
	if err != nil || len(got.Contents) != 0 {
		t.Errorf("bucket after refused writes = %v, %v; want empty", got, err)
	}
}

// TestSkewedServerClockRefusesSDK: the SDK signs with the real clock; a server clock 20
// minutes ahead must refuse it.
func TestSkewedServerClockRefusesSDK(t *testing.T) {
	f := newFixture(t, false, Config{})
	creds := f.bucketWithAccount("bkt", "a", ReadWrite)
	f.clock.Advance(20 * time.Minute)
	_, err := f.awsClient(creds).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	if apiCode(err) != "RequestTimeTooSkewed" || httpStatus(err) != http.StatusForbidden {
		t.Fatalf("got %v, want RequestTimeTooSkewed 403", err)
	}
}

// sha256Hasher adapts crypto/sha256 to the hasher minio-go's streaming signer takes.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

// TestTamperedStreams builds aws-chunked bodies with minio-go's signer and tampers with
// them: a changed chunk byte, a changed trailer checksum, and a body cut short.
func TestTamperedStreams(t *testing.T) {
	f := newFixture(t, false, Config{})
	creds := f.bucketWithAccount("bkt", "a", ReadWrite)
	data := bytes.Repeat([]byte("x"), 100000) // two chunks
	crc := crc32.NewIEEE()
	crc.Write(data)
	goodCRC := base64.StdEncoding.EncodeToString(crc.Sum(nil))

	// build returns a signed streaming PUT and its encoded body.
	build := func(trailer http.Header) (*http.Request, []byte) {
		req, _ := http.NewRequest(http.MethodPut, f.hs.URL+"/bkt/stream", bytes.NewReader(data))
		req.Trailer = trailer
		req = signer.StreamingSignV4(req, creds.AccessKeyID, creds.SecretAccessKey, "", DefaultRegion, int64(len(data)), time.Now().UTC(), sha256Hasher{sha256.New()})
		enc, err := io.ReadAll(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		return req, enc
	}
	cases := []struct {
		rule    string
		trailer http.Header
		tamper  func([]byte) []byte
		status  int
		code    string
	}{
		{"an untampered signed stream is stored", nil, func(b []byte) []byte { return b }, 200, ""},
		{"an untampered signed stream with a signed trailer is stored", http.Header{"X-Amz-Checksum-Crc32": {goodCRC}}, func(b []byte) []byte { return b }, 200, ""},
		{"a changed byte fails its chunk signature", nil, func(b []byte) []byte {
			i := bytes.Index(b, []byte("xxxx"))
			b[i] = 'y'
			return b
		}, 403, "SignatureDoesNotMatch"},
		{"a changed trailer value fails the trailer signature", http.Header{"X-Amz-Checksum-Crc32": {goodCRC}}, func(b []byte) []byte {
			return bytes.Replace(b, []byte(goodCRC), []byte("AAAAAA=="), 1)
		}, 403, "SignatureDoesNotMatch"},
		{"a wrong checksum in a signed trailer is a bad digest", http.Header{"X-Amz-Checksum-Crc32": {"AAAAAA=="}}, func(b []byte) []byte { return b }, 400, "BadDigest"},
		{"a stream cut before its final chunk is incomplete", nil, func(b []byte) []byte {
			return b[:len(b)-120]
		}, 400, "IncompleteBody"},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			req, enc := build(tc.trailer)
			enc = tc.tamper(enc)
			req.Body = io.NopCloser(bytes.NewReader(enc))
			req.ContentLength = int64(len(enc))
			resp := do(t, req)
			if resp.StatusCode != tc.status || (tc.code != "" && !strings.Contains(resp.body, "<Code>"+tc.code+"</Code>")) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.body, tc.status, tc.code)
			}
			out, err := f.awsClient(creds).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("stream")})
			if tc.status == 200 {
				if err != nil {
					t.Fatalf("GetObject: %v", err)
				}
				got, _ := io.ReadAll(out.Body)
				out.Body.Close()
				if !bytes.Equal(got, data) {
					t.Errorf("stored %d bytes, want the %d decoded ones", len(got), len(data))
				}
				if _, err := f.awsClient(creds).DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("stream")}); err != nil {
					t.Fatal(err)
				}
			} else if apiCode(err) != "NoSuchKey" {
				t.Errorf("after a refused stream GetObject = %v, want NoSuchKey", err)
			}
		})
	}
}

// TestListBucketsShowsOnlyGrantedBuckets: ListBuckets answers the key's buckets, whatever
// the mode, and no others.
func TestListBucketsShowsOnlyGrantedBuckets(t *testing.T) {
	f := newFixture(t, false, Config{})
	ctx := context.Background()
	for _, b := range []string{"aaa", "bbb", "ccc"} {
		if err := f.srv.CreateBucket(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	acc, err := f.srv.GrantAccess(ctx, "x", map[string]Mode{"aaa": ReadOnly, "ccc": WriteOnly})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.awsClient(acc.Credentials).ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, aws.ToString(b.Name))
	}
	if strings.Join(names, ",") != "aaa,ccc" {
		t.Errorf("ListBuckets = %v, want [aaa ccc]", names)
	}
}
