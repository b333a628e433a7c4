package sigv4

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// Payload hash values of x-amz-content-sha256 other than a hex SHA-256.
const (
	UnsignedPayload                 = "UNSIGNED-PAYLOAD"
	StreamingSignedPayload          = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	StreamingSignedPayloadTrailer   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	StreamingUnsignedPayloadTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	streamingECDSAPrefix            = "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"
)

const (
	// DefaultMaxSkew is how far a request's x-amz-date may be from the server's clock: AWS's
	// 15 minutes, which is also the replay window of a header-signed request.
	DefaultMaxSkew = 15 * time.Minute
	// MaxPresignExpiry is the longest X-Amz-Expires accepted: AWS's 7 days.
	MaxPresignExpiry = 7 * 24 * time.Hour
	// emptySHA256 is the payload hash of an empty body.
	emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	service     = "s3"
)

// Verifier authenticates S3 requests signed with AWS Signature Version 4. The zero value is
// not usable: Keys and Region are required.
type Verifier struct {
	// Keys finds the secret of an access key.
	Keys Keyring
	// Region is the only region a credential scope may name.
	Region string
	// Now is the server clock; nil means time.Now. Tests pass a fake clock.
	Now func() time.Time
	// MaxSkew bounds |x-amz-date - now| for header-signed requests; 0 means DefaultMaxSkew.
	MaxSkew time.Duration
}

// Result is an authenticated request.
type Result struct {
	// AccessKeyID is the key that signed the request.
	AccessKeyID string
	// Presigned is true for a query-string (presigned URL) signature.
	Presigned bool
	// Body, when non-nil, replaces the request body: it yields the plain object bytes and
	// fails its last Read if they are not what was signed. Nil means there is nothing to check
	// (no body, or an unsigned one without a checksum).
	Body *Body
	// Decoded is true when Body decodes aws-chunked: the store must then be told the decoded
	// length (Body.Length) instead of the Content-Length of the wire.
	Decoded bool
}

// Verify authenticates r: it parses the signature from the Authorization header or the
// presigned query, looks up the access key, checks the time window, recomputes the signature
// (header-signed: from r itself with the signer's rules, see checkHeaderSignature; presigned:
// with aws-sdk-go-v2's signer on a copy of the request that holds exactly the signed headers),
// and compares in constant time. The body is checked later, while it streams (Result.Body).
// Errors are *s3err.Error values ready to send.
func (v *Verifier) Verify(r *http.Request) (*Result, error) {
	if r.Header.Get("X-Amz-Security-Token") != "" || strings.Contains(r.URL.RawQuery, "X-Amz-Security-Token=") {
		// This server issues long-term keys only; a session token could not be checked.
		return nil, s3err.ErrInvalidToken.With("session tokens are not supported by this server")
	}
	auth := r.Header.Get("Authorization")
	presigned := false
	if strings.Contains(r.URL.RawQuery, "X-Amz-") { // parse the query only when it may hold a signature
		q := r.URL.Query()
		presigned = q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential")
	}
	switch {
	case auth != "" && presigned:
		return nil, s3err.ErrInvalidArgument.With("only one auth mechanism allowed: the Authorization header or the query string")
	case auth != "":
		return v.verifyHeader(r, auth)
	case presigned:
		return v.verifyQuery(r)
	default:
		return nil, s3err.ErrAccessDenied.With("anonymous access is not allowed: sign the request with SigV4")
	}
}

func (v *Verifier) verifyHeader(r *http.Request, auth string) (*Result, error) {
	a, err := ParseAuthorization(auth)
	if err != nil {
		return nil, err
	}
	date := r.Header.Get("X-Amz-Date")
	if date == "" || !contains(a.SignedHeaders, "x-amz-date") {
		return nil, s3err.ErrAccessDenied.With("a signed x-amz-date header is required")
	}
	t, err := time.Parse(amzDateFormat, date)
	if err != nil {
		return nil, s3err.ErrAccessDenied.With("x-amz-date is not in the form yyyymmddThhmmssZ")
	}
	if err := v.checkScope(a.Credential, t, s3err.ErrAuthorizationHeaderInvalid); err != nil {
		return nil, err
	}
	key, ok := v.Keys.Key(a.Credential.AccessKeyID)
	if !ok {
		return nil, s3err.ErrInvalidAccessKeyID
	}
	if now, skew := v.now(), v.maxSkew(); t.Before(now.Add(-skew)) || t.After(now.Add(skew)) {
		return nil, s3err.ErrRequestTimeTooSkewed.With("the request time %s is more than %s away from the server time", date, skew)
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return nil, s3err.ErrInvalidRequest.With("missing required header for this request: x-amz-content-sha256")
	}
	if err := v.checkHeaderSignature(r, a, key, t, payload); err != nil {
		return nil, err
	}
	body, decoded, err := v.body(r, payload, a, key, t)
	if err != nil {
		return nil, err
	}
	return &Result{AccessKeyID: key.AccessKeyID(), Body: body, Decoded: decoded}, nil
}

