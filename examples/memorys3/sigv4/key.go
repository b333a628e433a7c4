package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Key is an access key the verifier can check signatures with: its ID, its secret, the
// signing key derived from the secret for the current day, and the aws-sdk-go-v2 signer that
// recomputes presigned URLs.
//
// The derived signing key (four chained HMACs over date, region and service) is cached in the
// Key and replaced when a request names another day: deriving it on every request would cost
// more than checking the request. It lives in the Key, which is immutable in its (ID, secret)
// pair, so a cached key can never be paired with another secret. The SDK signer caches its
// own derived key by region, service, access key ID and day, not by secret, which is safe for
// the same reason: one signer per Key.
//
// A Key never prints its secret: String and GoString show the access key ID only.
type Key struct {
	creds   aws.Credentials
	signer  *v4.Signer
	derived atomic.Pointer[derivedKey]
}

// NewKey returns the Key for an access key ID and its secret.
func NewKey(accessKeyID, secretAccessKey string) *Key {
	return &Key{
		creds:  aws.Credentials{AccessKeyID: accessKeyID, SecretAccessKey: secretAccessKey},
		signer: v4.NewSigner(),
	}
}

// AccessKeyID is the public half of the key.
func (k *Key) AccessKeyID() string { return k.creds.AccessKeyID }

// String shows the access key ID only.
func (k *Key) String() string { return "sigv4.Key{" + k.creds.AccessKeyID + "}" }

// GoString shows the access key ID only, for %#v.
func (k *Key) GoString() string { return k.String() }

// signingKey is the derived key for the UTC day of t, region and service, from the cache when
// the last request named the same scope.
func (k *Key) signingKey(t time.Time, region, service string) *derivedKey {
	y, m, d := t.UTC().Date()
	day := (y*100+int(m))*100 + d
	if dk := k.derived.Load(); dk != nil && dk.day == day && dk.region == region && dk.service == service {
		return dk
	}
	dk := &derivedKey{day: day, region: region, service: service, key: signingKey(k.creds.SecretAccessKey, t, region, service)}
	dk.macs.New = func() any { return hmac.New(sha256.New, dk.key) }
	// Two days in flight at midnight overwrite each other's entry: each request still gets the
	// key of its own day, the loser derives it once more.
	k.derived.Store(dk)
	return dk
}

// derivedKey is a SigV4 signing key and a pool of HMACs keyed with it: reset and reused, an
// HMAC costs no allocation per request.
type derivedKey struct {
	day             int // yyyymmdd, UTC
	region, service string
	key             []byte
	macs            sync.Pool // of hash.Hash, hmac.New(sha256.New, key)
}

// appendMAC appends HMAC-SHA256(key, msg) to dst.
func (dk *derivedKey) appendMAC(dst, msg []byte) []byte {
	m := dk.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(msg)
	dst = m.Sum(dst)
	dk.macs.Put(m)
	return dst
}

// signingKey derives the SigV4 signing key: HMAC chained over date, region, service and the
// terminator, starting from "AWS4"+secret.
func signingKey(secret string, t time.Time, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), []byte(t.UTC().Format(dateFormat)))
	k = hmacSHA256(k, []byte(region))
	k = hmacSHA256(k, []byte(service))
	return hmacSHA256(k, []byte("aws4_request"))
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// Keyring finds the key for an access key ID. It is called once per request, on the hot
// path, so it should be a map lookup; ok is false for unknown and revoked keys.
type Keyring interface {
	Key(accessKeyID string) (key *Key, ok bool)
}

// KeyringFunc adapts a function to Keyring.
type KeyringFunc func(accessKeyID string) (*Key, bool)

// Key calls f.
func (f KeyringFunc) Key(accessKeyID string) (*Key, bool) { return f(accessKeyID) }
