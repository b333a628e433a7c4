package s3server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// Mode is what a grant lets an access key do in one bucket.
type Mode int

// The access modes of a grant, as COSI names them.
const (
	// ReadWrite allows reading, listing and writing objects.
	ReadWrite Mode = iota + 1
	// ReadOnly allows GET/HEAD of objects and listing.
	ReadOnly
	// WriteOnly allows PUT/POST/DELETE of objects and multipart uploads, and no reads.
	WriteOnly
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case ReadWrite:
		return "read-write"
	case ReadOnly:
		return "read-only"
	case WriteOnly:
		return "write-only"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

func (m Mode) valid() bool { return m >= ReadWrite && m <= WriteOnly }

// Credentials are an access key pair. String and GoString hide the secret, so a credential
// that reaches a log line or an error by %v shows its access key ID only.
type Credentials struct {
	// AccessKeyID is the public half, sent in every request's credential scope.
	AccessKeyID string
	// SecretAccessKey signs requests; it never leaves the server except in GrantAccess's answer.
	SecretAccessKey string
}

// String shows the access key ID only.
func (c Credentials) String() string {
	return "{AccessKeyID:" + c.AccessKeyID + " SecretAccessKey:[redacted]}"
}

// GoString shows the access key ID only, for %#v.
func (c Credentials) GoString() string { return "s3server.Credentials" + c.String() }

// Account is what GrantAccess answers: an account, its keys and its grants.
type Account struct {
	// ID identifies the account; the same name always yields the same ID.
	ID string
	// Name is the name the account was granted under (COSI's account_name).
	Name string
	// Credentials are the account's keys; the same for every grant of the same name.
	Credentials Credentials
	// Buckets maps each granted bucket to its mode.
	Buckets map[string]Mode
}

// Errors of the Go API. They are wrapped with context; test with errors.Is.
var (
	// ErrBucketNotFound: the bucket does not exist or was not created by this server.
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrBucketNotOwned: a bucket of that name exists in the store but this server did not
	// create it. It is never adopted, granted or deleted.
	ErrBucketNotOwned = errors.New("bucket exists but was not created by this server")
	// ErrInvalidArgument: a name, mode or grant list is malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the server has been closed.
	ErrClosed = errors.New("server closed")
)

// CreateBucket creates a bucket. It is idempotent for buckets this server created: creating
// one again succeeds and changes nothing. A bucket that exists in the store without being
// recorded as this server's (made another way, or left by another tool in a shared state
// directory) is refused with ErrBucketNotOwned, never adopted. Names follow S3's rules (3-63
// characters of lower-case letters, digits, '-' and '.'); others are ErrInvalidArgument.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	if err := gofakes3.ValidateBucketName(name); err != nil {
		return fmt.Errorf("bucket name %q: %w", name, ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ours := s.buckets[name]; !ours {
		exists, err := s.backend.BucketExists(name)
		if err != nil {
			return fmt.Errorf("look up bucket %s: %w", name, err)
		}
		if exists {
			return fmt.Errorf("create bucket %s: %w", name, ErrBucketNotOwned)
		}
		// Record ownership before creating: a crash in between leaves a record without a
		// bucket, which the retry completes; the other order would leave a foreign-looking
		// bucket that no retry could ever claim.
		rec := bucketRecord{Created: s.now().UTC()}
		if err := s.state.commit(change{putBuckets: map[string]bucketRecord{name: rec}}); err != nil {
			return fmt.Errorf("record bucket %s: %w", name, err)
		}
		s.buckets[name] = rec
	}
	err := s.backend.CreateBucket(name)
	switch {
	case gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists):
		return nil
	case err != nil:
		return fmt.Errorf("create bucket %s in the store: %w", name, err)
	}
	// A new bucket starts with no upload in progress, even one a client started in an earlier
	// bucket of this name while it was being deleted: no key is granted the bucket yet.
	if err := s.abortUploads(name); err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// DeleteBucket deletes a bucket this server created, with every object in it (COSI's Delete
// deletion policy), and removes it from every grant, so a later bucket of the same name does
// not inherit old keys. Deleting a bucket that does not exist succeeds; deleting one this
// server did not create is ErrBucketNotOwned.
func (s *Server) DeleteBucket(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ours := s.buckets[name]; !ours {
		exists, err := s.backend.BucketExists(name)
		if err != nil {
			return fmt.Errorf("look up bucket %s: %w", name, err)
		}
		if exists {
			return fmt.Errorf("delete bucket %s: %w", name, ErrBucketNotOwned)
		}
		return nil
	}
	// Uploads in progress, objects and bucket first, then the record: a crash in between
	// leaves a record whose bucket is gone, which the retry cleans up.
	if err := s.abortUploads(name); err != nil {
		return fmt.Errorf("delete bucket %s: %w", name, err)
	}
	if err := s.emptyAndDelete(name); err != nil {
		return err
	}
	ch := change{delBuckets: []string{name}, putAccounts: map[string]accountRecord{}}
	for id, acc := range s.accounts {
		if _, ok := acc.Buckets[name]; ok {
			upd := acc.clone()
			delete(upd.Buckets, name)
			ch.putAccounts[id] = upd
		}
	}
	if err := s.state.commit(ch); err != nil {
		return fmt.Errorf("forget bucket %s: %w", name, err)
	}
	delete(s.buckets, name)
	maps.Copy(s.accounts, ch.putAccounts)
	s.publish()
	return nil
}

// emptyAndDelete removes a bucket and its objects from the store.
func (s *Server) emptyAndDelete(name string) error {
	exists, err := s.backend.BucketExists(name)
	if err != nil {
		return fmt.Errorf("look up bucket %s: %w", name, err)
	}
	if !exists {
		return nil
	}
	type forceDeleter interface{ ForceDeleteBucket(name string) error }
	fd, ok := s.backend.(forceDeleter)
	if !ok {
		return fmt.Errorf("delete bucket %s: the store cannot delete a bucket with its objects", name)
	}
	if err := fd.ForceDeleteBucket(name); err != nil {
		return fmt.Errorf("delete bucket %s with its objects: %w", name, err)
	}
	return nil
}

// BucketInfo describes a bucket this server created.
type BucketInfo struct {
	// Name is the S3 bucket name.
	Name string
	// Created is when CreateBucket first recorded it.
	Created time.Time
}

// Bucket looks a bucket up: ErrBucketNotFound if it does not exist, ErrBucketNotOwned if it
// exists but this server did not create it.
func (s *Server) Bucket(ctx context.Context, name string) (BucketInfo, error) {
	s.mu.Lock()
	rec, ours := s.buckets[name]
	s.mu.Unlock()
	exists, err := s.backend.BucketExists(name)
	if err != nil {
		return BucketInfo{}, fmt.Errorf("look up bucket %s: %w", name, err)
	}
	switch {
	case ours && exists:
		return BucketInfo{Name: name, Created: rec.Created}, nil
	case exists:
		return BucketInfo{}, fmt.Errorf("bucket %s: %w", name, ErrBucketNotOwned)
	default:
		return BucketInfo{}, fmt.Errorf("bucket %s: %w", name, ErrBucketNotFound)
	}
}

// GrantAccess gives the account named accountName access to the given buckets, each with its
// mode. It is idempotent by name: the first call mints the account's keys (crypto/rand) and
// every later call for the same name, after a restart too, answers the same account ID and
// the same keys. A later call with other buckets or modes replaces the grants and keeps the
// keys. Every bucket must exist (ErrBucketNotFound otherwise), whether this server created it
// or not: a bucket made by other means can be granted, as COSI's static provisioning expects,
// though never adopted or deleted. The map must not be empty (ErrInvalidArgument).
func (s *Server) GrantAccess(ctx context.Context, accountName string, buckets map[string]Mode) (*Account, error) {
	if accountName == "" || len(accountName) > 253 {
		return nil, fmt.Errorf("account name must be 1 to 253 bytes: %w", ErrInvalidArgument)
	}
	if len(buckets) == 0 {
		return nil, fmt.Errorf("grant for %s names no bucket: %w", accountName, ErrInvalidArgument)
	}
	for b, m := range buckets {
		if !m.valid() {
			return nil, fmt.Errorf("grant of bucket %s: mode %v: %w", b, m, ErrInvalidArgument)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	for b := range buckets {
		if _, ours := s.buckets[b]; ours {
			continue
		}
		// A bucket made by other means (a statically provisioned one, in COSI's terms) may be
		// granted too: it is used, never adopted or deleted.
		exists, err := s.backend.BucketExists(b)
		if err != nil {
			return nil, fmt.Errorf("look up bucket %s: %w", b, err)
		}
		if !exists {
			return nil, fmt.Errorf("grant of bucket %s: %w", b, ErrBucketNotFound)
		}
	}
	id := AccountID(accountName)
	rec, ok := s.accounts[id]
	if ok && rec.Name != accountName { // a 128-bit hash collision: refuse rather than share keys
		return nil, fmt.Errorf("account ID %s is taken by another name: %w", id, ErrInvalidArgument)
	}
	if !ok {
		creds, err := newCredentials()
		if err != nil {
			return nil, err
		}
		rec = accountRecord{Name: accountName, Credentials: creds}
	} else {
		rec = rec.clone()
	}
	if !ok || !maps.Equal(rec.Buckets, buckets) {
		rec.Buckets = maps.Clone(buckets)
		if err := s.state.commit(change{putAccounts: map[string]accountRecord{id: rec}}); err != nil {
			return nil, fmt.Errorf("record grant for %s: %w", accountName, err)
		}
		s.accounts[id] = rec
		s.publish()
	}
	return rec.account(id), nil
}

// RevokeAccess deletes an account and its keys: requests signed with them fail from the
// moment RevokeAccess returns (InvalidAccessKeyId). Revoking an unknown account succeeds.
// Granting the same name again afterwards mints new keys.
func (s *Server) RevokeAccess(ctx context.Context, accountID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.accounts[accountID]; !ok {
		return nil
	}
	if err := s.state.commit(change{delAccounts: []string{accountID}}); err != nil {
		return fmt.Errorf("revoke account %s: %w", accountID, err)
	}
	delete(s.accounts, accountID)
	s.publish()
	return nil
}

// AccountID is the account ID GrantAccess answers for a name: "acct-" and 32 hex digits of
// the name's SHA-256. Deriving it from the name makes it immutable by construction, and it
// fits COSI's ID rules ([A-Za-z0-9._/-], at most 2048 characters).
func AccountID(accountName string) string {
	sum := sha256.Sum256([]byte(accountName))
	return "acct-" + hex.EncodeToString(sum[:16])
}

// Buckets lists the buckets this server created, sorted.
func (s *Server) Buckets(ctx context.Context) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.buckets))
	for n := range s.buckets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrAccountNotFound: no account has the ID (never granted, or revoked).
var ErrAccountNotFound = errors.New("account not found")

// Account returns the account with the given ID and its grants, or ErrAccountNotFound. A COSI
// driver reads it before a grant to tell a repeated grant from an incompatible one, which
// GrantAccess alone would apply.
func (s *Server) Account(ctx context.Context, accountID string) (*Account, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.accounts[accountID]
	if !ok {
		return nil, fmt.Errorf("account %s: %w", accountID, ErrAccountNotFound)
	}
	return rec.account(accountID), nil
}
