package bucket

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	cosi "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/secrets"
)

// Protocol is a protocol clients reach a bucket with.
type Protocol int

// The object protocols.
const (
	S3 Protocol = iota + 1
	Azure
	GCS
)

// String names the protocol as COSI does (S3, Azure, GCS).
func (p Protocol) String() string {
	switch p {
	case S3:
		return "S3"
	case Azure:
		return "Azure"
	case GCS:
		return "GCS"
	}
	return fmt.Sprintf("Protocol(%d)", int(p))
}

// Version is a COSI wire version the plugin serves; a request says which one it came by.
type Version string

// The COSI wire versions.
const (
	// V1Alpha1 is package cosi.v1alpha1, spoken by the released COSI sidecar.
	V1Alpha1 Version = "v1alpha1"
	// V1Alpha2 is package sigs.k8s.io.cosi.v1alpha2.
	V1Alpha2 Version = "v1alpha2"
)

// Provisioner is the required part of a bucket backend (DriverCreateBucket,
// DriverDeleteBucket).
type Provisioner interface {
	// CreateBucket creates the bucket named req.Name or, when this backend already created one
	// under that name, returns it if the request is compatible (CreateBucketRequest.CheckExisting)
	// and an error wrapping ErrAlreadyExists if not. The same name must always give the same ID:
	// the CO calls again on every reconcile. A bucket that exists in the storage but was not
	// created by this backend is never adopted (ErrAlreadyExists), or a later delete would destroy
	// someone else's data. Unknown parameters or a protocol it cannot serve are ErrInvalidArgument.
	// The ID it answers is its own opaque key for the bucket (see Bucket.ID).
	CreateBucket(ctx context.Context, req *CreateBucketRequest) (*Bucket, error)
	// DeleteBucket deletes a bucket this backend created. req.ID may be one it never issued,
	// shaped like a path ("../../etc"): look it up among the IDs it issued, never resolve it as a
	// path, and return ErrNotFound (which counts as success) for any other.
	DeleteBucket(ctx context.Context, req *DeleteBucketRequest) error
}

// Getter reports a bucket that exists already, for static provisioning
// (DriverGetExistingBucket in v1alpha2).
type Getter interface {
	// GetBucket returns the bucket with the given ID, ErrNotFound when there is none. The ID is
	// typed by an administrator, so it may be anything of the ID alphabet, "../../etc" included:
	// find it among the buckets the storage knows by that name or key, never by resolving it as a
	// path, and answer ErrNotFound (or ErrInvalidArgument) for an ID that names nothing there.
	GetBucket(ctx context.Context, req *GetBucketRequest) (*Bucket, error)
}

// AccessGranter grants and revokes access to buckets (DriverGrantBucketAccess,
// DriverRevokeBucketAccess).
type AccessGranter interface {
	// GrantBucketAccess gives the account named req.AccountName access to req.Buckets. It must be
	// idempotent by account name: the CO calls it again on every reconcile and writes the answer
	// into the user's Secret each time, so a repeated compatible call returns the same account ID
	// and the same credentials, never new keys; an incompatible one (other buckets, modes or
	// parameters) is ErrAlreadyExists. A bucket that does not exist is ErrNotFound, and so is a
	// bucket ID this backend never issued or found, whatever its shape: a grant for
	// "../../../../etc" must never issue keys.
	GrantBucketAccess(ctx context.Context, req *GrantBucketAccessRequest) (*Access, error)
	// RevokeBucketAccess removes the account's access, after which its credentials must fail at
	// once. An account or bucket that is gone counts as success (ErrNotFound answers OK); the
	// account and bucket IDs may be ones this backend never issued, shaped like paths, and must
	// touch nothing then.
	RevokeBucketAccess(ctx context.Context, req *RevokeBucketAccessRequest) error
}

// Bucket is what a backend reports about one bucket. Set the info of every protocol the bucket
// can be reached with; a nil protocol means "not over this protocol".
type Bucket struct {
	// ID identifies the bucket in later calls; required, at most 2048 characters of
	// [A-Za-z0-9._/-], and it must never change. It is the backend's opaque key: the CO sends it
	// back as it is, and sends IDs the backend never answered too (see the package notes on IDs).
	ID string
	// S3 is how S3 clients reach the bucket.
	S3 *S3Info
	// Azure is how Azure Blob clients reach the bucket.
	Azure *AzureInfo
	// GCS is how Google Cloud Storage clients reach the bucket.
	GCS *GCSInfo
}

