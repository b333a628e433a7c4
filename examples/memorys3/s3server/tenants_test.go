package s3server

// Tests that one tenant (a COSI account, whatever keys and buckets it was granted) holding
// every key and bucket it has against a bound leaves the other tenants served. Each test
// names the rule it holds; its comment says what an attacker did and what it cost the others.
// The sizes are shrunk to what a unit test affords, the mechanism is not.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"
)

// serveConfig is serveLimited with a whole Config, and the listener wrapped by wrap (nil:
// as it is).
func serveConfig(t *testing.T, cfg Config, wrap func(net.Listener) net.Listener) (*Server, string) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	if wrap != nil {
		lis = wrap(lis)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		_ = srv.Close()
	})
	return srv, addr
}

// grantOn creates the buckets that do not exist yet and grants account each of them in mode.
func grantOn(t *testing.T, srv *Server, account string, mode Mode, buckets ...string) Credentials {
	t.Helper()
	ctx := context.Background()
	modes := map[string]Mode{}
	for _, b := range buckets {
		if _, err := srv.Bucket(ctx, b); err != nil {
			if err := srv.CreateBucket(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		modes[b] = mode
	}
	acc, err := srv.GrantAccess(ctx, account, modes)
	if err != nil {
		t.Fatal(err)
	}
	return acc.Credentials
}

// countOf counts the elements named tag in an XML document.
func countOf(doc, tag string) int { return strings.Count(doc, "<"+tag+">") }

// TestListingPagesAreBoundedAsS3BoundsThem: GET /bucket?max-keys=0 listed the whole bucket
// in one answer (gofakes3 takes 0 for no limit): 60,000 objects of 1,000-byte keys made a
// 70.8 MB answer, held while the client read slowly, and 40 slow listings killed the process
// under a 4 GiB memory limit. S3 answers max-keys=0 with no key and never more than 1,000
// keys a page; so does memorys3 now.
func TestListingPagesAreBoundedAsS3BoundsThem(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	const stored = 1100
	for i := range stored {
		if _, err := f.srv.backend.PutObject("bkt", fmt.Sprintf("k%05d", i), map[string]string{}, strings.NewReader("x"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		rule      string
		query     string
		tag       string
		want      int
		truncated bool
	}{
		{"max-keys=0 answers no key", "max-keys=0", "Contents", 0, false},
		{"max-keys=0 answers no key in a v2 listing", "list-type=2&max-keys=0", "Contents", 0, false},
		{"max-keys=0 answers no common prefix", "max-keys=0&delimiter=0", "CommonPrefixes", 0, false},
		{"no max-keys answers a page of 1000 keys", "", "Contents", 1000, true},
		{"max-keys above 1000 answers 1000 keys", "max-keys=5000", "Contents", 1000, true},
		{"a v2 listing asking for 2^31-1 keys answers 1000", "list-type=2&max-keys=2147483647", "Contents", 1000, true},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			path := "/bkt"
			if tc.query != "" {
				path += "?" + tc.query
			}
			resp := do(t, signedRequest(t, f, c, http.MethodGet, path, nil, "", time.Now(), nil))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %.300s", resp.StatusCode, resp.body)
			}
			got := countOf(resp.body, tc.tag)
			truncated := strings.Contains(resp.body, "<IsTruncated>true</IsTruncated>")
			if got != tc.want || truncated != tc.truncated {
				t.Fatalf("a bucket of %d objects answered %d <%s> (truncated %v) in %d bytes, want %d (truncated %v)",
					stored, got, tc.tag, truncated, len(resp.body), tc.want, tc.truncated)
			}
			// The page was charged to the tenant while it was written, and is given back.
			if used := f.srv.budget.used.Load(); used != 0 {
				t.Fatalf("%d buffered bytes still held once the listing was answered", used)
			}
		})
	}
}

// TestABucketHoldsAtMostMaxObjectsPerBucket: nothing bounded the objects of a bucket, which
// made a bucket whose every listing scan is long cheap to build. A new object past
// MaxObjectsPerBucket is refused with 403 QuotaExceeded however it would be made (PUT,
// copy, completed upload); replacing or deleting an object is not, and another tenant's
// bucket is not touched by the bound.
func TestABucketHoldsAtMostMaxObjectsPerBucket(t *testing.T) {
	for _, stateDir := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "in a state directory"}[stateDir], func(t *testing.T) {
			cfg := Config{Limits: Limits{MaxObjectsPerBucket: 3}}
			if stateDir {
				cfg.StateDir = t.TempDir()
			}
			f := newFixture(t, false, cfg)
			attacker := f.awsClient(f.bucketWithAccount("bkt", "attacker", ReadWrite))
			victim := f.awsClient(secondTenant(t, f.srv))
			ctx := context.Background()
			put := func(c *s3.Client, bucket, key string) error {
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(key)})
				return err
			}
			for i := range 3 {
				if err := put(attacker, "bkt", fmt.Sprintf("k%d", i)); err != nil {
					t.Fatal(err)
				}
			}
			id := f.startUpload(f.keysOf("attacker"), "bkt", "mpu")
			part, err := attacker.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("mpu"), UploadId: aws.String(id),
				PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				rule string
				do   func() error
				code string
			}{
				{"a PUT of a new key is refused", func() error { return put(attacker, "bkt", "new") }, "QuotaExceeded"},
				{"a copy to a new key is refused", func() error {
					_, err := attacker.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("copy"), CopySource: aws.String("bkt/k0")})
					return err
				}, "QuotaExceeded"},
				{"a completed upload of a new key is refused", func() error {
					_, err := attacker.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mpu"), UploadId: aws.String(id),
						MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
					return err
				}, "QuotaExceeded"},
				{"a PUT replacing an object is served", func() error { return put(attacker, "bkt", "k1") }, ""},
				{"a copy replacing an object is served", func() error {
					_, err := attacker.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k2"), CopySource: aws.String("bkt/k0")})
					return err
				}, ""},
				{"another tenant's PUT in its own bucket is served", func() error { return put(victim, "other", "mine") }, ""},
				{"a PUT once an object is deleted is served", func() error {
					if _, err := attacker.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k0")}); err != nil {
						return err
					}
					return put(attacker, "bkt", "new")
				}, ""},
			} {
				err := tc.do()
				if got := apiCode(err); got != tc.code || (tc.code != "" && httpStatus(err) != http.StatusForbidden) {
					t.Errorf("%s: %v, want %q", tc.rule, err, tc.code)
				}
			}
			list, err := f.srv.backend.ListBucket("bkt", nil, gofakes3.ListBucketPage{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(list.Contents); n > 3 {
				t.Fatalf("the bucket holds %d objects, past MaxObjectsPerBucket of 3", n)
			}
		})
	}
}

