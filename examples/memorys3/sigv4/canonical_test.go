package sigv4

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

var canonicalAt = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// serverRequest parses a request as net/http's server hands it to a handler; ok is false if
// net/http would not accept it.
func serverRequest(wire string) (*http.Request, bool) {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(wire)))
	return r, err == nil
}

// sdkHeaderSignature is the reference: the signature aws-sdk-go-v2's Signer.SignHTTP computes
// for r, given a copy of r that holds exactly the signed headers (the verifier's own method
// before the canonical request was built in place).
func sdkHeaderSignature(t testing.TB, v *Verifier, r *http.Request, signed []string, key *Key, at time.Time, payload string) ([]byte, error) {
	t.Helper()
	cp, err := signingCopy(r, signed, r.URL.RawQuery)
	if err != nil {
		return nil, err
	}
	if err := key.signer.SignHTTP(context.Background(), key.creds, cp, payload, service, v.Region, at, signerOptions); err != nil {
		t.Fatal(err)
	}
	a, err := ParseAuthorization(cp.Header.Get("Authorization"))
	if err != nil {
		t.Fatalf("the SDK wrote an Authorization header that does not parse: %v", err)
	}
	if !slices.Equal(a.SignedHeaders, signed) {
		// The SDK signed another header list (a signed header was absent): no client signature
		// with the requested list can match it.
		return nil, s3err.ErrSignatureDoesNotMatch
	}
	return a.Signature, nil
}

// referenceSignature is SigV4 computed by the steps of AWS's documentation, independently of
// the SDK and of the verifier, for requests without a query string. It is the reference where
// the SDK cannot be one: aws-sdk-go-v2 never signs a zero content-length, which other signers
// (curl's --aws-sigv4, botocore) do.
func referenceSignature(r *http.Request, signed []string, secret string, at time.Time, region, payload string) []byte {
	var canon strings.Builder
	canon.WriteString(r.Method + "\n" + r.URL.EscapedPath() + "\n\n")
	for _, h := range signed {
		v := strings.TrimSuffix(r.Host, ":80")
		if h != "host" {
			var vals []string
			for _, x := range r.Header.Values(h) {
				vals = append(vals, strings.Join(strings.Fields(x), " "))
			}
			v = strings.Join(vals, ",")
		}
		canon.WriteString(h + ":" + v + "\n")
	}
	canon.WriteString("\n" + strings.Join(signed, ";") + "\n" + payload)
	sum := sha256.Sum256([]byte(canon.String()))
	scope := at.UTC().Format("20060102") + "/" + region + "/s3/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + at.UTC().Format("20060102T150405Z") + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	mac := func(key []byte, data string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(data))
		return m.Sum(nil)
	}
	k := []byte("AWS4" + secret)
	for _, part := range strings.Split(scope, "/") {
		k = mac(k, part)
	}
	return mac(k, toSign)
}

// signsZeroLength says whether a request signs a content-length of zero, which the SDK
// refuses to sign.
func signsZeroLength(r *http.Request, signed []string) bool {
	return slices.Contains(signed, "content-length") && strings.TrimSpace(r.Header.Get("Content-Length")) == "0"
}