// S3AddressingStyle is how S3 clients address the bucket.
type S3AddressingStyle int

// The S3 addressing styles.
const (
	// S3AddressingPath: https://endpoint/bucket/key.
	S3AddressingPath S3AddressingStyle = iota + 1
	// S3AddressingVirtual: https://bucket.endpoint/key.
	S3AddressingVirtual
)

// S3Info is the S3 view of a bucket. Endpoint, Region and AddressingStyle are required by the
// COSI sidecar.
type S3Info struct {
	// Name is the bucket name S3 clients use; empty means Bucket.ID.
	Name string
	// Endpoint is the S3 endpoint URL, e.g. https://s3.example.com.
	Endpoint string
	// Region is the S3 region, e.g. us-east-1.
	Region string
	// AddressingStyle is the style clients should use.
	AddressingStyle S3AddressingStyle
}

// AzureInfo is the Azure Blob view of a bucket.
type AzureInfo struct {
	// StorageAccount is the ID of the storage account.
	StorageAccount string
}

// GCSInfo is the Google Cloud Storage view of a bucket.
type GCSInfo struct {
	// ProjectID is the GCS project.
	ProjectID string
	// Name is the bucket name GCS clients use; empty means Bucket.ID.
	Name string
}

// CreateBucketRequest asks for a bucket.
type CreateBucketRequest struct {
	// Name is the CO's name for the bucket: a DNS subdomain, and the idempotency key.
	Name string
	// Protocols are the protocols the bucket must be reachable with, without duplicates and only
	// among the plugin's protocols (the plugin checks both). Empty means the CO named none: the
	// backend chooses (v1alpha1 never names any).
	Protocols []Protocol
	// Parameters are the opaque bucket-class parameters.
	Parameters map[string]string
	// Wire holds the Version the call came by and the request as received (RawV1Alpha1 or
	// RawV1Alpha2), read as req.Version, req.RawV1Alpha1 and req.RawV1Alpha2.
	Wire[*cosi.DriverCreateBucketRequest, *cosiv1alpha2.DriverCreateBucketRequest]
}

// Fingerprint is a stable digest of what must be the same when a bucket is created again under
// the same name. Store it with the bucket and compare with CheckExisting.
//
// It hashes Parameters, every key and value, and nothing else: not Name (the key the backend
// stores the fingerprint under), not Protocols (v1alpha1 never names any, so they would make the
// same bucket differ between the versions), not Version and not the wire request. So it is the
// same for both wire versions, and a CO that moves from one to the other keeps its buckets. The
// digest is idempotency.Fingerprint's (22 characters of SHA-256 over a canonical, versioned
// protobuf encoding) of those fields; it works on a request built without a wire request too.
func (r *CreateBucketRequest) Fingerprint() string {
	return idempotency.Fingerprint(r.canonical())
}

// canonical is the version-neutral form of the request that Fingerprint hashes.
func (r *CreateBucketRequest) canonical() *structpb.Struct {
	return canonicalForm(map[string]*structpb.Value{"parameters": stringMapValue(r.Parameters)})
}

// CheckExisting decides a repeated CreateBucket: existing is the bucket the backend already has
// under r.Name, and fingerprint is what r.Fingerprint() returned when it was created. It returns
// nil when the fingerprints match (existing is then the answer), an error wrapping
// driver.ErrAlreadyExists otherwise. With existing nil (no bucket under that name yet) it returns
// nil whatever the fingerprint: nothing conflicts, so the backend creates the bucket.
func (r *CreateBucketRequest) CheckExisting(fingerprint string, existing *Bucket) error {
	if existing == nil || fingerprint == r.Fingerprint() {
		return nil
	}
	return fmt.Errorf("bucket %q (%s) was created with other parameters: %w", r.Name, existing.ID, driver.ErrAlreadyExists)
}

// GetBucketRequest asks for a bucket that exists already.
type GetBucketRequest struct {
	// ID is the bucket's ID as the administrator gave it: any 1 to 2048 characters of
	// [A-Za-z0-9._/-], "/" and ".." included, so never a file path until checked.
	ID string
	// Protocols are the protocols the bucket must be reachable with (as in CreateBucketRequest).
	Protocols []Protocol
	// Parameters are the opaque bucket-class parameters.
	Parameters map[string]string
	// Version is the wire version of the call (always V1Alpha2: v1alpha1 has no such call).
	Version Version
	// RawV1Alpha2 is the request as received; read it, never modify it. v1alpha1 has no
	// DriverGetExistingBucket, so there is no RawV1Alpha1, and no Wire to embed.
	RawV1Alpha2 *cosiv1alpha2.DriverGetExistingBucketRequest
}