func (v *Verifier) verifyQuery(r *http.Request) (*Result, error) {
	q := r.URL.Query()
	if q.Get("X-Amz-Algorithm") != Algorithm {
		return nil, s3err.ErrAuthorizationQueryInvalid.With("X-Amz-Algorithm must be %s", Algorithm)
	}
	a, err := parseFields(q.Get("X-Amz-Credential"), q.Get("X-Amz-SignedHeaders"), q.Get("X-Amz-Signature"), s3err.ErrAuthorizationQueryInvalid)
	if err != nil {
		return nil, err
	}
	date := q.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, date)
	if err != nil {
		return nil, s3err.ErrAuthorizationQueryInvalid.With("X-Amz-Date must be in the form yyyymmddThhmmssZ")
	}
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > MaxPresignExpiry {
		return nil, s3err.ErrAuthorizationQueryInvalid.With("X-Amz-Expires must be 1 to %d seconds", int64(MaxPresignExpiry/time.Second))
	}
	if err := v.checkScope(a.Credential, t, s3err.ErrAuthorizationQueryInvalid); err != nil {
		return nil, err
	}
	key, ok := v.Keys.Key(a.Credential.AccessKeyID)
	if !ok {
		return nil, s3err.ErrInvalidAccessKeyID
	}
	now := v.now()
	if now.Before(t.Add(-v.maxSkew())) {
		return nil, s3err.ErrAccessDenied.With("request is not valid yet")
	}
	if now.After(t.Add(time.Duration(secs) * time.Second)) {
		return nil, s3err.ErrExpiredPresign
	}
	payload := q.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = UnsignedPayload
	}
	if strings.HasPrefix(payload, "STREAMING-") {
		return nil, s3err.ErrInvalidRequest.With("presigned URLs cannot carry aws-chunked uploads")
	}
	q.Del("X-Amz-Signature")
	cp, err := signingCopy(r, a.SignedHeaders, q.Encode())
	if err != nil {
		return nil, err
	}
	uri, _, err := key.signer.PresignHTTP(context.Background(), key.creds, cp, payload, service, v.Region, t, signerOptions)
	if err != nil {
		return nil, fmt.Errorf("recompute presigned signature: %w", err)
	}
	if !sameSignature(uri, "X-Amz-Signature=", a.Signature) {
		return nil, s3err.ErrSignatureDoesNotMatch
	}
	body, _, err := v.body(r, payload, a, key, t)
	if err != nil {
		return nil, err
	}
	return &Result{AccessKeyID: key.AccessKeyID(), Presigned: true, Body: body}, nil
}

// signerOptions: S3 signs the path as sent (no second escaping), and a verifier must sign
// the headers where they are, not hoist them into the query as a presigner would.
func signerOptions(o *v4.SignerOptions) {
	o.DisableURIPathEscaping = true
	o.DisableHeaderHoisting = true
}

// checkScope checks that the credential scope names this server's region and S3, and the
// date of the request.
func (v *Verifier) checkScope(c Credential, t time.Time, kind *s3err.Error) error {
	if c.Service != service {
		return kind.With("the credential scope names service %q; this is %q", truncate(c.Service), service)
	}
	if c.Region != v.Region {
		return kind.With("the credential scope names region %q; this server is %q", truncate(c.Region), v.Region)
	}
	if y, m, d := t.UTC().Date(); c.Date.Year() != y || c.Date.Month() != m || c.Date.Day() != d {
		return kind.With("the credential scope date is not the date of the request")
	}
	return nil
}

const amzHeaderPrefix = "x-amz-"

// unsignable are headers aws-sdk-go-v2's signer always leaves out; a client that signed one
// cannot be verified by recomputing.
var unsignable = map[string]bool{"authorization": true, "user-agent": true, "x-amzn-trace-id": true, "expect": true, "transfer-encoding": true}

// signingCopy builds the request the signer sees for a presigned URL: method, path and host
// of r, the given raw query, and only the headers the client signed. The signer adds host,
// x-amz-date and (when positive) content-length itself.
func signingCopy(r *http.Request, signed []string, rawQuery string) (*http.Request, error) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	cp := &http.Request{
		Method: r.Method,
		URL:    &url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: rawQuery},
		Host:   r.Host,
		Header: make(http.Header, len(signed)),
	}
	if err := refuseUnsignedAmzHeaders(r.Header, signed); err != nil {
		return nil, err
	}
	hasHost := false
	for _, h := range signed {
		switch {
		case h == "host":
			hasHost = true
		case h == "content-length":
			n, err := strconv.ParseInt(r.Header.Get("Content-Length"), 10, 64)
			if err != nil || n <= 0 {
				// The signer only signs a positive length; a signed empty or zero one cannot match.
				return nil, s3err.ErrSignatureDoesNotMatch.With("a signed content-length must be a positive number")
			}
			cp.ContentLength = n
		case unsignable[h]:
			return nil, s3err.ErrSignatureDoesNotMatch.With("signing the %s header is not supported", h)
		default:
			k := textproto.CanonicalMIMEHeaderKey(h)
			if vals, ok := r.Header[k]; ok {
				cp.Header[k] = vals
			}
		}
	}
	if !hasHost {
		return nil, s3err.ErrAccessDenied.With("the host header must be signed")
	}
	return cp, nil
}

// sameSignature finds the 64 hex digits after marker in s (the recomputed Authorization
// header or presigned URL) and compares them with want in constant time.
func sameSignature(s, marker string, want []byte) bool {
	i := strings.LastIndex(s, marker)
	if i < 0 || len(s) < i+len(marker)+64 {
		return false
	}
	var got [32]byte
	if _, err := hex.Decode(got[:], []byte(s[i+len(marker):i+len(marker)+64])); err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got[:], want) == 1
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return DefaultMaxSkew
}