// keysOf is the credentials of an account granted earlier in the fixture.
func (f *fixture) keysOf(account string) Credentials {
	f.t.Helper()
	acc, err := f.srv.Account(context.Background(), AccountID(account))
	if err != nil {
		f.t.Fatal(err)
	}
	return acc.Credentials
}

// TestKeysAreAtMostMaxKeyLength: a new object's key is at most MaxKeyLength bytes (S3's
// 1024 unless lowered), whichever way the object would be made; an object stored under a
// longer key before the bound was lowered is still read and deleted.
func TestKeysAreAtMostMaxKeyLength(t *testing.T) {
	const limit = 16
	f := newFixture(t, false, Config{Limits: Limits{MaxKeyLength: limit}})
	c := f.awsClient(f.bucketWithAccount("bkt", "rw", ReadWrite))
	long := strings.Repeat("k", limit+1)
	if _, err := f.srv.backend.PutObject("bkt", long+"-before", map[string]string{}, strings.NewReader("old"), 3, nil); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		rule string
		do   func() error
		code string
	}{
		{"a PUT of a key at the bound is served", func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(long[:limit]), Body: strings.NewReader("x")})
			return err
		}, ""},
		{"a PUT of a longer key is refused", func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(long), Body: strings.NewReader("x")})
			return err
		}, "KeyTooLongError"},
		{"a copy to a longer key is refused", func() error {
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String(long), CopySource: aws.String("bkt/" + long[:limit])})
			return err
		}, "KeyTooLongError"},
		{"an upload of a longer key is refused", func() error {
			_, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(long)})
			return err
		}, "KeyTooLongError"},
		{"an object stored under a longer key is read", func() error {
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(long + "-before")})
			if err == nil {
				out.Body.Close()
			}
			return err
		}, ""},
		{"an object stored under a longer key is deleted", func() error {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String(long + "-before")})
			return err
		}, ""},
	} {
		if err := tc.do(); apiCode(err) != tc.code {
			t.Errorf("%s: %v, want %q", tc.rule, err, tc.code)
		}
	}
}

// TestAPutReplacesTheMetadataOfTheObjectItReplaces: a PUT kept the replaced object's
// metadata under every name it did not set, so the 2,000-byte bound on a PUT's metadata
// bounded nothing across PUTs: 150 PUTs of 1.9 KB under new names survived the owner's
// overwrite, and the aws CLI could no longer HEAD or GET the object. S3 replaces all of it,
// and so does memorys3 now (a copy too); a copy whose metadata and its source's together
// pass the bound is refused, so no chain of copies grows an object's metadata either.
func TestAPutReplacesTheMetadataOfTheObjectItReplaces(t *testing.T) {
	for _, stateDir := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "in a state directory"}[stateDir], func(t *testing.T) {
			cfg := Config{}
			if stateDir {
				cfg.StateDir = t.TempDir()
			}
			f := newFixture(t, false, cfg)
			c := f.awsClient(f.bucketWithAccount("bkt", "rw", ReadWrite))
			ctx := context.Background()
			put := func(key string, meta map[string]string) error {
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: strings.NewReader("body"), Metadata: meta})
				return err
			}
			head := func(key string) map[string]string {
				t.Helper()
				out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
				if err != nil {
					t.Fatalf("HEAD %s: %v", key, err)
				}
				return out.Metadata
			}
			for i := range 40 {
				if err := put("k", map[string]string{fmt.Sprintf("m%d", i): strings.Repeat("v", 1900)}); err != nil {
					t.Fatal(err)
				}
			}
			if got := head("k"); len(got) != 1 || got["m39"] == "" {
				t.Fatalf("after 40 PUTs each under a new name, the object has %d metadata names, want the last PUT's 1", len(got))
			}
			if err := put("k", map[string]string{"shape": "round"}); err != nil {
				t.Fatal(err)
			}
			if got := head("k"); len(got) != 1 || got["shape"] != "round" {
				t.Fatalf("after a PUT setting shape only, metadata %v", got)
			}
			if err := put("src", map[string]string{"a": strings.Repeat("a", 1400)}); err != nil {
				t.Fatal(err)
			}
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), CopySource: aws.String("bkt/src"),
				Metadata: map[string]string{"b": strings.Repeat("b", 1400)}})
			if apiCode(err) != "MetadataTooLarge" {
				t.Fatalf("a copy whose metadata and its source's add up past the bound: %v, want MetadataTooLarge", err)
			}
			if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), CopySource: aws.String("bkt/src")}); err != nil {
				t.Fatal(err)
			}
			if got := head("k"); got["shape"] != "" || got["a"] == "" {
				t.Fatalf("a copy over an object kept the replaced object's metadata or lost its source's: %v", got)
			}
		})
	}
}