// DeleteBucketRequest asks to delete a bucket.
type DeleteBucketRequest struct {
	// ID is the bucket to delete: usually one the backend answered, but possibly one it never
	// issued, of any shape the ID alphabet allows ("../../etc"); never a file path unchecked.
	ID string
	// Parameters are the opaque bucket-class parameters (v1alpha1: delete_context).
	Parameters map[string]string
	// Wire holds the Version the call came by and the request as received (RawV1Alpha1 or
	// RawV1Alpha2), read as req.Version, req.RawV1Alpha1 and req.RawV1Alpha2.
	Wire[*cosi.DriverDeleteBucketRequest, *cosiv1alpha2.DriverDeleteBucketRequest]
}

// AccessMode is what an account may do with a bucket's objects.
type AccessMode int

// The bucket access modes.
const (
	ReadWrite AccessMode = iota + 1
	ReadOnly
	WriteOnly
)

// String names the mode (ReadWrite, ReadOnly, WriteOnly).
func (m AccessMode) String() string {
	switch m {
	case ReadWrite:
		return "ReadWrite"
	case ReadOnly:
		return "ReadOnly"
	case WriteOnly:
		return "WriteOnly"
	}
	return fmt.Sprintf("AccessMode(%d)", int(m))
}

// AuthenticationType is how a granted account authenticates.
type AuthenticationType int

// The authentication types.
const (
	// AuthKey: the answer carries credentials (keys, tokens).
	AuthKey AuthenticationType = iota + 1
	// AuthServiceAccount: the workload's service account is given access (v1alpha1: IAM); the
	// answer may carry no credentials.
	AuthServiceAccount
)

// String names the authentication type (Key, ServiceAccount).
func (a AuthenticationType) String() string {
	switch a {
	case AuthKey:
		return "Key"
	case AuthServiceAccount:
		return "ServiceAccount"
	}
	return fmt.Sprintf("AuthenticationType(%d)", int(a))
}

// Grant is one bucket of a grant and what the account may do with it.
type Grant struct {
	// BucketID is the bucket: an opaque ID, possibly one the backend never issued and shaped like
	// a path; never a file path unchecked.
	BucketID string
	// Mode is the access granted (v1alpha1 has no modes: read-write).
	Mode AccessMode
}

// GrantBucketAccessRequest asks for an account with access to buckets.
type GrantBucketAccessRequest struct {
	// AccountName is the CO's name for the access (for Kubernetes "ba-" and the BucketAccess
	// UID): a DNS subdomain, and the idempotency key.
	AccountName string
	// Protocol is the protocol the credentials are for.
	Protocol Protocol
	// Authentication is how the account authenticates.
	Authentication AuthenticationType
	// ServiceAccountName is the workload's service account (AuthServiceAccount only).
	ServiceAccountName string
	// Parameters are the opaque bucket-access-class parameters.
	Parameters map[string]string
	// Buckets are the buckets to grant, sorted by ID by the library (the CO sends them in any
	// order), without duplicates. More than one only when the plugin is configured for multi-bucket access.
	Buckets []Grant
	// Wire holds the Version the call came by and the request as received (RawV1Alpha1 or
	// RawV1Alpha2), read as req.Version, req.RawV1Alpha1 and req.RawV1Alpha2.
	Wire[*cosi.DriverGrantBucketAccessRequest, *cosiv1alpha2.DriverGrantBucketAccessRequest]
}

// Fingerprint is a stable digest of what must be the same when an access is granted again under
// the same account name. Store it with the account and compare with CheckExisting.
//
// It hashes Protocol, Authentication, ServiceAccountName, Parameters (every key and value) and
// the set of Buckets, each bucket ID with its Mode, in no particular order (the v1alpha2 sidecar
// sends them in a random order on every reconcile). It leaves out AccountName (the key the
// backend stores the fingerprint under), Version and the wire request, so it is the same for
// both wire versions: a v1alpha1 grant counts as read-write for the plugin's first protocol, as
// the plugin translates it. The digest is idempotency.Fingerprint's (22 characters of SHA-256
// over a canonical, versioned protobuf encoding) of those fields; it works on a request built
// without a wire request too.
func (r *GrantBucketAccessRequest) Fingerprint() string {
	return idempotency.Fingerprint(r.canonical())
}