// signedNames is host and x-amz-date plus the given names, lower case, sorted and unique, as
// a client lists them.
func signedNames(extra ...string) []string {
	names := []string{"host", "x-amz-date"}
	for _, n := range extra {
		names = append(names, strings.ToLower(n))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestHeaderSignatureMatchesSDK: the canonical request built in place gives the signature the
// SDK's signer gives, for the request shapes S3 clients send and the corners of SigV4's
// canonical form (query sorting and escaping, repeated and padded header values, default
// ports, escaped paths).
func TestHeaderSignatureMatchesSDK(t *testing.T) {
	v := &Verifier{Region: "us-east-1"}
	key := NewKey("AKID", "secret")
	date := canonicalAt.Format(amzDateFormat)
	cases := []struct {
		name   string
		target string // request target of the request line
		host   string
		header string // extra header lines, each ending in \r\n
		signed []string
	}{
		{"aws-sdk-go-v2 PutObject", "/bucket/key?x-id=PutObject", "127.0.0.1:9000",
			"X-Amz-Content-Sha256: abc\r\nContent-Length: 5\r\nX-Amz-Checksum-Crc32: AAAAAA==\r\nX-Amz-Sdk-Checksum-Algorithm: CRC32\r\n",
			signedNames("content-length", "x-amz-content-sha256", "x-amz-checksum-crc32", "x-amz-sdk-checksum-algorithm")},
		{"no query, no extra header", "/bucket/key", "example.com", "", signedNames()},
		{"root path", "/", "example.com", "", signedNames()},
		{"query params unsorted, repeated, valueless", "/b?uploads&b=2&a=2&a=1&partNumber=1&uploadId=XyZ", "h", "", signedNames()},
		{"query needing escapes", "/b?prefix=a%20b&delimiter=%2F&k+e=v+w&x=%7E&y=a*b", "h", "", signedNames()},
		{"query with empty pairs and semicolons", "/b?&&a=1&;x=2&b=%zz&c", "h", "", signedNames()},
		{"more query params than the fast path takes", "/b?" + strings.Repeat("p=1&", 20) + "q", "h", "", signedNames()},
		{"escaped path", "/bucket/a%20b/c%2Fd/%E2%82%AC", "h", "", signedNames()},
		{"path needing escape", "/bucket/a+b/c=d/e!f", "h", "", signedNames()},
		{"default http port is not signed", "/b/k", "example.com:80", "", signedNames()},
		{"other port is signed", "/b/k", "example.com:8080", "", signedNames()},
		{"ipv6 host with default port", "/b/k", "[::1]:80", "", signedNames()},
		{"ipv6 host with port", "/b/k", "[::1]:9000", "", signedNames()},
		{"repeated header values are joined", "/b/k", "h", "X-Amz-Meta-A: one\r\nX-Amz-Meta-A: two\r\n", signedNames("x-amz-meta-a")},
		{"spaces collapse, tabs trim", "/b/k", "h", "X-Amz-Meta-A: \t a   b \t c  \r\n", signedNames("x-amz-meta-a")},
		{"empty header value", "/b/k", "h", "X-Amz-Meta-A:\r\n", signedNames("x-amz-meta-a")},
		{"non-amz signed headers", "/b/k", "h", "Content-Type: text/plain\r\nRange: bytes=0-1\r\nIf-Match: \"e\"\r\n", signedNames("content-type", "range", "if-match")},
		{"signed header missing from the request", "/b/k", "h", "", signedNames("x-amz-meta-gone")},
		{"signed content-length", "/b/k", "h", "Content-Length: 7\r\n", signedNames("content-length")},
		{"signed zero content-length (curl and botocore sign it; the SDK does not)", "/b/k", "h", "Content-Length: 0\r\n", signedNames("content-length")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := serverRequest("PUT " + tc.target + " HTTP/1.1\r\nHost: " + tc.host + "\r\nX-Amz-Date: " + date + "\r\n" + tc.header + "\r\n")
			if !ok {
				t.Fatalf("net/http refused the request")
			}
			var want []byte
			var werr error
			if signsZeroLength(r, tc.signed) {
				want = referenceSignature(r, tc.signed, "secret", canonicalAt, v.Region, "UNSIGNED-PAYLOAD")
			} else {
				want, werr = sdkHeaderSignature(t, v, r, tc.signed, key, canonicalAt, "UNSIGNED-PAYLOAD")
			}
			got, gerr := v.headerSignature(r, tc.signed, key, canonicalAt, "UNSIGNED-PAYLOAD")
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("SDK error %v, ours %v", werr, gerr)
			}
			if werr == nil && hex.EncodeToString(got[:]) != hex.EncodeToString(want) {
				t.Fatalf("signature %x, SDK's %x", got, want)
			}
		})
	}
}

// TestHeaderSignatureAllocations: the check of a typical header-signed request allocates
// nothing once its key's signing key is cached (the reason it is not a SignHTTP call).
func TestHeaderSignatureAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop values, so pooled buffers allocate")
	}
	v := &Verifier{Region: "us-east-1"}
	key := NewKey("AKID", "secret")
	r, ok := serverRequest("PUT /bucket/key?x-id=PutObject HTTP/1.1\r\nHost: 127.0.0.1:9000\r\nX-Amz-Date: " +
		canonicalAt.Format(amzDateFormat) + "\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nContent-Length: 5\r\n\r\n")
	if !ok {
		t.Fatal("net/http refused the request")
	}
	signed := signedNames("content-length", "x-amz-content-sha256")
	_, _ = v.headerSignature(r, signed, key, canonicalAt, UnsignedPayload)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := v.headerSignature(r, signed, key, canonicalAt, UnsignedPayload); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%v allocations per check, want 0", allocs)
	}
}