// TestWriteOnlyKeysGetNoAnswerThatDependsOnStoredObjects: a write-only key learned whether
// an object exists (If-None-Match: *, 412 or 200) and confirmed a guess of its content
// (If-Match with the guess's MD5 answered 200 on a right guess only): a salary read in four
// requests by a key the authorisation matrix promises no reads. A key without read on the
// bucket is now refused any request carrying a condition on what is stored, before the
// store is asked; a key that may read keeps its conditional answers.
func TestWriteOnlyKeysGetNoAnswerThatDependsOnStoredObjects(t *testing.T) {
	f := newFixture(t, false, Config{})
	wo := f.bucketWithAccount("bkt", "wo", WriteOnly)
	rw := grantOn(t, f.srv, "rw", ReadWrite, "bkt")
	const salary = "100000"
	sum := md5.Sum([]byte(salary))
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	since := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		rule   string
		key    Credentials
		method string
		hdr    http.Header
		status int
	}{
		{"If-None-Match: * on a PUT", wo, http.MethodPut, http.Header{"If-None-Match": {"*"}}, http.StatusForbidden},
		{"If-Match with the MD5 of a right guess on a PUT", wo, http.MethodPut, http.Header{"If-Match": {etag}}, http.StatusForbidden},
		{"If-Match with the MD5 of a wrong guess on a PUT", wo, http.MethodPut, http.Header{"If-Match": {`"00000000000000000000000000000000"`}}, http.StatusForbidden},
		{"If-Modified-Since on a PUT", wo, http.MethodPut, http.Header{"If-Modified-Since": {since}}, http.StatusForbidden},
		{"If-Unmodified-Since on a PUT", wo, http.MethodPut, http.Header{"If-Unmodified-Since": {since}}, http.StatusForbidden},
		{"If-Match on a DELETE", wo, http.MethodDelete, http.Header{"If-Match": {etag}}, http.StatusForbidden},
		{"a read-write key keeps If-None-Match: *", rw, http.MethodPut, http.Header{"If-None-Match": {"*"}}, http.StatusPreconditionFailed},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if _, err := f.awsClient(rw).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("salary"),
				Body: strings.NewReader(salary)}); err != nil {
				t.Fatal(err)
			}
			var body []byte
			if tc.method == http.MethodPut {
				body = []byte("guess")
			}
			resp := do(t, signedRequest(t, f, tc.key, tc.method, "/bkt/salary", body, "", time.Now(), tc.hdr))
			if resp.StatusCode != tc.status {
				t.Fatalf("answered %d %s, want %d", resp.StatusCode, s3Code([]byte(resp.body)), tc.status)
			}
			out, err := f.awsClient(rw).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("salary")})
			if err != nil {
				t.Fatalf("the object is gone: %v", err)
			}
			defer out.Body.Close()
			if got, _ := io.ReadAll(out.Body); string(got) != salary {
				t.Fatalf("the object now holds %q", got)
			}
		})
	}
}

// TestWriteOnlyKeysListNoUploadsButRunTheirOwn: a write-only key listed the uploads in
// progress of a bucket (the keys other writers were storing under) and their parts, whose
// ETags are the MD5s of the parts' bytes: a guess of another writer's data was confirmed
// offline, the oracle the conditional headers were closed for. Both listings now need read
// and write; a write-only key still creates, uploads to, completes and aborts its own
// uploads with the IDs and ETags it was answered.
func TestWriteOnlyKeysListNoUploadsButRunTheirOwn(t *testing.T) {
	f := newFixture(t, false, Config{})
	wo := f.awsClient(f.bucketWithAccount("bkt", "wo", WriteOnly))
	rw := f.awsClient(grantOn(t, f.srv, "rw", ReadWrite, "bkt"))
	ctx := context.Background()
	const salary = "salary=100000"
	up, err := rw.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("payroll/alice")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("payroll/alice"), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader(salary)}); err != nil {
		t.Fatal(err)
	}
	t.Run("a write-only key cannot list the uploads in progress", func(t *testing.T) {
		out, err := wo.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
		if err == nil || apiCode(err) != "AccessDenied" {
			var keys []string
			if out != nil {
				for _, u := range out.Uploads {
					keys = append(keys, aws.ToString(u.Key))
				}
			}
			t.Fatalf("ListMultipartUploads answered keys %q, err %v; want AccessDenied", keys, err)
		}
	})
	t.Run("a write-only key cannot list another writer's parts", func(t *testing.T) {
		out, err := wo.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String("payroll/alice"), UploadId: up.UploadId})
		if err == nil || apiCode(err) != "AccessDenied" {
			var etags []string
			if out != nil {
				for _, p := range out.Parts {
					etags = append(etags, aws.ToString(p.ETag))
				}
			}
			t.Fatalf("ListParts answered ETags %q, err %v; want AccessDenied", etags, err)
		}
	})
	t.Run("a write-only key runs its own uploads", func(t *testing.T) {
		for _, complete := range []bool{true, false} {
			mine, err := wo.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mine")})
			if err != nil {
				t.Fatal(err)
			}
			part, err := wo.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("mine"), UploadId: mine.UploadId,
				PartNumber: aws.Int32(1), Body: strings.NewReader("data")})
			if err != nil {
				t.Fatal(err)
			}
			if complete {
				_, err = wo.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mine"),
					UploadId: mine.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
			} else {
				_, err = wo.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mine"), UploadId: mine.UploadId})
			}
			if err != nil {
				t.Fatalf("complete %v: %v", complete, err)
			}
		}
	})
	t.Run("a read-write key lists both", func(t *testing.T) {
		if _, err := rw.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")}); err != nil {
			t.Fatal(err)
		}
		if _, err := rw.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String("payroll/alice"), UploadId: up.UploadId}); err != nil {
			t.Fatal(err)
		}
	})
}