// canonical is the version-neutral form of the grant that Fingerprint hashes; the buckets are
// sorted, so their order in the request does not matter.
func (r *GrantBucketAccessRequest) canonical() *structpb.Struct {
	grants := make([]string, 0, len(r.Buckets))
	for _, b := range r.Buckets {
		grants = append(grants, b.BucketID+"\x00"+b.Mode.String())
	}
	slices.Sort(grants)
	buckets := make([]*structpb.Value, len(grants))
	for i, g := range grants {
		buckets[i] = structpb.NewStringValue(g)
	}
	return canonicalForm(map[string]*structpb.Value{
		"parameters":     stringMapValue(r.Parameters),
		"protocol":       structpb.NewStringValue(r.Protocol.String()),
		"authentication": structpb.NewStringValue(r.Authentication.String()),
		"serviceAccount": structpb.NewStringValue(r.ServiceAccountName),
		"buckets":        structpb.NewListValue(&structpb.ListValue{Values: buckets}),
	})
}

// CheckExisting decides a repeated GrantBucketAccess: existing is the access the backend already
// has under r.AccountName, and fingerprint is what r.Fingerprint() returned when it was granted.
// It returns nil when the fingerprints match (existing, the same account ID and credentials, is
// then the answer), an error wrapping driver.ErrAlreadyExists otherwise. With existing nil (no
// access under that name yet) it returns nil whatever the fingerprint: nothing conflicts, so the
// backend grants a new access.
func (r *GrantBucketAccessRequest) CheckExisting(fingerprint string, existing *Access) error {
	if existing == nil || fingerprint == r.Fingerprint() {
		return nil
	}
	return fmt.Errorf("account %q (%s) was granted other buckets, modes or parameters: %w", r.AccountName, existing.AccountID, driver.ErrAlreadyExists)
}

// Access is the answer to a grant.
type Access struct {
	// AccountID identifies the account in RevokeBucketAccess; required, the same on every
	// repeated grant, at most 2048 characters of [A-Za-z0-9._/-]. Like Bucket.ID, it is the
	// backend's opaque key.
	AccountID string
	// Buckets describe each granted bucket for the granted protocol (S3: endpoint, region,
	// addressing style), one per requested bucket. The library sends only the granted
	// protocol's part.
	Buckets []Bucket
	// Credentials for the granted protocol; required (both halves of a key) for AuthKey.
	Credentials Credentials
}

// Credentials are the secrets of an account, one field per protocol. They print, JSON-encode and
// log with every value hidden, and so do S3Credentials, AzureCredentials and GCSCredentials.
//
// # Persisting credentials: not with encoding/json
//
// json.Marshal of any of these types succeeds and writes the redacted form, such as
// "{S3:***stripped***}", with no key in it; json.Unmarshal refuses that form with an error that
// says so. A backend that stores keys (as it must, to answer a repeated grant with the same ones)
// stores their fields itself, in a type of its own, and builds the credentials from them when it
// answers:
//
//	type storedKey struct{ ID, Secret string } // json.Marshal writes both
//	rec := storedKey{ID: creds.S3.AccessKeyID, Secret: creds.S3.SecretAccessKey}
//	...
//	creds := bucket.Credentials{S3: &bucket.S3Credentials{AccessKeyID: rec.ID, SecretAccessKey: rec.Secret}}
//
// Redaction is the default on purpose. encoding/json is what loggers (zap.Any and zap.Reflect,
// slog's JSON handler), error reporters and debug dumps use on a value, and the plugin's own
// redaction, by type, covers the wire messages it logs, not what a backend logs itself. A key in a
// log line is out for good and nothing reports it; a backend that persists through encoding/json
// instead fails the first time it reads its state back (its restart test), with an error that
// says what to do.
type Credentials struct {
	// S3 are S3 access keys.
	S3 *S3Credentials
	// Azure is an Azure access token.
	Azure *AzureCredentials
	// GCS is a GCS HMAC key.
	GCS *GCSCredentials
}

// S3Credentials are an S3 access key pair. They print and JSON-encode redacted, and cannot be
// persisted with encoding/json: store the fields yourself (see Credentials).
type S3Credentials struct {
	// AccessKeyID is the access key ID.
	AccessKeyID string
	// SecretAccessKey is the secret key.
	SecretAccessKey string
}

