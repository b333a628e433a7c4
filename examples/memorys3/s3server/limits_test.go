package s3server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7/pkg/signer"
)

// rawSigned is a request signed by aws-sdk-go-v2's signer whose head is written by hand, so
// that it can declare a length it never sends.
func rawSigned(t testing.TB, c Credentials, method, host, target string, declared int64, hdr http.Header) []byte {
	t.Helper()
	u, err := url.Parse("http://" + host + target)
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: method, URL: u, Host: host, Header: http.Header{}, ContentLength: declared}
	for k, v := range hdr {
		req.Header[k] = v
	}
	payload := req.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = "UNSIGNED-PAYLOAD"
		req.Header.Set("X-Amz-Content-Sha256", payload)
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		req, payload, "s3", DefaultRegion, time.Now(), func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), host)
	for k, vs := range req.Header {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if declared >= 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", declared)
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// exchange writes head and body on a new connection to addr, half-closes it when close is
// set, and reads one response.
func exchange(t testing.TB, addr string, head, body []byte, closeWrite bool) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(append(head, body...)); err != nil {
		t.Fatal(err)
	}
	if closeWrite {
		if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func codeOf(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	return s3Code(b)
}

// TestDeclaredSizesBeyondTheLimitAreRefusedUnread: a PUT, an aws-chunked PUT and a part that
// declare ten terabytes and send three bytes get EntityTooLarge before their body is read,
// and the server goes on serving (before the limit, gofakes3 allocated the declared size and
// the process died, taking the COSI socket with it).
func TestDeclaredSizesBeyondTheLimitAreRefusedUnread(t *testing.T) {
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "a", ReadWrite)
	addr := f.hs.Listener.Addr().String()
	const huge = 10_000_000_000_000
	chunked := http.Header{"X-Amz-Content-Sha256": {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}, "Content-Encoding": {"aws-chunked"},
		"X-Amz-Decoded-Content-Length": {strconv.Itoa(huge)}}
	cases := []struct {
		rule     string
		target   string
		declared int64
		hdr      http.Header
	}{
		{"a PUT declaring ten terabytes", "/bkt/big", huge, nil},
		{"an aws-chunked PUT decoding to ten terabytes", "/bkt/big", 200, chunked},
		{"a part declaring ten terabytes", "/bkt/big?partNumber=1&uploadId=x", huge, nil},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			resp := exchange(t, addr, rawSigned(t, c, http.MethodPut, addr, tc.target, tc.declared, tc.hdr), []byte("abc"), false)
			if code := codeOf(t, resp); resp.StatusCode != http.StatusBadRequest || code != "EntityTooLarge" {
				t.Fatalf("got %d %s, want 400 EntityTooLarge", resp.StatusCode, code)
			}
		})
	}
	if _, err := f.awsClient(c).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("after"),
		Body: strings.NewReader("still serving")}); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}
}

// TestShortBodiesAllocateWhatArrived: a PUT that declares 512 MiB (within the limit) and sends
// three bytes costs the server what arrived, not what was declared, and is IncompleteBody.
func TestShortBodiesAllocateWhatArrived(t *testing.T) {
	f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: 1 << 30, MaxBufferedBytes: 3 << 30}})
	c := f.bucketWithAccount("bkt", "a", ReadWrite)
	addr := f.hs.Listener.Addr().String()
	const declared = 512 << 20
	for _, tc := range []struct {
		rule   string
		target string
	}{
		{"an object", "/bkt/short"},
		{"a part", "/bkt/short?partNumber=1&uploadId=" + url.QueryEscape(f.startUpload(c, "bkt", "short"))},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			resp := exchange(t, addr, rawSigned(t, c, http.MethodPut, addr, tc.target, declared, nil), []byte("abc"), true)
			code := codeOf(t, resp)
			runtime.ReadMemStats(&after)
			if resp.StatusCode != http.StatusBadRequest || code != "IncompleteBody" {
				t.Errorf("got %d %s, want 400 IncompleteBody", resp.StatusCode, code)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > declared/8 {
				t.Errorf("the server allocated %d MiB for a body of 3 bytes declared as %d MiB", grew>>20, declared>>20)
			}
		})
	}
}

// startUpload starts a multipart upload with a client's key and returns its ID.
func (f *fixture) startUpload(c Credentials, bucket, key string) string {
	f.t.Helper()
	out, err := f.awsClient(c).CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		f.t.Fatal(err)
	}
	return aws.ToString(out.UploadId)
}