// countingListener counts the bytes the server reads on each connection it accepts.
type countingListener struct {
	net.Listener
	accepted chan *countingConn
}

type countingConn struct {
	net.Conn
	n      atomic.Int64
	moved  chan struct{} // signalled after each read
	closed chan struct{}
	once   sync.Once
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c, moved: make(chan struct{}, 1), closed: make(chan struct{})}
	l.accepted <- cc
	return cc, nil
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	select {
	case c.moved <- struct{}{}:
	default:
	}
	return n, err
}

func (c *countingConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// waitRead waits until the server has read at least n bytes of c.
func (c *countingConn) waitRead(t *testing.T, n int64) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for c.n.Load() < n {
		select {
		case <-c.moved:
		case <-timeout:
			t.Fatalf("the server read %d bytes, want %d", c.n.Load(), n)
		}
	}
}

// TestAnonymousRequestsAreClosedWithoutLingering: a refusal reads on what is left of a
// small body for up to a second before it closes the connection (so that a client still
// sending sees the answer, not a reset), and did so for requests that failed
// authentication too: 1,500 connections declaring a small body and sending none made every
// tenant's request wait 4.4-4.9 s. The lingering is now for requests admitted among their
// tenant's requests in progress: the server reads nothing of the body of a request that
// failed authentication, or of one its tenant had no share left for, and closes its
// connection at once.
//
// Here MaxConnections is 4, so a tenant's share is one request in progress.
func TestAnonymousRequestsAreClosedWithoutLingering(t *testing.T) {
	lis := &countingListener{accepted: make(chan *countingConn, 16)}
	srv, addr := serveConfig(t, Config{Limits: Limits{MaxConnections: 4}}, func(l net.Listener) net.Listener { lis.Listener = l; return lis })
	if err := srv.CreateBucket(context.Background(), "bkt"); err != nil {
		t.Fatal(err)
	}
	noGrant := grantOn(t, srv, "elsewhere", ReadWrite, "other")
	full := grantOn(t, srv, "full", ReadWrite, "bkt")
	const declared = 100
	for _, tc := range []struct {
		rule     string
		key      Credentials
		hold     bool // another request of the key's tenant is in progress
		lingered bool
	}{
		{"a key the server does not know", Credentials{AccessKeyID: "MS3KNOBODYNOBODY0000", SecretAccessKey: "nothing"}, false, false},
		{"a known key with a wrong secret", Credentials{AccessKeyID: noGrant.AccessKeyID, SecretAccessKey: "wrong"}, false, false},
		{"a key whose tenant holds its share of requests", full, true, false},
		{"a key without a grant on the bucket", noGrant, false, true},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			if tc.hold {
				holder, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer holder.Close()
				<-lis.accepted
				if _, err := holder.Write(rawSigned(t, tc.key, http.MethodPut, addr, "/bkt/held", 10, http.Header{"Expect": {"100-continue"}})); err != nil {
					t.Fatal(err)
				}
				_ = holder.SetReadDeadline(answerDeadline(t))
				if resp, err := http.ReadResponse(bufio.NewReader(holder), nil); err != nil || resp.StatusCode != http.StatusContinue {
					t.Fatalf("the request holding the tenant's share: %v %v, want 100 Continue", resp, err)
				}
			}
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			server := <-lis.accepted
			head := rawSigned(t, tc.key, http.MethodPut, addr, "/bkt/k", declared, nil)
			if _, err := conn.Write(head); err != nil {
				t.Fatal(err)
			}
			server.waitRead(t, int64(len(head)))
			// The body follows once the server has the headers: whatever of it the server
			// reads, it reads lingering. A client closed at once may meet a closed
			// connection.
			_, _ = conn.Write(bytes.Repeat([]byte("b"), declared))
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, conn)
			select {
			case <-server.closed:
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not close the connection")
			}
			read := server.n.Load() - int64(len(head))
			switch {
			case tc.lingered && read != declared:
				t.Fatalf("the server read %d bytes of a refused admitted request's body of %d, want all of it (lingering)", read, declared)
			case !tc.lingered && read != 0:
				t.Fatalf("the server read %d bytes of the body of a request it did not admit, want none", read)
			}
		})
	}
}

