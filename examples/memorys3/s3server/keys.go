package s3server

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
)

// accessKeyPrefix marks keys minted by memorys3, as AWS marks its own with AKIA: a key found
// in a log or a repository says where it came from.
const accessKeyPrefix = "MS3K"

// newCredentials mints a key pair from crypto/rand: a 20-character access key ID (prefix and
// 80 random bits, base32, upper case like AWS's) and a 40-character secret (240 random bits,
// URL-safe base64, so it needs no quoting in shells or config files).
func newCredentials() (Credentials, error) {
	var id [10]byte
	var secret [30]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Credentials{}, fmt.Errorf("generate access key: %w", err)
	}
	if _, err := rand.Read(secret[:]); err != nil {
		return Credentials{}, fmt.Errorf("generate secret key: %w", err)
	}
	return Credentials{
		AccessKeyID:     accessKeyPrefix + base32.StdEncoding.EncodeToString(id[:])[:16],
		SecretAccessKey: base64.RawURLEncoding.EncodeToString(secret[:]),
	}, nil
}