// TestCompletionsAreBounded: a completion names its parts in strictly ascending order (one
// part named many times would make the store allocate that many copies), and the parts it
// names must fit the object size limit.
func TestCompletionsAreBounded(t *testing.T) {
	const limit = 1 << 20
	f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: limit}})
	c := f.bucketWithAccount("bkt", "a", ReadWrite)
	ctx := context.Background()
	client := f.awsClient(c)
	id := f.startUpload(c, "bkt", "obj")
	part := bytes.Repeat([]byte("p"), 600<<10)
	etag := md5.Sum(part)
	for n := int32(1); n <= 2; n++ {
		if _, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("obj"), UploadId: aws.String(id),
			PartNumber: aws.Int32(n), Body: bytes.NewReader(part)}); err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
	}
	doc := func(parts ...int) []byte {
		var b strings.Builder
		b.WriteString("<CompleteMultipartUpload>")
		for _, p := range parts {
			fmt.Fprintf(&b, `<Part><PartNumber>%d</PartNumber><ETag>"%s"</ETag></Part>`, p, hex.EncodeToString(etag[:]))
		}
		b.WriteString("</CompleteMultipartUpload>")
		return []byte(b.String())
	}
	target := "/bkt/obj?uploadId=" + url.QueryEscape(id)
	for _, tc := range []struct {
		rule   string
		parts  []int
		status int
		code   string
	}{
		{"one part named twice is refused", []int{1, 1}, 400, "InvalidPartOrder"},
		{"parts out of order are refused", []int{2, 1}, 400, "InvalidPartOrder"},
		{"parts adding up past the limit are refused", []int{1, 2}, 400, "EntityTooLarge"},
		{"parts within the limit complete", []int{1}, 200, ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			u, _ := url.Parse(target)
			resp := do(t, signedRequest(t, f, c, http.MethodPost, u.RequestURI(), doc(tc.parts...), "", time.Now(), nil))
			if resp.StatusCode != tc.status || (tc.code != "" && s3Code([]byte(resp.body)) != tc.code) {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.body, tc.status, tc.code)
			}
			_, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("obj")})
			if exists := err == nil; exists != (tc.status == 200) {
				t.Fatalf("object exists = %v after the completion answered %d", exists, resp.StatusCode)
			}
		})
	}
}

// serveLimited serves a Server through Serve (the command's path) on a loopback port.
func serveLimited(t *testing.T, limits Limits) (*Server, string, Credentials) {
	t.Helper()
	srv, err := New(Config{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
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
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	acc, err := srv.GrantAccess(ctx, "a", map[string]Mode{"bkt": ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	return srv, lis.Addr().String(), acc.Credentials
}

// readToEnd reads conn until the server closes it; the test fails if that takes longer than
// the given bound, which is far beyond the timeout under test.
func readToEnd(t *testing.T, conn net.Conn, bound time.Duration) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(bound)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, conn); err != nil {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

// TestConnectionBounds: what one connection may hold is bounded: its headers' size and the
// time to send them, idle time between requests, a body that stops arriving.
func TestConnectionBounds(t *testing.T) {
	const idle = 200 * time.Millisecond
	_, addr, c := serveLimited(t, Limits{IdleTimeout: idle, HeaderTimeout: idle, MaxHeaderBytes: 8 << 10})
	dial := func(t *testing.T) net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	t.Run("headers over the limit are refused", func(t *testing.T) {
		head := rawSigned(t, c, http.MethodGet, addr, "/bkt/k", -1, http.Header{"X-Filler": {strings.Repeat("f", 64<<10)}})
		resp := exchange(t, addr, head, nil, false)
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("got %d, want 431", resp.StatusCode)
		}
	})
	t.Run("headers that stop arriving lose the connection", func(t *testing.T) {
		conn := dial(t)
		if _, err := conn.Write([]byte("GET /bkt/k HTTP/1.1\r\nHost: x\r\n")); err != nil {
			t.Fatal(err)
		}
		readToEnd(t, conn, 20*idle)
	})
	t.Run("an idle kept-alive connection is closed", func(t *testing.T) {
		conn := dial(t)
		if _, err := conn.Write(rawSigned(t, c, http.MethodHead, addr, "/bkt", -1, nil)); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD bucket: %v %v", resp, err)
		}
		if err := conn.SetReadDeadline(time.Now().Add(20 * idle)); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, br); err != nil {
			t.Fatalf("the server kept an idle connection open: %v", err)
		}
	})
	t.Run("a body that stops arriving loses the connection", func(t *testing.T) {
		conn := dial(t)
		if _, err := conn.Write(append(rawSigned(t, c, http.MethodPut, addr, "/bkt/slow", 100, nil), "only ten b"...)); err != nil {
			t.Fatal(err)
		}
		readToEnd(t, conn, 20*idle)
	})
}

// TestConnectionCount: beyond MaxConnections, a client waits until a connection closes. The
// connection that holds the slot is busy (its request's body is still arriving): an idle one
// would be closed to make room (TestQuietConnectionsMakeRoom).
func TestConnectionCount(t *testing.T) {
	_, addr, c := serveLimited(t, Limits{MaxConnections: 1})
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	// The 100 Continue says the server is reading the body: the request is in progress.
	if _, err := first.Write(rawSigned(t, c, http.MethodPut, addr, "/bkt/slow", 100, http.Header{"Expect": {"100-continue"}})); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(first), nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("first connection: %v %v, want 100 Continue", resp, err)
	}
	if _, err := first.Write([]byte("only ten b")); err != nil {
		t.Fatal(err)
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := second.Write(rawSigned(t, c, http.MethodHead, addr, "/bkt", -1, nil)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(second)
	// While the first connection is busy, the second is not served. Its answer cannot come
	// from a correct server however long one waits; a short wait catches a missing limit.
	if err := second.SetReadDeadline(time.Now().Add(300 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Peek(1); err == nil {
		t.Fatal("a connection beyond the limit was served")
	}
	first.Close()
	if err := second.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodHead}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("second connection after the first closed: %v %v", resp, err)
	}
}

// TestQuietConnectionsMakeRoom: at MaxConnections, a new client takes the place of the
// connection quiet the longest, which the server closes: one idle after its request, or one
// without a complete request, whatever its age (a client that sends half a request line
// holds no slot another client needs).
func TestQuietConnectionsMakeRoom(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		quiet func(t *testing.T, conn net.Conn, addr string, c Credentials)
	}{
		{"an idle kept-alive connection", func(t *testing.T, conn net.Conn, addr string, c Credentials) {
			if _, err := conn.Write(rawSigned(t, c, http.MethodHead, addr, "/bkt", -1, nil)); err != nil {
				t.Fatal(err)
			}
			if resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodHead}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("first request: %v %v", resp, err)
			}
		}},
		{"a connection with half a request", func(t *testing.T, conn net.Conn, addr string, c Credentials) {
			if _, err := conn.Write([]byte("GET /bkt/k HTTP/1.1\r\nHost: x\r\n")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			_, addr, c := serveLimited(t, Limits{MaxConnections: 1})
			quiet, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer quiet.Close()
			tc.quiet(t, quiet, addr, c)
			next, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			if _, err := next.Write(rawSigned(t, c, http.MethodHead, addr, "/bkt", -1, nil)); err != nil {
				t.Fatal(err)
			}
			if err := next.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if resp, err := http.ReadResponse(bufio.NewReader(next), &http.Request{Method: http.MethodHead}); err != nil || resp.StatusCode != 200 {
				t.Fatalf("a new client at the limit, beside %s: %v %v", tc.rule, resp, err)
			}
			readToEnd(t, quiet, 5*time.Second)
		})
	}
}