// TestAnUnreadBodyIsDroppedWithinItsTenantsShare: a request whose operation reads no body
// (a HEAD, a GET) or that the store answered before reading it (a PUT with a malformed
// Content-MD5) left its declared body unread when its handler returned. net/http then read
// on, up to 256 KiB, before it sent the answer, waiting for bytes the client never sent
// until the read deadline: some 34 s in which the connection counted against no tenant's
// requests and was not quiet, so the limiter could not close it. One key with a share of
// two requests held all eight connections, and another tenant got no answer. What is left
// of such a body is now read, lingering, within the tenant's requests, and the connection
// closes at once after it.
//
// Here MaxConnections is 8 (a tenant's share: 2 requests in progress).
func TestAnUnreadBodyIsDroppedWithinItsTenantsShare(t *testing.T) {
	const slots = 8
	lis := &countingListener{accepted: make(chan *countingConn, slots)}
	srv, addr := serveConfig(t, Config{Limits: Limits{MaxConnections: slots}}, func(l net.Listener) net.Listener { lis.Listener = l; return lis })
	attacker := grantOn(t, srv, "attacker", ReadWrite, "bkt")
	victim := secondTenant(t, srv)
	for i := range slots {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		server := <-lis.accepted
		var head []byte
		switch i % 3 {
		case 0:
			head = rawSigned(t, attacker, http.MethodHead, addr, "/bkt", 1000, nil)
		case 1:
			head = rawSigned(t, attacker, http.MethodGet, addr, "/bkt?location", 1000, nil)
		default:
			head = rawSigned(t, attacker, http.MethodPut, addr, "/bkt/k", 1000, http.Header{"Content-Md5": {"bm90IGFuIE1ENQ=="}})
		}
		if _, err := conn.Write(head); err != nil {
			t.Fatal(err)
		}
		server.waitRead(t, int64(len(head)))
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(rawSigned(t, victim, http.MethodHead, addr, "/other", -1, nil)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(answerDeadline(t))
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodHead})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another tenant's HEAD while one key's %d answered requests declare bodies they never send (of %d connections): %v %v", slots, slots, resp, err)
	}
}

// TestAGetAnswerMovesItsDeadlineAsItIsRead: a GET's answer was one write of the whole object
// under one deadline (the idle timeout), so a reader slower than the object's size per idle
// timeout was cut off (a steady 1 MB/s reader at 42.5 of 67 MB, on every retry). The answer
// is now written in chunks, each moving the deadline: a slow but steady reader of any size
// reads the whole object.
//
// Here the idle timeout is 1 s and the reader takes about 4 s, reading 256 KiB every 40 ms.
func TestAGetAnswerMovesItsDeadlineAsItIsRead(t *testing.T) {
	const size = 24 << 20
	srv, addr, c := serveLimited(t, Limits{IdleTimeout: time.Second})
	if _, err := srv.backend.PutObject("bkt", "big", map[string]string{}, bytes.NewReader(bytes.Repeat([]byte("g"), size)), size, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.(*net.TCPConn).SetReadBuffer(32 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(rawSigned(t, c, http.MethodGet, addr, "/bkt/big", -1, nil)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %v %v", resp, err)
	}
	defer resp.Body.Close()
	tick := time.NewTicker(40 * time.Millisecond)
	defer tick.Stop()
	buf := make([]byte, 256<<10)
	var got int64
	for range tick.C {
		n, err := io.ReadFull(resp.Body, buf)
		got += int64(n)
		if err != nil {
			break
		}
	}
	if got != size {
		t.Fatalf("a steady reader of %d KiB a second got %d of %d bytes", (256<<10)*25>>10, got, size)
	}
}

// TestABodyKeepsItsRateAfterItsGrace: a body's minimum rate was checked only at its final
// deadline (the idle timeout plus its declared length at MinBodyRate), so one byte every 20 s
// held a 256 MiB PUT's connection (and the body bytes it had sent) about 69 minutes. The
// rate is now enforced over each interval once the grace of the idle timeout has passed: a
// body that trickles is cut off after its grace and an interval, whatever it declared, and
// gives back what it held, while one that keeps the rate arrives whole however long it takes.
//
// Here the idle timeout (the grace) is 1 s, the interval too, and the rate 64 KiB/s: the
// trickler declares 200 MiB (a final deadline 53 minutes away), sends 128 KiB and then a
// byte every 300 ms; the steady client sends 1.5 MiB at 640 KiB/s.
func TestABodyKeepsItsRateAfterItsGrace(t *testing.T) {
	const idle = time.Second
	srv, addr, c := serveLimited(t, Limits{IdleTimeout: idle})
	t.Run("a body that trickles after its grace is cut off", func(t *testing.T) {
		conn := holdBody(t, addr, c, "trickle", 200<<20, 128<<10)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(idle * 3 / 10)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("a")); err != nil {
						return
					}
				}
			}
		}()
		defer func() { close(stop); <-done }()
		// The server closes the connection with the trickle's last bytes unread: a reset.
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		if _, err := io.Copy(io.Discard, conn); isTimeout(err) {
			t.Fatalf("the server did not close the connection of a body trickling after its grace: %v", err)
		}
		// The handler has returned when the connection closes: what the body held is back.
		if used := srv.budget.used.Load(); used != 0 {
			t.Fatalf("%d buffered bytes still held once the trickled body's connection closed", used)
		}
	})
	t.Run("a body that keeps the rate arrives whole", func(t *testing.T) {
		const size = 1536 << 10
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write(rawSigned(t, c, http.MethodPut, addr, "/bkt/steady", size, nil)); err != nil {
			t.Fatal(err)
		}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		chunk := bytes.Repeat([]byte("s"), 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			<-tick.C
			if _, err := conn.Write(chunk); err != nil {
				t.Fatalf("after %d bytes: %v", sent, err)
			}
		}
		_ = conn.SetReadDeadline(answerDeadline(t))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("a body at ten times the minimum rate: %v %v", resp, err)
		}
		if obj, err := srv.backend.HeadObject("bkt", "steady"); err != nil || obj.Size != size {
			t.Fatalf("stored: %v %v", obj, err)
		}
	})
}

