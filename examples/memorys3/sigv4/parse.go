package sigv4

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// Algorithm is the only signing algorithm accepted: SigV4 with HMAC-SHA256. SigV4A (ECDSA)
// needs asymmetric keys this server does not issue.
const Algorithm = "AWS4-HMAC-SHA256"

// Authorization is a parsed SigV4 Authorization header (or the same fields of a presigned URL).
type Authorization struct {
	// Credential is the access key and the scope the request was signed for.
	Credential Credential
	// SignedHeaders are the lower-case header names the signature covers, sorted and unique.
	SignedHeaders []string
	// Signature is the 32-byte HMAC the client sent.
	Signature []byte
}

// Credential is the Credential field: "<access key>/<yyyymmdd>/<region>/<service>/aws4_request".
type Credential struct {
	// AccessKeyID names the key; its secret is looked up, never sent.
	AccessKeyID string
	// Date is the scope date (UTC midnight).
	Date time.Time
	// Region and Service name the scope.
	Region, Service string
}

// Scope is the credential scope string "<yyyymmdd>/<region>/<service>/aws4_request".
func (c Credential) Scope() string {
	return c.Date.Format(dateFormat) + "/" + c.Region + "/" + c.Service + "/aws4_request"
}

const (
	dateFormat    = "20060102"
	amzDateFormat = "20060102T150405Z"
	// maxHeaderLen bounds what the parsers look at: a real Authorization header is a few
	// hundred bytes; anything far longer is an attack on parsing cost, not a client.
	maxHeaderLen = 8 << 10
)

// ParseAuthorization parses an Authorization header value of the form
//
//	AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=<64 hex>
//
// The three fields must each appear exactly once; commas may or may not be followed by
// spaces (aws-sdk-go-v2 writes ", ", minio-go ",").
func ParseAuthorization(header string) (*Authorization, error) {
	bad := func(format string, args ...any) error {
		return s3err.ErrAuthorizationHeaderInvalid.With("the authorization header is malformed: "+format, args...)
	}
	if len(header) > maxHeaderLen {
		return nil, bad("too long")
	}
	rest, ok := strings.CutPrefix(header, Algorithm+" ")
	if !ok {
		return nil, bad("the algorithm must be %s", Algorithm)
	}
	var cred, signed, sig string
	var seen [3]bool
	for field := range strings.SplitSeq(rest, ",") {
		field = strings.TrimSpace(field)
		name, value, found := strings.Cut(field, "=")
		if !found {
			return nil, bad("field %q has no value", truncate(field))
		}
		var dst *string
		var i int
		switch name {
		case "Credential":
			dst, i = &cred, 0
		case "SignedHeaders":
			dst, i = &signed, 1
		case "Signature":
			dst, i = &sig, 2
		default:
			return nil, bad("unknown field %q", truncate(name))
		}
		if seen[i] {
			return nil, bad("field %s appears twice", name)
		}
		seen[i] = true
		*dst = value
	}
	if !seen[0] || !seen[1] || !seen[2] {
		return nil, bad("Credential, SignedHeaders and Signature are all required")
	}
	return parseFields(cred, signed, sig, s3err.ErrAuthorizationHeaderInvalid)
}

// parseFields checks the three signature fields common to headers and presigned URLs; kind
// is the error to answer with (header or query form).
func parseFields(cred, signed, sig string, kind *s3err.Error) (*Authorization, error) {
	c, err := ParseCredential(cred)
	if err != nil {
		return nil, err
	}
	headers, err := parseSignedHeaders(signed)
	if err != nil {
		return nil, kind.With("%v", err)
	}
	raw, err := parseSignature(sig)
	if err != nil {
		return nil, kind.With("%v", err)
	}
	return &Authorization{Credential: c, SignedHeaders: headers, Signature: raw}, nil
}

// ParseCredential parses "<access key>/<yyyymmdd>/<region>/<service>/aws4_request". It
// checks the syntax only; whether the scope fits the request (date, region, service) is the
// verifier's business.
func ParseCredential(s string) (Credential, error) {
	bad := func(format string, args ...any) (Credential, error) {
		return Credential{}, s3err.ErrAuthorizationHeaderInvalid.With("the credential is malformed: "+format, args...)
	}
	if len(s) > maxHeaderLen {
		return bad("too long")
	}
	var parts [5]string // cut in place: strings.Split would allocate on every request
	rest, n := s, 0
	for ; n < len(parts); n++ {
		var found bool
		if parts[n], rest, found = strings.Cut(rest, "/"); !found {
			break
		}
	}
	if n != len(parts)-1 {
		return bad("want <access key>/<date>/<region>/<service>/aws4_request")
	}
	key, date, region, service, term := parts[0], parts[1], parts[2], parts[3], parts[4]
	if key == "" || !isToken(key) {
		return bad("the access key is empty or has characters outside [A-Za-z0-9._-]")
	}
	if term != "aws4_request" {
		return bad("the scope must end in aws4_request")
	}
	d, err := time.Parse(dateFormat, date)
	if err != nil || len(date) != len(dateFormat) {
		return bad("the scope date %q is not yyyymmdd", truncate(date))
	}
	if region == "" || !isToken(region) || service == "" || !isToken(service) {
		return bad("the region and service must be non-empty names")
	}
	return Credential{AccessKeyID: key, Date: d, Region: region, Service: service}, nil
}

// parseSignedHeaders checks "host;x-amz-date;..." as SigV4 defines it: lower case, sorted,
// no duplicates. Sorting is part of the canonical request, so a client that sends another
// order signed something else.
func parseSignedHeaders(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("SignedHeaders is empty")
	}
	if len(s) > maxHeaderLen {
		return nil, fmt.Errorf("SignedHeaders is too long")
	}
	names := strings.Split(s, ";")
	for i, n := range names {
		if n == "" || !isLowerHeaderName(n) {
			return nil, fmt.Errorf("signed header %q is not a lower-case header name", truncate(n))
		}
		if i > 0 && names[i-1] >= n {
			return nil, fmt.Errorf("SignedHeaders must be sorted and unique")
		}
	}
	return names, nil
}

// parseSignature decodes the 64 hex digits of an HMAC-SHA256.
func parseSignature(s string) ([]byte, error) {
	if len(s) != 64 {
		return nil, fmt.Errorf("the signature must be 64 hex digits")
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("the signature must be 64 hex digits")
	}
	return raw, nil
}

func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// tokenChars are the token characters of RFC 9110 field names.
var tokenChars = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range []byte("!#$%&'*+-.^_`|~") {
		t[c] = true
	}
	return t
}()

// isHeaderName accepts the token characters of RFC 9110 field names.
func isHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !tokenChars[s[i]] {
			return false
		}
	}
	return true
}

// isLowerHeaderName accepts a field name without upper-case letters, as SignedHeaders lists
// them.
func isLowerHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !tokenChars[c] || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// truncate keeps echoed input short in error messages.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
