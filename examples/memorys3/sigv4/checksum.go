package sigv4

import (
	"crypto/sha1" //nolint:gosec // S3's x-amz-checksum-sha1 is an integrity check, not a signature
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/minio/crc64nvme"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// checksumHeaderPrefix starts every S3 object-checksum header and trailer name.
const checksumHeaderPrefix = "x-amz-checksum-"

// checksums maps the algorithm suffix of x-amz-checksum-<alg> to its hash. These are the
// algorithms aws-sdk-go-v2 (CRC32 by default), minio-go (CRC32C by default) and the aws CLI
// send; each value is the base64 of the big-endian digest.
var checksums = map[string]func() hash.Hash{
	"crc32":     func() hash.Hash { return crc32.NewIEEE() },
	"crc32c":    func() hash.Hash { return crc32.New(crc32.MakeTable(crc32.Castagnoli)) },
	"crc64nvme": func() hash.Hash { return crc64nvme.New() },
	"sha1":      sha1.New,
	"sha256":    sha256.New,
}

// checksumHeaders maps the header keys net/http files the known checksums under to their
// lower-case names, which would otherwise be made anew for every request.
var checksumHeaders = func() map[string]string {
	m := make(map[string]string, len(checksums))
	for alg := range checksums {
		m[textproto.CanonicalMIMEHeaderKey(checksumHeaderPrefix+alg)] = checksumHeaderPrefix + alg
	}
	return m
}()

// checksum is one expected object checksum: the header name it came in and its digest. want
// is nil while a trailer has yet to deliver it.
type checksum struct {
	name string // lower case, e.g. x-amz-checksum-crc32
	hash hash.Hash
	want []byte // in wantBuf
	// wantBuf holds the decoded digest: the largest is 32 bytes, and base64's decoded length
	// of a 32-byte digest's encoding is 33.
	wantBuf [48]byte
	gotBuf  [sha256.Size]byte // the computed digest, in place
}

// newChecksum prepares the check named by a header or trailer name; value is the base64
// digest, or "" when it will come in the trailer.
func newChecksum(name, value string) (*checksum, error) {
	name = strings.ToLower(name)
	alg, ok := strings.CutPrefix(name, checksumHeaderPrefix)
	mk, known := checksums[alg]
	if !ok || !known {
		return nil, s3err.ErrInvalidRequest.With("unsupported checksum %q: use crc32, crc32c, crc64nvme, sha1 or sha256", truncate(name))
	}
	c := &checksum{name: name, hash: mk()}
	if value != "" {
		if err := c.expect(value); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// expect sets the digest to compare with, from its base64 form.
func (c *checksum) expect(value string) error {
	n, err := 0, error(nil)
	if base64.StdEncoding.DecodedLen(len(value)) <= len(c.wantBuf) {
		n, err = base64.StdEncoding.Decode(c.wantBuf[:], []byte(value))
	}
	if n == 0 || err != nil || n != c.hash.Size() {
		return s3err.ErrInvalidDigest.With("the %s value is not a base64 digest of the right length", c.name)
	}
	c.want = c.wantBuf[:n]
	return nil
}

// headerChecksum finds the one x-amz-checksum-<alg> header of a request, if any. Two
// different ones are refused, as S3 does: which of them would the object carry?
func headerChecksum(h http.Header) (*checksum, error) {
	var found *checksum
	for k, vals := range h {
		if len(k) <= len(checksumHeaderPrefix) || !strings.EqualFold(k[:len(checksumHeaderPrefix)], checksumHeaderPrefix) {
			continue
		}
		switch alg := k[len(checksumHeaderPrefix):]; {
		case strings.EqualFold(alg, "algorithm"), strings.EqualFold(alg, "type"), strings.EqualFold(alg, "mode"):
			continue
		}
		lower, ok := checksumHeaders[k]
		if !ok {
			lower = strings.ToLower(k)
		}
		if found != nil {
			return nil, s3err.ErrInvalidRequest.With("expecting a single x-amz-checksum- header")
		}
		value := ""
		if len(vals) > 0 {
			value = vals[0]
		}
		c, err := newChecksum(lower, value)
		if err != nil {
			return nil, err
		}
		if c.want == nil {
			return nil, s3err.ErrInvalidDigest.With("the %s header is empty", lower)
		}
		found = c
	}
	return found, nil
}
