package sigv4

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Key is an access key the verifier can check signatures with: its ID, its secret and the
// aws-sdk-go-v2 signer that recomputes them.
//
// Each Key has a signer of its own because the signer caches the derived signing key by
// region, service, access key ID and day, not by secret: sharing one signer between keys
// would be correct only as long as no access key ID is ever paired with another secret. One
// signer per immutable (ID, secret) pair makes that true by construction, and keeps the
// cache warm for a key's requests.
//
// A Key never prints its secret: String and GoString show the access key ID only.
type Key struct {
	creds  aws.Credentials
	signer *v4.Signer
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

// Keyring finds the key for an access key ID. It is called once per request, on the hot
// path, so it should be a map lookup; ok is false for unknown and revoked keys.
type Keyring interface {
	Key(accessKeyID string) (key *Key, ok bool)
}

// KeyringFunc adapts a function to Keyring.
type KeyringFunc func(accessKeyID string) (*Key, bool)

// Key calls f.
func (f KeyringFunc) Key(accessKeyID string) (*Key, bool) { return f(accessKeyID) }