// isTimeout says whether err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestOneTenantsKeysLeaveRequestSlotsToOthers: each key's requests in progress were bounded
// to a quarter of MaxConnections, so four keys (a tenant granted four accesses) held every
// connection with requests in progress, and another tenant got no answer for 100 s. A
// tenant now takes a request slot only while as many stay free as it would then hold (and
// within its own bound): its keys fill at most part of the server, and another tenant's
// request is served.
//
// Here MaxConnections is 8 and the attacker's four keys each try four PUTs that wait for
// their body.
func TestOneTenantsKeysLeaveRequestSlotsToOthers(t *testing.T) {
	const slots = 8
	srv, addr, _ := serveLimited(t, Limits{MaxConnections: slots})
	victim := secondTenant(t, srv)
	inProgress := 0
	for k := range 4 {
		key := grantOn(t, srv, fmt.Sprintf("attacker%d", k), ReadWrite, "bkt", fmt.Sprintf("bkt%d", k))
		for i := range 4 {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			if _, err := conn.Write(rawSigned(t, key, http.MethodPut, addr, fmt.Sprintf("/bkt/slow%d-%d", k, i), 1000, http.Header{"Expect": {"100-continue"}})); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(answerDeadline(t))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			switch {
			case err != nil:
				t.Fatalf("attacker key %d, request %d: %v", k, i, err)
			case resp.StatusCode == http.StatusContinue:
				inProgress++
			case resp.StatusCode != http.StatusServiceUnavailable || codeOf(t, resp) != "SlowDown" || !resp.Close:
				t.Fatalf("attacker key %d, request %d past its share: %d, want 503 SlowDown closing the connection", k, i, resp.StatusCode)
			}
		}
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(rawSigned(t, victim, http.MethodHead, addr, "/other", -1, nil)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(answerDeadline(t))
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodHead})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("another tenant's HEAD while four keys of one tenant hold %d requests in progress (of %d connections): %v %v", inProgress, slots, resp, err)
	}
}

// TestGetCopiesAreChargedToTheReadersShare: with a state directory each GET holds a copy of
// the object until its answer is sent, charged to the server's budget of buffered bytes but
// to no tenant's share: one key holding fewer than seven unread GETs made 35 of another
// tenant's 40 PUTs fail with 503 SlowDown, and took the budget again whenever the idle
// timeout freed it. The copies now count against the reader's share: its GET past it is
// refused, and the other tenant's PUT is served.
//
// Here the budget is 32 MiB and the object 8 MiB (larger than what the sockets buffer, so
// an unread answer holds its copy); the attacker opens four GETs and reads none.
func TestGetCopiesAreChargedToTheReadersShare(t *testing.T) {
	const size = 8 << 20
	f := newFixture(t, false, Config{StateDir: t.TempDir(), Limits: Limits{MaxObjectSize: 2 << 20, MaxBufferedBytes: 32 << 20}})
	attacker := f.bucketWithAccount("bkt", "attacker", ReadWrite)
	victim := secondTenant(t, f.srv)
	if _, err := f.srv.backend.PutObject("bkt", "big", map[string]string{}, bytes.NewReader(bytes.Repeat([]byte("b"), size)), size, nil); err != nil {
		t.Fatal(err)
	}
	addr := f.hs.Listener.Addr().String()
	held, refused := 0, 0
	for range 4 {
		if unreadGet(t, addr, attacker, "/bkt/big") {
			held++
		} else {
			refused++
		}
	}
	_, err := f.awsClient(victim).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k"),
		Body: bytes.NewReader(bytes.Repeat([]byte("v"), 1<<20))})
	if err != nil {
		t.Fatalf("another tenant's 1 MiB PUT while one key holds %d unread GETs of %d MiB (%d refused): %v (%s)", held, size>>20, refused, err, apiCode(err))
	}
}

// TestGetAnswersHoldTheirObjectWithinTheReadersShare: without a state directory a GET's
// answer reads the stored bytes without a copy, and keeps them while it is sent, whatever
// replaces the object meanwhile. One key replaced an object of 32 MiB eight times, in a
// bucket that may hold one object, leaving a GET of each version unread: the live heap grew
// by 256 MiB while the budget counted nothing, and a tenant's 64 requests could pin 64
// objects of the largest size. What a GET's answer holds is now charged to the reader's
// share and the budget until it is sent, as a state directory's copies are: past the share
// the GET is refused, and another tenant's PUT is served.
//
// Here the budget is 32 MiB and each version 8 MiB; the attacker opens a GET of each of
// eight versions and reads none.
func TestGetAnswersHoldTheirObjectWithinTheReadersShare(t *testing.T) {
	const size = 8 << 20
	f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: 2 << 20, MaxBufferedBytes: 32 << 20, MaxObjectsPerBucket: 1}})
	attacker := f.bucketWithAccount("bkt", "attacker", ReadWrite)
	victim := secondTenant(t, f.srv)
	addr := f.hs.Listener.Addr().String()
	held, refused := 0, 0
	for i := range 8 {
		if _, err := f.srv.backend.PutObject("bkt", "big", map[string]string{}, bytes.NewReader(bytes.Repeat([]byte{byte(i)}, size)), size, nil); err != nil {
			t.Fatal(err)
		}
		if unreadGet(t, addr, attacker, "/bkt/big") {
			held++
		} else {
			refused++
		}
	}
	if pinned, share := int64(held)*size, f.srv.limits.MaxBufferedBytesPerTenant; pinned > share {
		t.Fatalf("one key holds unread GETs of %d versions replaced since (%d MiB, its share %d MiB, %d refused), while the budget counts %d bytes",
			held, pinned>>20, share>>20, refused, f.srv.budget.used.Load())
	}
	_, err := f.awsClient(victim).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k"),
		Body: bytes.NewReader(bytes.Repeat([]byte("v"), 1<<20))})
	if err != nil {
		t.Fatalf("another tenant's 1 MiB PUT while one key holds %d unread GETs of %d MiB (%d refused): %v (%s)", held, size>>20, refused, err, apiCode(err))
	}
}

