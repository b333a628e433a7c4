package sigv4

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// Header-signed requests are checked by building SigV4's canonical request straight from the
// incoming request, with the rules of aws-sdk-go-v2's signer (aws/signer/v4, the SDK's
// Signer.SignHTTP with DisableURIPathEscaping): giving SignHTTP a copy of the request cost
// more than the rest of the check together (a request copy, a header map, the query parsed
// into a map, every header name lower-cased, ~55 allocations), on the path of every request.
// TestHeaderSignatureMatchesSDK and FuzzHeaderSignature hold this code equal to SignHTTP,
// which stays the reference; presigned URLs (not a hot path) are still recomputed by the SDK.

// scratch buffers hold a canonical request and then a string to sign; pooled, a check
// allocates nothing for them.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledScratch keeps a request with huge headers from pinning its buffer in the pool.
const maxPooledScratch = 64 << 10

func putScratch(bp *[]byte) {
	if cap(*bp) <= maxPooledScratch {
		scratch.Put(bp)
	}
}

// checkHeaderSignature recomputes the signature of a header-signed request and compares it
// with the one in its Authorization header, in constant time. The caller has checked the
// credential scope (region, service, date) and found the key.
func (v *Verifier) checkHeaderSignature(r *http.Request, a *Authorization, key *Key, t time.Time, payload string) error {
	sig, err := v.headerSignature(r, a.SignedHeaders, key, t, payload)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(sig[:], a.Signature) != 1 {
		return s3err.ErrSignatureDoesNotMatch
	}
	return nil
}

// headerSignature is the signature of r with the given signed headers, as a client signing
// with the key at time t and payload hash payload computes it.
func (v *Verifier) headerSignature(r *http.Request, signed []string, key *Key, t time.Time, payload string) (sig [sha256.Size]byte, err error) {
	if err := refuseUnsignedAmzHeaders(r.Header, signed); err != nil {
		return sig, err
	}
	bp := scratch.Get().(*[]byte)
	defer putScratch(bp)

	// Canonical request: method, URI, query, headers, signed header names, payload hash.
	b := append((*bp)[:0], r.Method...)
	b = append(b, '\n')
	if p := r.URL.EscapedPath(); p != "" {
		b = append(b, p...)
	} else {
		b = append(b, '/')
	}
	b = append(b, '\n')
	b = appendCanonicalQuery(b, r.URL.RawQuery)
	b = append(b, '\n')
	hasHost, missing := false, false
	for _, h := range signed {
		b = append(b, h...)
		b = append(b, ':')
		switch {
		case h == "host":
			hasHost = true
			// The signer strips only spaces from the host, not other white space.
			b = appendCollapsed(b, strings.Trim(signingHost(r), " "))
		case h == "x-amz-date":
			// The signer writes the time it signs for; t was parsed from this header and the
			// two are equal unless the header was not in canonical form, which then fails.
			b = t.UTC().AppendFormat(b, amzDateFormat)
		case h == "content-length":
			// aws-sdk-go-v2 signs only a positive length, and never an absent one; other
			// signers (curl's, botocore's) sign the header as sent, zero included.
			n, err := strconv.ParseInt(r.Header.Get("Content-Length"), 10, 64)
			if err != nil || n < 0 {
				return sig, s3err.ErrSignatureDoesNotMatch.With("a signed content-length must be a number")
			}
			b = strconv.AppendInt(b, n, 10)
		case unsignable[h]:
			return sig, s3err.ErrSignatureDoesNotMatch.With("signing the %s header is not supported", h)
		default:
			vals, ok := r.Header[headerKey(h)]
			// The signer signs only headers that are there: its signed header list, part of
			// the canonical request, would differ from the client's.
			missing = missing || !ok
			for i, v := range vals {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendCollapsed(b, strings.TrimSpace(v))
			}
		}
		b = append(b, '\n')
	}
	switch {
	case !hasHost:
		return sig, s3err.ErrAccessDenied.With("the host header must be signed")
	case missing:
		return sig, s3err.ErrSignatureDoesNotMatch
	}
	b = append(b, '\n')
	for i, h := range signed {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, h...)
	}
	b = append(b, '\n')
	b = append(b, payload...)
	canonical := sha256.Sum256(b)

	// String to sign: algorithm, time, scope, hash of the canonical request.
	b = append(b[:0], Algorithm+"\n"...)
	b = t.UTC().AppendFormat(b, amzDateFormat)
	b = append(b, '\n')
	b = t.UTC().AppendFormat(b, dateFormat)
	b = append(b, '/')
	b = append(b, v.Region...)
	b = append(b, "/"+service+"/aws4_request\n"...)
	b = hex.AppendEncode(b, canonical[:])
	n := len(b)
	b = key.signingKey(t, v.Region, service).appendMAC(b, b)
	*bp = b
	copy(sig[:], b[n:])
	return sig, nil
}

// commonSigned are the header names S3 clients sign besides host and x-amz-date, in the form
// net/http keys them: converting a lower-case name allocates a new string, on every request.
var commonSigned = func() map[string]string {
	m := map[string]string{}
	for _, h := range []string{
		"content-length", "content-md5", "content-type", "content-encoding", "content-disposition",
		"content-language", "cache-control", "expires", "range", "if-match", "if-none-match",
		"if-modified-since", "if-unmodified-since", "x-amz-content-sha256", "x-amz-decoded-content-length",
		"x-amz-trailer", "x-amz-sdk-checksum-algorithm", "x-amz-checksum-algorithm", "x-amz-checksum-type",
		"x-amz-checksum-mode", "x-amz-checksum-crc32", "x-amz-checksum-crc32c", "x-amz-checksum-crc64nvme",
		"x-amz-checksum-sha1", "x-amz-checksum-sha256", "x-amz-acl", "x-amz-storage-class",
		"x-amz-copy-source", "x-amz-copy-source-range", "x-amz-metadata-directive", "x-amz-tagging",
		"x-amz-expected-bucket-owner", "x-amz-server-side-encryption", "x-amz-request-payer",
		"amz-sdk-invocation-id", "amz-sdk-request", "x-amz-user-agent", "accept-encoding",
	} {
		m[h] = textproto.CanonicalMIMEHeaderKey(h)
	}
	return m
}()

