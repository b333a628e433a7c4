package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// TrailerField is one "name:value" line of an aws-chunked trailer.
type TrailerField struct {
	// Name is lower case, as the trailer signature hashes it.
	Name string
	// Value is the field's value with surrounding blanks removed.
	Value string
}

// ParseTrailer parses the bytes after the final chunk: trailer fields, one per line, and for
// signed streams a last "x-amz-trailer-signature:<64 hex>" line. Lines may end in CRLF or LF
// and blank lines are skipped: aws-sdk-go-v2 ends each field with CRLF, minio-go with LF and a
// CRLF after the block, and both end the body with a blank line. It returns the fields in
// order and the raw trailer signature (nil if there is none).
func ParseTrailer(b []byte) ([]TrailerField, []byte, error) {
	var fields []TrailerField
	var sig []byte
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			continue
		}
		if sig != nil {
			return nil, nil, s3err.ErrInvalidRequest.With("nothing may follow the trailer signature")
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		n := strings.ToLower(string(name))
		if !ok || n == "" || !isHeaderName(n) {
			return nil, nil, s3err.ErrInvalidRequest.With("a trailer line must be <name>:<value>")
		}
		v := strings.TrimSpace(string(value))
		if n == trailerSignatureName {
			raw, err := parseSignature(v)
			if err != nil {
				return nil, nil, s3err.ErrInvalidRequest.With("the trailer signature must be 64 hex digits")
			}
			sig = raw
			continue
		}
		for _, f := range fields {
			if f.Name == n {
				return nil, nil, s3err.ErrInvalidRequest.With("trailer %q appears twice", truncate(n))
			}
		}
		fields = append(fields, TrailerField{Name: n, Value: v})
	}
	return fields, sig, nil
}

// trailerSigner computes the AWS4-HMAC-SHA256-TRAILER signature that closes a signed stream
// with a trailer, with the key's cached signing key; a test checks it against a signature
// computed from aws-sdk-go-v2's StreamSigner key.
type trailerSigner struct {
	key   *derivedKey // for the request's date, region and service
	date  string      // x-amz-date
	scope string
}

func newTrailerSigner(key *derivedKey, t time.Time, region, service string) *trailerSigner {
	return &trailerSigner{
		key:   key,
		date:  t.UTC().Format(amzDateFormat),
		scope: t.UTC().Format(dateFormat) + "/" + region + "/" + service + "/aws4_request",
	}
}

// sign returns the trailer signature following the signature prev.
func (s *trailerSigner) sign(prev []byte, fields []TrailerField) []byte {
	var canonical bytes.Buffer
	for _, f := range fields {
		canonical.WriteString(f.Name + ":" + f.Value + "\n")
	}
	sum := sha256.Sum256(canonical.Bytes())
	toSign := "AWS4-HMAC-SHA256-TRAILER\n" + s.date + "\n" + s.scope + "\n" + hex.EncodeToString(prev) + "\n" + hex.EncodeToString(sum[:])
	return s.key.appendMAC(nil, []byte(toSign))
}