// TestOneAccountsBucketsHoldAtMostItsShareOfUploads: MaxUploadsPerBucket and
// MaxPartBytesPerBucket bounded a bucket, not an account: one account granted ten buckets
// took all 10,000 uploads (or all part bytes), and every other tenant's
// CreateMultipartUpload (or UploadPart) was 503 for up to an hour. An account now holds at
// most its share of each across all its buckets, and another tenant's upload goes on.
//
// Here the server holds 12 uploads (4 a bucket) and 8 MiB of parts (2 MiB a bucket), and
// the attacker is granted four buckets.
func TestOneAccountsBucketsHoldAtMostItsShareOfUploads(t *testing.T) {
	const mib = 1 << 20
	buckets := []string{"bk1", "bk2", "bk3", "bk4"}
	t.Run("uploads", func(t *testing.T) {
		f := newFixture(t, false, Config{Limits: Limits{MaxUploads: 12, MaxUploadsPerBucket: 4}})
		attacker := f.awsClient(grantOn(t, f.srv, "attacker", WriteOnly, buckets...))
		victim := f.awsClient(secondTenant(t, f.srv))
		ctx := context.Background()
		held := 0
		for _, b := range buckets {
			for range 4 {
				if _, err := attacker.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("hoard")}); err != nil {
					if apiCode(err) != "SlowDown" {
						t.Fatal(err)
					}
					continue
				}
				held++
			}
		}
		if _, err := victim.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("other"), Key: aws.String("mine")}); err != nil {
			t.Fatalf("another tenant's CreateMultipartUpload while one account holds %d uploads in %d buckets: %v (%s)", held, len(buckets), err, apiCode(err))
		}
	})
	t.Run("part bytes", func(t *testing.T) {
		f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: mib, MaxPartBytes: 8 * mib}})
		creds := grantOn(t, f.srv, "attacker", WriteOnly, buckets...)
		victim := secondTenant(t, f.srv)
		held := 0
		for _, b := range buckets {
			id := f.startUpload(creds, b, "hoard")
			for n := int32(1); n <= 2; n++ {
				if err := uploadPartOf(f, creds, b, "hoard", id, n, mib-partOverhead); err != nil {
					if apiCode(err) != "SlowDown" {
						t.Fatal(err)
					}
					continue
				}
				held++
			}
		}
		vid := f.startUpload(victim, "other", "mine")
		if err := uploadPartOf(f, victim, "other", "mine", vid, 1, mib/2); err != nil {
			t.Fatalf("another tenant's part while one account holds %d parts of 1 MiB in %d buckets: %v (%s)", held, len(buckets), err, apiCode(err))
		}
	})
}

// TestFairSharesLeaveTheNextTenantRoom takes each bound's shares greedily, tenant after
// tenant, as a party holding many accounts would: no tenant passes its own bound or holds more
// than about half of what the tenants before it left, and each next tenant still gets what it
// asks while that is no more than half of what is left and the floor (a request, an upload, a
// megabyte: until nothing at all is left). With the defaults, after four greedy tenants a
// fifth gets 16 connections, 32 MiB of buffered bytes, 600 uploads and 15 MiB of parts.
func TestFairSharesLeaveTheNextTenantRoom(t *testing.T) {
	d, err := Limits{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bound             string
		limit, cap, floor int64
		unit              int64 // what one take asks for
		fifthGets         int64 // at least, after four greedy tenants
	}{
		{"requests of the connections", int64(d.MaxConnections), int64(d.MaxRequestsPerTenant), 1, 1, 16},
		{"buffered bytes", d.MaxBufferedBytes, d.MaxBufferedBytesPerTenant, byteFloor, shareStep, 32 << 20},
		{"uploads", int64(d.MaxUploads), int64(d.MaxUploadsPerTenant), 1, 1, 600},
		{"part bytes", d.MaxPartBytes, d.MaxPartBytesPerTenant, byteFloor, 5 << 20, 15 << 20},
	} {
		t.Run(tc.bound, func(t *testing.T) {
			var used int64
			for i := 1; used < tc.limit; i++ {
				free := tc.limit - used
				var held int64
				for fair(tc.limit, used, held, tc.unit, tc.cap, tc.floor) {
					held += tc.unit
					used += tc.unit
				}
				switch {
				case held > tc.cap || used > tc.limit:
					t.Fatalf("tenant %d holds %d (its bound %d), all %d of %d", i, held, tc.cap, used, tc.limit)
				case held > (free+tc.floor)/2+tc.unit:
					t.Fatalf("tenant %d holds %d of the %d the others left", i, held, free)
				case held == 0 && 2*tc.unit <= free+tc.floor:
					t.Fatalf("tenant %d gets nothing of the %d the others left", i, free)
				case i == 5 && held < tc.fifthGets:
					t.Fatalf("after four greedy tenants a fifth gets %d, want at least %d", held, tc.fifthGets)
				}
				if held == 0 {
					break
				}
			}
		})
	}
}