// FuzzHeaderSignature holds the in-place canonical request equal to the SDK's for whatever
// request net/http accepts: same signature, or both refuse.
func FuzzHeaderSignature(f *testing.F) {
	f.Add("PUT", "/bucket/key?x-id=PutObject", "127.0.0.1:9000", "X-Amz-Meta-A", " a  b ", "x-amz-meta-a")
	f.Add("GET", "/b?list-type=2&prefix=a%20b&delimiter=%2F", "h:80", "Range", "bytes=0-1", "range")
	f.Add("POST", "/b?delete", "[::1]:443", "Content-Md5", "abc", "")
	f.Add("GET", "/b/%E2%82%AC?a=1&a=0&&b", "example.com", "X-Amz-Meta-B", "\tv", "x-amz-meta-c")
	f.Add("PUT", "/b/k", "h", "Content-Length", "0", "content-length")
	f.Fuzz(func(t *testing.T, method, target, host, name, value, extra string) {
		for _, s := range []string{method, target, host, name, value, extra} {
			if strings.ContainsAny(s, "\r\n") {
				return
			}
		}
		r, ok := serverRequest(method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nX-Amz-Date: " +
			canonicalAt.Format(amzDateFormat) + "\r\n" + name + ": " + value + "\r\n\r\n")
		if !ok {
			return
		}
		names := []string{strings.ToLower(name)}
		if extra != "" {
			names = append(names, extra)
		}
		for _, n := range names {
			if n == "" || n != strings.ToLower(n) || !isHeaderName(n) {
				return
			}
		}
		signed := signedNames(names...)
		v := &Verifier{Region: "us-east-1"}
		key := NewKey("AKID", "secret")
		if signsZeroLength(r, signed) {
			if r.URL.RawQuery != "" || strings.ContainsAny(r.URL.EscapedPath(), "%+") || strings.ContainsAny(r.Host, "[]") {
				return // the documentation-steps reference covers plain targets only
			}
			got, err := v.headerSignature(r, signed, key, canonicalAt, "UNSIGNED-PAYLOAD")
			if want := referenceSignature(r, signed, "secret", canonicalAt, v.Region, "UNSIGNED-PAYLOAD"); err != nil || !slices.Equal(got[:], want) {
				t.Fatalf("zero content-length: signature %x (%v), reference %x", got, err, want)
			}
			return
		}
		want, werr := sdkHeaderSignature(t, v, r, signed, key, canonicalAt, "UNSIGNED-PAYLOAD")
		got, gerr := v.headerSignature(r, signed, key, canonicalAt, "UNSIGNED-PAYLOAD")
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("SDK error %v, ours %v", werr, gerr)
		}
		if werr != nil {
			var e1, e2 *s3err.Error
			if !errors.As(werr, &e1) || !errors.As(gerr, &e2) || e1.Code != e2.Code {
				t.Fatalf("SDK error %v, ours %v", werr, gerr)
			}
			return
		}
		if hex.EncodeToString(got[:]) != hex.EncodeToString(want) {
			t.Fatalf("signature %x, SDK's %x", got, want)
		}
	})
}

// TestReferenceSignatureMatchesSDK: the documentation-steps reference agrees with the SDK
// wherever the SDK signs, so it is a fair judge where the SDK does not.
func TestReferenceSignatureMatchesSDK(t *testing.T) {
	v := &Verifier{Region: "us-east-1"}
	key := NewKey("AKID", "secret")
	date := canonicalAt.Format(amzDateFormat)
	for _, tc := range []struct {
		header string
		signed []string
	}{
		{"", signedNames()},
		{"Content-Length: 7\r\n", signedNames("content-length")},
		{"X-Amz-Meta-A:  a   b \r\nContent-Type: text/plain\r\n", signedNames("x-amz-meta-a", "content-type")},
	} {
		r, ok := serverRequest("PUT /bucket/key HTTP/1.1\r\nHost: example.com:80\r\nX-Amz-Date: " + date + "\r\n" + tc.header + "\r\n")
		if !ok {
			t.Fatal("net/http refused the request")
		}
		want, err := sdkHeaderSignature(t, v, r, tc.signed, key, canonicalAt, "UNSIGNED-PAYLOAD")
		if err != nil {
			t.Fatal(err)
		}
		if got := referenceSignature(r, tc.signed, "secret", canonicalAt, v.Region, "UNSIGNED-PAYLOAD"); !slices.Equal(got, want) {
			t.Errorf("%q: reference %x, SDK %x", tc.header, got, want)
		}
	}
}
