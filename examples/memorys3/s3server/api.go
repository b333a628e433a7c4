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
	"go.uber.org/zap"
)

// Mode is what a grant lets an access key do in one bucket.
type Mode int

// The access modes of a grant, as COSI names them.
const (
	// ReadWrite allows reading, listing and writing objects.
	ReadWrite Mode = iota + 1
	// ReadOnly allows GET/HEAD of objects and listing.
	ReadOnly
	// WriteOnly allows PUT/POST/DELETE of objects and multipart uploads, and no reads: not
	// even a listing of uploads or parts.
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
	// Buckets maps each bucket the keys reach now to its mode: the granted buckets not deleted
	// since they were granted. With none, the keys do not authenticate (InvalidAccessKeyId)
	// until a grant gives the account buckets again.
	Buckets map[string]Mode
	// Granted is what the grants asked for, less what was revoked: Buckets and the buckets
	// deleted since, which stay here so that a repeated grant is recognised as the same one.
	Granted map[string]Mode
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
	// ErrBucketClaimed: the bucket was created for another name (CreateBucketFor).
	ErrBucketClaimed = errors.New("bucket was created for another name")
)

// CreateBucket creates a bucket for its own name: CreateBucketFor(ctx, name, name).
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	return s.CreateBucketFor(ctx, name, name)
}

// CreateBucketFor creates the bucket name on behalf of createdFor, the name the caller knows
// it by (a COSI driver passes the COSI bucket name it mapped to name), and records that name
// with the bucket. It is idempotent for the same createdFor: creating the bucket again
// succeeds and changes nothing. A bucket recorded for another name is ErrBucketClaimed, so two
// names that map to one bucket name (a hash collision, or a mapping that is not injective)
// never share a bucket; a bucket recorded before names were recorded is claimed by the first
// CreateBucketFor after the upgrade. A bucket whose deletion was interrupted is deleted first
// (its objects, uploads and grants are not inherited) and then created afresh. A bucket that
// exists in the store without being recorded as this server's (made another way, or left by
// another tool in a shared state directory) is refused with ErrBucketNotOwned, never adopted.
// Names follow S3's rules (3-63 characters of lower-case letters, digits, '-' and '.');
// others, and an empty createdFor, are ErrInvalidArgument.
func (s *Server) CreateBucketFor(ctx context.Context, name, createdFor string) error {
	if err := gofakes3.ValidateBucketName(name); err != nil {
		return fmt.Errorf("bucket name %q: %w", name, ErrInvalidArgument)
	}
	if createdFor == "" {
		return fmt.Errorf("bucket %s: created for an empty name: %w", name, ErrInvalidArgument)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	rec, ours := s.buckets[name]
	if ours && rec.Deleting {
		if err := s.finishDelete(name); err != nil {
			return fmt.Errorf("create bucket %s: finish its interrupted deletion: %w", name, err)
		}
		ours = false
	}
	switch {
	case ours && rec.CreatedFor == createdFor:
	case ours && rec.CreatedFor != "":
		return fmt.Errorf("create bucket %s for %q: %w", name, createdFor, ErrBucketClaimed)
	case ours: // recorded before names were: the first claimant after the upgrade keeps it
		rec.CreatedFor = createdFor
		if err := s.state.commit(change{putBuckets: map[string]bucketRecord{name: rec}}); err != nil {
			return fmt.Errorf("record bucket %s: %w", name, err)
		}
		s.buckets[name] = rec
	default:
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
		rec := bucketRecord{Created: s.now().UTC(), CreatedFor: createdFor}
		if err := s.state.commit(change{putBuckets: map[string]bucketRecord{name: rec}}); err != nil {
			return fmt.Errorf("record bucket %s: %w", name, err)
		}
		s.lastGen++
		rec.gen = s.lastGen
		s.buckets[name] = rec
		s.publish()
	}
	err := s.backend.CreateBucket(name)
	switch {
	case gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists):
		return nil
	case err != nil:
		return fmt.Errorf("create bucket %s in the store: %w", name, err)
	}
	// A new bucket starts with no upload in progress, even one left by an earlier bucket of
	// this name that was removed from the store behind the server's back.
	s.uploads.dropBucket(name)
	return nil
}