// TestDeleteObjectsAnswersAreChargedUntilRead: the answer to a DeleteObjects names every key
// it deleted, escaped, and is held whole until the client has read it. A key of quotes is
// five times longer escaped, so an 8 MB document of 1,000 keys made a 40 MB answer; one key
// left four such answers unread and the live heap grew by 184 MB while the budget counted
// 33 MB (the documents). The answer is now charged to its tenant, at the most the document
// can make it, until it is written.
func TestDeleteObjectsAnswersAreChargedUntilRead(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	var b strings.Builder
	b.WriteString("<Delete>")
	for range maxDeleteKeys {
		b.WriteString("<Object><Key>" + strings.Repeat(`"`, 8000) + "</Key></Object>")
	}
	b.WriteString("</Delete>")
	doc := []byte(b.String())
	addr := f.hs.Listener.Addr().String()
	// The answer is far larger than what the sockets buffer, so the server holds it while
	// the client reads nothing.
	conn := dialSmallBuffer(t, addr)
	if _, err := conn.Write(append(rawSigned(t, c, http.MethodPost, addr, "/bkt?delete", int64(len(doc)), nil), doc...)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(answerDeadline(t))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	held := f.srv.budget.used.Load() // the answer has begun and is not read yet
	answer, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if held < int64(len(answer)) {
		t.Fatalf("an unread answer of %d bytes (to a document of %d) was held while the budget counted %d", len(answer), len(doc), held)
	}
	if used := f.srv.budget.used.Load(); used != 0 {
		t.Fatalf("%d buffered bytes still counted once the answer was read", used)
	}
}

// TestDeleteObjectsTakesAtMostAThousandKeys: S3 takes at most 1,000 keys in one DeleteObjects;
// gofakes3 took any number, so an 8 MiB document of short keys decoded into some 280,000 of
// them (about 20 MB, charged to nothing) and deleted them under the store's lock. A document
// naming more is now refused with MalformedXML before it is decoded whole, and deletes nothing.
func TestDeleteObjectsTakesAtMostAThousandKeys(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	for i := range maxDeleteKeys + 1 {
		if _, err := f.srv.backend.PutObject("bkt", fmt.Sprintf("k%04d", i), map[string]string{}, strings.NewReader("x"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		rule   string
		keys   int
		status int
		left   int
	}{
		{"a document of 1001 keys is refused", maxDeleteKeys + 1, http.StatusBadRequest, maxDeleteKeys + 1},
		{"a document of 1000 keys is served", maxDeleteKeys, http.StatusOK, 1},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			resp := do(t, signedRequest(t, f, c, http.MethodPost, "/bkt?delete", deleteDoc(tc.keys), "", time.Now(), nil))
			if resp.StatusCode != tc.status || (tc.status != http.StatusOK && s3Code([]byte(resp.body)) != "MalformedXML") {
				t.Fatalf("answered %d %s, want %d", resp.StatusCode, s3Code([]byte(resp.body)), tc.status)
			}
			list, err := f.srv.backend.ListBucket("bkt", nil, gofakes3.ListBucketPage{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Contents) != tc.left {
				t.Fatalf("%d objects left, want %d", len(list.Contents), tc.left)
			}
		})
	}
}

// dialSmallBuffer connects to addr with a 16 KiB receive buffer, closed when the test ends, so
// that an answer the client does not read stays on the server.
func dialSmallBuffer(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	tc := conn.(*net.TCPConn)
	if err := tc.SetReadBuffer(16 << 10); err != nil {
		t.Fatal(err)
	}
	return tc
}

// answerDeadline bounds a read that waits for an answer the test expects. It only stops a hung
// test: the answer's own event ends the wait. Under -race on two busy cores, decoding a large
// document takes tens of seconds, so the bound is the test's own deadline, or two minutes.
func answerDeadline(t *testing.T) time.Time {
	limit := time.Now().Add(2 * time.Minute)
	if d, ok := t.Deadline(); ok && d.Before(limit) {
		return d
	}
	return limit
}

// unreadGet sends key's GET of path on a connection of its own, with a small receive buffer,
// and reads only the answer's head, so the body stays unsent on the server. It reports true for
// a 200 and false for a 503 SlowDown; any other answer fails the test.
func unreadGet(t *testing.T, addr string, key Credentials, path string) bool {
	t.Helper()
	conn := dialSmallBuffer(t, addr)
	if _, err := conn.Write(rawSigned(t, key, http.MethodGet, addr, path, -1, nil)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(answerDeadline(t))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	switch {
	case err != nil:
		t.Fatal(err)
	case resp.StatusCode == http.StatusOK:
		return true
	case resp.StatusCode == http.StatusServiceUnavailable && codeOf(t, resp) == "SlowDown":
		return false
	}
	t.Fatalf("GET %s: %d", path, resp.StatusCode)
	return false
}
