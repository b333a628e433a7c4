package sigv4

import (
	"crypto/sha1" //nolint:gosec // S3's x-amz-checksum-sha1 is an integrity check, not a signature
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"hash/crc32"
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

// checksum is one expected object checksum: the header name it came in and its digest. want
// is nil while a trailer has yet to deliver it.
type checksum struct {
	name string // lower case, e.g. x-amz-checksum-crc32
	hash hash.Hash
	want []byte
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
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil || len(raw) != c.hash.Size() {
		return s3err.ErrInvalidDigest.With("the %s value is not a base64 digest of the right length", c.name)
	}
	c.want = raw
	return nil
}

// headerChecksum finds the one x-amz-checksum-<alg> header of a request, if any. Two
// different ones are refused, as S3 does: which of them would the object carry?
func headerChecksum(get func(string) string, names []string) (*checksum, error) {
	var found *checksum
	for _, n := range names {
		lower := strings.ToLower(n)
		if !strings.HasPrefix(lower, checksumHeaderPrefix) || lower == "x-amz-checksum-algorithm" ||
			lower == "x-amz-checksum-type" || lower == "x-amz-checksum-mode" {
			continue
		}
		if found != nil {
			return nil, s3err.ErrInvalidRequest.With("expecting a single x-amz-checksum- header")
		}
		c, err := newChecksum(lower, get(n))
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