// AzureCredentials are an Azure access token. They print and JSON-encode redacted, and cannot be
// persisted with encoding/json: store the fields yourself (see Credentials).
type AzureCredentials struct {
	// AccessToken is the token (a SAS URI or similar).
	AccessToken string
	// Expiry is when it stops working; zero means never.
	Expiry time.Time
}

// GCSCredentials are a GCS HMAC key and the service account it belongs to. They print and
// JSON-encode redacted, and cannot be persisted with encoding/json: store the fields yourself
// (see Credentials).
type GCSCredentials struct {
	// AccessID is the HMAC access ID.
	AccessID string
	// AccessSecret is the HMAC secret.
	AccessSecret string
	// PrivateKeyName is the name of the private key.
	PrivateKeyName string
	// ServiceAccount is the GCS service account.
	ServiceAccount string
}

// String shows which protocols carry credentials, never a value.
func (c Credentials) String() string {
	var parts []string
	if c.S3 != nil {
		parts = append(parts, "S3:"+secrets.Placeholder)
	}
	if c.Azure != nil {
		parts = append(parts, "Azure:"+secrets.Placeholder)
	}
	if c.GCS != nil {
		parts = append(parts, "GCS:"+secrets.Placeholder)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// GoString is like String, so %#v does not leak values either.
func (c Credentials) GoString() string { return "bucket.Credentials" + c.String() }

// Format makes every verb (%v, %+v, %#v, %s) print String's form.
func (c Credentials) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c) }

// MarshalJSON writes which protocols carry credentials, never a value, so encoding/json (and
// loggers that use it) cannot leak them. What it writes cannot be read back: see Credentials.
func (c Credentials) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%q", c.String())), nil
}

// UnmarshalJSON refuses the redacted form MarshalJSON writes, with an error that says how to
// persist credentials instead, rather than leave them empty; a JSON object with the fields decodes
// as usual.
func (c *Credentials) UnmarshalJSON(b []byte) error {
	type fields Credentials // without the methods: the usual decoding of an object
	return unmarshalUnredacted("bucket.Credentials", b, (*fields)(c))
}

// RevokeBucketAccessRequest asks to remove an account's access.
type RevokeBucketAccessRequest struct {
	// AccountID is the ID a grant returned, or one the backend never issued, of any shape the ID
	// alphabet allows; never a file path unchecked.
	AccountID string
	// Protocol is the protocol the access was for (0 in v1alpha1, which does not say).
	Protocol Protocol
	// Authentication is how the account authenticates (0 in v1alpha1).
	Authentication AuthenticationType
	// ServiceAccountName is the workload's service account (AuthServiceAccount only).
	ServiceAccountName string
	// Parameters are the opaque parameters (v1alpha1: revoke_access_context).
	Parameters map[string]string
	// BucketIDs are the buckets whose access is revoked, sorted and without duplicates; opaque
	// IDs as in Grant.
	BucketIDs []string
	// Wire holds the Version the call came by and the request as received (RawV1Alpha1 or
	// RawV1Alpha2), read as req.Version, req.RawV1Alpha1 and req.RawV1Alpha2.
	Wire[*cosi.DriverRevokeBucketAccessRequest, *cosiv1alpha2.DriverRevokeBucketAccessRequest]
}

// canonicalForm is the one place a bucket request's canonical form is built: a protobuf Struct of
// the request's version-neutral fields, which idempotency.Fingerprint digests through the same
// versioned encoding as every other fingerprint of csikit.
//
// The CSI fingerprints hash Raw itself. A bucket request cannot: the same request comes as two
// different messages (cosi.v1alpha1 and sigs.k8s.io.cosi.v1alpha2, with other field names and
// numbers, and v1alpha1 names no protocol, access mode or service account), so hashing Raw would
// give one bucket or grant two fingerprints, and a CO that moves from the v1alpha1 sidecar to the
// v1alpha2 one would be answered ALREADY_EXISTS for everything it made. The version-neutral
// fields are the plugin's one translation of either message (a v1alpha1 grant is read-write, for
// the plugin's first protocol), so a canonical form of them is the same for the same request
// whichever version it came by.
//
// The values are built by hand rather than with structpb.NewStruct, which refuses invalid UTF-8:
// a backend may fingerprint a request it built itself.
func canonicalForm(fields map[string]*structpb.Value) *structpb.Struct {
	return &structpb.Struct{Fields: fields}
}

func stringMapValue(m map[string]string) *structpb.Value {
	fields := make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		fields[k] = structpb.NewStringValue(v)
	}
	return structpb.NewStructValue(&structpb.Struct{Fields: fields})
}