// headerKey is the key net/http files header h under.
func headerKey(h string) string {
	if k, ok := commonSigned[h]; ok {
		return k
	}
	return textproto.CanonicalMIMEHeaderKey(h)
}

// refuseUnsignedAmzHeaders refuses, as AWS does, x-amz-* headers the signature does not cover:
// they change what a request does (x-amz-copy-source, x-amz-meta-*, x-amz-checksum-*), and
// anyone on the path could add them to a signed request.
func refuseUnsignedAmzHeaders(h http.Header, signed []string) error {
	for k := range h {
		if len(k) > len(amzHeaderPrefix) && strings.EqualFold(k[:len(amzHeaderPrefix)], amzHeaderPrefix) &&
			!containsFold(signed, k) {
			return s3err.ErrAccessDenied.With("there were headers present in the request which were not signed: %s", truncate(strings.ToLower(k)))
		}
	}
	return nil
}

// containsFold reports whether list (lower case) holds name in any case.
func containsFold(list []string, name string) bool {
	for _, v := range list {
		if strings.EqualFold(v, name) {
			return true
		}
	}
	return false
}

// signingHost is the host the signer signs: the Host header, without the port when it is the
// default one of the scheme (the SDK's SanitizeHostForHeader, which a client signing with the
// SDK applied before sending).
func signingHost(r *http.Request) string {
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	port := portOnly(host)
	if port != "" && (scheme == "http" && port == "80" || scheme == "https" && port == "443") {
		return stripPort(host)
	}
	return host
}

func portOnly(hostport string) string {
	colon := strings.IndexByte(hostport, ':')
	if colon == -1 {
		return ""
	}
	if i := strings.Index(hostport, "]:"); i != -1 {
		return hostport[i+len("]:"):]
	}
	if strings.Contains(hostport, "]") {
		return ""
	}
	return hostport[colon+len(":"):]
}

func stripPort(hostport string) string {
	colon := strings.IndexByte(hostport, ':')
	if colon == -1 {
		return hostport
	}
	if i := strings.IndexByte(hostport, ']'); i != -1 {
		return strings.TrimPrefix(hostport[:i], "[")
	}
	return hostport[:colon]
}

// appendCollapsed appends a header value with each run of spaces collapsed to one. With the
// value's surrounding white space trimmed first, that is the SDK's canonical value
// (TrimSpace(StripExcessSpaces(v))): trimming and collapsing touch disjoint parts of it.
func appendCollapsed(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' && i > 0 && v[i-1] == ' ' {
			continue
		}
		b = append(b, v[i])
	}
	return b
}

// maxFastQueryParams bounds the query parameters canonicalised without allocating; longer
// queries take the general path.
const maxFastQueryParams = 16

// appendCanonicalQuery appends the canonical query string: parameters as url.ParseQuery reads
// them, each name and value escaped as url.QueryEscape does but with %20 for spaces, sorted by
// name and then value, joined by '&'. The common S3 queries ("x-id=PutObject", "uploads",
// "partNumber=1&uploadId=...") hold only unreserved characters, which neither unescaping nor
// escaping changes; those are sorted in place without parsing into a map.
func appendCanonicalQuery(b []byte, raw string) []byte {
	if raw == "" {
		return b
	}
	type param struct{ k, v string }
	var params [maxFastQueryParams]param
	n := 0
	for rest := raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if n == len(params) || !unreserved(k) || !unreserved(v) {
			return appendEncodedQuery(b, raw)
		}
		params[n] = param{k, v}
		n++
	}
	ps := params[:n]
	// Insertion sort: at most maxFastQueryParams, and sort.Slice would allocate.
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && (ps[j].k < ps[j-1].k || ps[j].k == ps[j-1].k && ps[j].v < ps[j-1].v); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	for i, p := range ps {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, p.k...)
		b = append(b, '=')
		b = append(b, p.v...)
	}
	return b
}

// appendEncodedQuery is the general path of appendCanonicalQuery, the SDK's EncodeQuery.
func appendEncodedQuery(b []byte, raw string) []byte {
	q, _ := url.ParseQuery(raw) // as url.URL.Query: malformed pairs are dropped
	type param struct{ k, v string }
	var params []param
	for k, vs := range q {
		ek := encodeQueryComponent(k)
		for _, v := range vs {
			params = append(params, param{ek, encodeQueryComponent(v)})
		}
	}
	sort.Slice(params, func(i, j int) bool {
		if params[i].k != params[j].k {
			return params[i].k < params[j].k
		}
		return params[i].v < params[j].v
	})
	for i, p := range params {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, p.k...)
		b = append(b, '=')
		b = append(b, p.v...)
	}
	return b
}

func encodeQueryComponent(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// unreserved reports whether s holds only RFC 3986 unreserved characters, which
// url.QueryUnescape and url.QueryEscape both leave as they are.
func unreserved(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~') {
			return false
		}
	}
	return true
}