// TestRefusalsReachClientsStillSending: a refused request of a key in force whose body is
// still arriving gets its answer and a clean end of the connection (FIN), not a reset that
// would hide the answer from a client still writing (before lingering, a tampered chunk reset
// the aws SDK's and net/http's PUTs now and then: the server closed with the rest of the body
// unread). A request that fails authentication does not linger
// (TestAnonymousRequestsAreClosedWithoutLingering).
func TestRefusalsReachClientsStillSending(t *testing.T) {
	f := newFixture(t, false, Config{})
	creds := f.bucketWithAccount("bkt", "a", ReadWrite)
	other := f.bucketWithAccount("other", "b", ReadWrite)
	addr := f.hs.Listener.Addr().String()
	body := bytes.Repeat([]byte("x"), 200<<10)

	// tampered is an aws-chunked PUT signed by minio-go whose first chunk has a changed byte.
	tampered := func() []byte {
		req, err := http.NewRequest(http.MethodPut, "http://"+addr+"/bkt/stream", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req = signer.StreamingSignV4(req, creds.AccessKeyID, creds.SecretAccessKey, "", DefaultRegion, int64(len(body)), time.Now().UTC(), sha256Hasher{sha256.New()})
		enc, err := io.ReadAll(req.Body)
		if err != nil {
			t.Fatal(err)
		}
		enc[bytes.Index(enc, []byte("xxxx"))] = 'y'
		req.Body = io.NopCloser(bytes.NewReader(enc))
		req.ContentLength = int64(len(enc))
		var wire bytes.Buffer
		if err := req.Write(&wire); err != nil {
			t.Fatal(err)
		}
		return wire.Bytes()
	}
	plain := func(c Credentials, target string) []byte {
		head := rawSigned(t, c, http.MethodPut, addr, target, int64(len(body)), nil)
		return append(head, body...)
	}
	cases := []struct {
		rule   string
		wire   []byte
		status int
		code   string
	}{
		{"a key without a grant on the bucket", plain(other, "/bkt/k"), 403, "AccessDenied"},
		{"a changed byte in the first signed chunk", tampered(), 403, "SignatureDoesNotMatch"},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			wrote := make(chan error, 1)
			go func() { _, err := conn.Write(tc.wire); wrote <- err }()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			if code := codeOf(t, resp); resp.StatusCode != tc.status || code != tc.code {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, code, tc.status, tc.code)
			}
			if _, err := io.Copy(io.Discard, conn); err != nil {
				t.Errorf("after the answer: %v; want the server's clean close", err)
			}
			if err := <-wrote; err != nil {
				t.Errorf("sending the body: %v", err)
			}
		})
	}
}