// DeleteBucket deletes a bucket this server created, with every object and upload in it
// (COSI's Delete deletion policy), and takes it out of every grant in force, so a later
// bucket of the same name is reachable only through a new grant. Deleting a bucket that does
// not exist succeeds; deleting one this server did not create is ErrBucketNotOwned.
//
// The steps are ordered so that a crash between any two leaves nothing reachable: first, in
// one commit of the access state, the record is marked as being deleted and every grant in
// force loses the bucket (keys lose access before any data goes); then its uploads are
// aborted and the bucket is deleted from the store with its objects; then the record goes.
// A record marked as being deleted makes the bucket not found to Bucket and GrantAccess, and
// the deletion is finished by a retried DeleteBucket, by CreateBucket of the name, and at
// start-up.
func (s *Server) DeleteBucket(ctx context.Context, name string) error {
	if gofakes3.ValidateBucketName(name) != nil {
		return nil // no bucket has that name
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
			return fmt.Errorf("delete bucket %s: %w", name, ErrBucketNotOwned)
		}
		return nil
	}
	if err := s.beginDelete(name); err != nil {
		return err
	}
	if s.stopAfter(deleteBegun) {
		return errSimulatedCrash
	}
	return s.finishDelete(name)
}

// beginDelete is DeleteBucket's first step, one commit: the record is marked as being deleted
// and the bucket leaves every grant in force. s.mu must be held.
func (s *Server) beginDelete(name string) error {
	rec := s.buckets[name]
	ch := change{putAccounts: map[string]accountRecord{}}
	if !rec.Deleting {
		rec.Deleting = true
		ch.putBuckets = map[string]bucketRecord{name: rec}
	}
	for id, acc := range s.accounts {
		if _, ok := acc.Buckets[name]; ok {
			upd := acc.clone()
			delete(upd.Buckets, name)
			ch.putAccounts[id] = upd
		}
	}
	if len(ch.putBuckets) == 0 && len(ch.putAccounts) == 0 {
		return nil // begun already, by a call a crash or an error interrupted
	}
	if err := s.state.commit(ch); err != nil {
		return fmt.Errorf("delete bucket %s: revoke its grants: %w", name, err)
	}
	s.buckets[name] = rec
	maps.Copy(s.accounts, ch.putAccounts)
	s.publish()
	return nil
}

// finishDelete is the rest of DeleteBucket, for a bucket beginDelete marked: uploads, then
// objects and bucket, then the record. Each step is idempotent, so an interrupted run is
// finished by running it again. s.mu must be held.
func (s *Server) finishDelete(name string) error {
	if s.uploadsDropped != nil {
		s.uploadsDropped(name)
	}
	s.uploads.dropBucket(name)
	if s.stopAfter(deleteUploadsAborted) {
		return errSimulatedCrash
	}
	if err := s.emptyAndDelete(name); err != nil {
		return err
	}
	if s.stopAfter(deleteStoreDeleted) {
		return errSimulatedCrash
	}
	if err := s.state.commit(change{delBuckets: []string{name}}); err != nil {
		return fmt.Errorf("forget bucket %s: %w", name, err)
	}
	delete(s.buckets, name)
	return nil
}

// finishPendingDeletions finishes, at start-up, the deletions a crash interrupted. A failure
// is logged, not fatal: no grant names such a bucket any more, and a retried DeleteBucket or
// a CreateBucket of the name tries again.
func (s *Server) finishPendingDeletions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, rec := range s.buckets {
		if !rec.Deleting {
			continue
		}
		if err := s.finishDelete(name); err != nil {
			s.log.Error("finishing an interrupted bucket deletion", zap.String("bucket", name), zap.Error(err))
		}
	}
}

// deleteStep names a point between two durable steps of DeleteBucket.
type deleteStep int

const (
	deleteBegun          deleteStep = iota + 1 // grants revoked, record marked as being deleted
	deleteUploadsAborted                       // and the multipart uploads aborted
	deleteStoreDeleted                         // and the bucket and objects gone from the store
)

// errSimulatedCrash is what DeleteBucket answers where a test stopped it.
var errSimulatedCrash = errors.New("deletion stopped by a test, as a crash would stop it")

// stopAfter says whether a test asked DeleteBucket to stop after step; s.mu is held.
func (s *Server) stopAfter(step deleteStep) bool {
	return s.stopDeleteAfter != 0 && s.stopDeleteAfter == step
}

// emptyAndDelete removes a bucket and its objects from the store; a bucket already gone is
// fine.
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