// String shows that the key exists, never its values.
func (c S3Credentials) String() string {
	return "{AccessKeyID:" + hidden(c.AccessKeyID) + " SecretAccessKey:" + hidden(c.SecretAccessKey) + "}"
}

// GoString is like String, so %#v does not leak values either.
func (c S3Credentials) GoString() string { return "bucket.S3Credentials" + c.String() }

// Format makes every verb print String's form.
func (c S3Credentials) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c) }

// MarshalJSON writes String's form, so encoding/json cannot leak the values either. What it
// writes cannot be read back: see Credentials.
func (c S3Credentials) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%q", c.String())), nil
}

// UnmarshalJSON refuses the redacted form MarshalJSON writes, with an error that says how to
// persist credentials instead, rather than leave them empty; a JSON object with the fields decodes
// as usual.
func (c *S3Credentials) UnmarshalJSON(b []byte) error {
	type fields S3Credentials // without the methods: the usual decoding of an object
	return unmarshalUnredacted("bucket.S3Credentials", b, (*fields)(c))
}

// String shows that the token exists and when it expires, never the token.
func (c AzureCredentials) String() string {
	return "{AccessToken:" + hidden(c.AccessToken) + " Expiry:" + c.Expiry.String() + "}"
}

// GoString is like String, so %#v does not leak the token either.
func (c AzureCredentials) GoString() string { return "bucket.AzureCredentials" + c.String() }

// Format makes every verb print String's form.
func (c AzureCredentials) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c) }

// MarshalJSON writes String's form, so encoding/json cannot leak the token either. What it
// writes cannot be read back: see Credentials.
func (c AzureCredentials) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%q", c.String())), nil
}

// UnmarshalJSON refuses the redacted form MarshalJSON writes, with an error that says how to
// persist credentials instead, rather than leave them empty; a JSON object with the fields decodes
// as usual.
func (c *AzureCredentials) UnmarshalJSON(b []byte) error {
	type fields AzureCredentials // without the methods: the usual decoding of an object
	return unmarshalUnredacted("bucket.AzureCredentials", b, (*fields)(c))
}

// String shows the service account, never the key's values.
func (c GCSCredentials) String() string {
	return "{AccessID:" + hidden(c.AccessID) + " AccessSecret:" + hidden(c.AccessSecret) + " PrivateKeyName:" +
		hidden(c.PrivateKeyName) + " ServiceAccount:" + c.ServiceAccount + "}"
}

// GoString is like String, so %#v does not leak values either.
func (c GCSCredentials) GoString() string { return "bucket.GCSCredentials" + c.String() }

// Format makes every verb print String's form.
func (c GCSCredentials) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c) }

// MarshalJSON writes String's form, so encoding/json cannot leak the values either. What it
// writes cannot be read back: see Credentials.
func (c GCSCredentials) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("%q", c.String())), nil
}

// UnmarshalJSON refuses the redacted form MarshalJSON writes, with an error that says how to
// persist credentials instead, rather than leave them empty; a JSON object with the fields decodes
// as usual.
func (c *GCSCredentials) UnmarshalJSON(b []byte) error {
	type fields GCSCredentials // without the methods: the usual decoding of an object
	return unmarshalUnredacted("bucket.GCSCredentials", b, (*fields)(c))
}

// unmarshalUnredacted decodes b into v, a credential type without its methods, unless b is a JSON
// string: the redacted form the type's MarshalJSON writes, which holds no value to decode. The
// error never quotes b.
func unmarshalUnredacted(typ string, b []byte, v any) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '"' {
		return fmt.Errorf("%s: the JSON is a string, the redacted form %s.MarshalJSON writes, which holds no credential: "+
			"credentials JSON-encode redacted so that no log can leak them; to persist them, store their fields in a type "+
			"of your own (see bucket.Credentials)", typ, strings.TrimPrefix(typ, "bucket."))
	}
	return json.Unmarshal(b, v)
}

// hidden is the placeholder for a set value, and "" for an empty one (so an incomplete key
// shows as such in a bug report).
func hidden(v string) string {
	if v == "" {
		return `""`
	}
	return secrets.Placeholder
}

type redactedStringer interface {
	fmt.Stringer
	fmt.GoStringer
}

func formatRedacted(f fmt.State, verb rune, v redactedStringer) {
	if verb == 'v' && f.Flag('#') {
		_, _ = f.Write([]byte(v.GoString()))
		return
	}
	_, _ = f.Write([]byte(v.String()))
}