// Bucket looks a bucket up: ErrBucketNotFound if it does not exist (a name that is not a
// valid S3 bucket name never does), ErrBucketNotOwned if it exists but this server did not
// create it.
func (s *Server) Bucket(ctx context.Context, name string) (BucketInfo, error) {
	if gofakes3.ValidateBucketName(name) != nil {
		// Not an S3 bucket name, whatever the store may hold under it.
		return BucketInfo{}, fmt.Errorf("bucket %q: %w", name, ErrBucketNotFound)
	}
	s.mu.Lock()
	rec, ours := s.buckets[name]
	s.mu.Unlock()
	exists, err := s.backend.BucketExists(name)
	if err != nil {
		return BucketInfo{}, fmt.Errorf("look up bucket %s: %w", name, err)
	}
	switch {
	case ours && rec.Deleting: // its deletion was interrupted: gone for every purpose
		return BucketInfo{}, fmt.Errorf("bucket %s: %w", name, ErrBucketNotFound)
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
// keys; a call with the same buckets and modes puts back in force a grant whose bucket was
// deleted and created again. Every bucket must exist (ErrBucketNotFound otherwise, also for a
// bucket whose deletion is under way and for a name that is not a valid S3 bucket name),
// whether this server created it or not: a bucket made by other means can be granted, as
// COSI's static provisioning expects, though never adopted or deleted. The map must not be
// empty (ErrInvalidArgument).
func (s *Server) GrantAccess(ctx context.Context, accountName string, buckets map[string]Mode) (*Account, error) {
	if accountName == "" || len(accountName) > 253 {
		return nil, fmt.Errorf("account name must be 1 to 253 bytes: %w", ErrInvalidArgument)
	}
	if len(buckets) == 0 {
		return nil, fmt.Errorf("grant for %s names no bucket: %w", accountName, ErrInvalidArgument)
	}
	for b, m := range buckets {
		if gofakes3.ValidateBucketName(b) != nil {
			// Not an S3 bucket name, whatever the store may hold under it.
			return nil, fmt.Errorf("grant of bucket %q: %w", b, ErrBucketNotFound)
		}
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
		if rec, ours := s.buckets[b]; ours {
			if rec.Deleting {
				return nil, fmt.Errorf("grant of bucket %s: %w", b, ErrBucketNotFound)
			}
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
	if !ok || !maps.Equal(rec.Granted, buckets) || !maps.Equal(rec.Buckets, buckets) {
		rec.Granted, rec.Buckets = maps.Clone(buckets), maps.Clone(buckets)
		if err := s.state.commit(change{putAccounts: map[string]accountRecord{id: rec}}); err != nil {
			return nil, fmt.Errorf("record grant for %s: %w", accountName, err)
		}
		s.accounts[id] = rec
		s.publish()
	}
	return rec.account(id), nil
}

// RevokeAccess takes the given buckets out of an account's grants; requests signed with its
// keys lose them from the moment RevokeAccess returns. When no granted bucket remains, or
// when no bucket is given, the account and its keys are deleted: its requests fail with
// InvalidAccessKeyId, and granting the same name again mints new keys. Revoking an unknown
// account, or a bucket the account was not granted, succeeds and changes nothing.
func (s *Server) RevokeAccess(ctx context.Context, accountID string, buckets ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	rec, ok := s.accounts[accountID]
	if !ok {
		return nil
	}
	upd := rec.clone()
	for _, b := range buckets {
		delete(upd.Granted, b)
		delete(upd.Buckets, b)
	}
	var ch change
	switch {
	case len(buckets) == 0 || len(upd.Granted) == 0:
		ch.delAccounts = []string{accountID}
	case len(upd.Granted) == len(rec.Granted) && len(upd.Buckets) == len(rec.Buckets):
		return nil // none of them was granted
	default:
		ch.putAccounts = map[string]accountRecord{accountID: upd}
	}
	if err := s.state.commit(ch); err != nil {
		return fmt.Errorf("revoke account %s: %w", accountID, err)
	}
	if len(ch.delAccounts) > 0 {
		delete(s.accounts, accountID)
	} else {
		s.accounts[accountID] = upd
	}
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

// Buckets lists the buckets this server created, sorted, without those being deleted.
func (s *Server) Buckets(ctx context.Context) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.buckets))
	for n, rec := range s.buckets {
		if !rec.Deleting {
			names = append(names, n)
		}
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
