// Package bucketdriver is memorys3's COSI backend: it implements bucket.Provisioner,
// bucket.Getter and bucket.AccessGranter on an s3server.Server, so the buckets COSI
// creates are real S3 buckets and the keys a grant returns really sign requests.
//
// What it adds to the S3 server is COSI's idempotency and ownership:
//
//   - A bucket's S3 name is derived from its COSI name alone, injectively: the name itself when it
//     is a valid S3 bucket name of at most 63 characters that does not start with "cosi-" (what
//     Kubernetes' "bc-<uid>" names are), otherwise "cosi-" and 32 hex digits of its SHA-256. The
//     prefix is reserved for hashed names, so a name can never map to another name's hash. The
//     same name therefore always gives the same bucket, after a restart too, and the ID needs no
//     table. The S3 server also records the COSI name each bucket was created for, and a create
//     of another name that maps to it (a hash collision) is ALREADY_EXISTS, never the other
//     claimant's bucket.
//   - A bucket this driver did not create (made through another tool on a shared state directory)
//     is never adopted by a create (ALREADY_EXISTS) and never deleted (FAILED_PRECONDITION). It
//     is what COSI calls statically provisioned ("a bucket that should already exist in the
//     backend", DriverGetExistingBucket): a get finds it and a grant covers it.
//   - Deleting a bucket revokes it from every grant before any data goes; a delete a crash
//     interrupted is finished by the retried delete (always passed to the S3 server while it
//     has a record of the bucket), by a create of the name, or at start-up.
//   - A grant is idempotent by account name: the S3 server derives the account ID from the name and
//     keeps its keys, so every reconcile gets the same ID and the same keys. A grant under a known
//     name with other buckets or modes than it was granted is ALREADY_EXISTS (the S3 server alone
//     would apply it). Repeating a grant whose bucket was deleted is NOT_FOUND while the bucket is
//     gone and, once a bucket of that name is created again, OK with the same ID and keys, which
//     then reach it. An account whose every bucket was deleted does not authenticate until then.
//   - Revoking takes the given buckets out of the account's grant; when none is left the account
//     and its keys are deleted, and its keys fail from the next request on.
//
// memorys3 takes no bucket or access parameters: an unknown parameter is INVALID_ARGUMENT rather
// than a typo silently ignored. Only key authentication is offered (there are no service
// accounts in an in-process S3 server).
package bucketdriver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// Backend is the COSI backend of one S3 server.
type Backend struct {
	s3 *s3server.Server
}

// New returns the backend managing s3's buckets and keys.
func New(s3 *s3server.Server) *Backend { return &Backend{s3: s3} }

// hashedPrefix starts every S3 name S3Name derives by hashing, and no other.
const hashedPrefix = "cosi-"

// S3Name is the S3 bucket name (and COSI bucket ID) of a COSI bucket name: the name itself when
// it is a valid S3 name not starting with "cosi-", else "cosi-" and 32 hex digits of its
// SHA-256. Distinct names give distinct S3 names (short of a 128-bit hash collision, which
// CreateBucket refuses): names kept as they are never start with the prefix every hashed
// name has.
func S3Name(cosiName string) string {
	if !strings.HasPrefix(cosiName, hashedPrefix) && gofakes3.ValidateBucketName(cosiName) == nil {
		return cosiName
	}
	sum := sha256.Sum256([]byte(cosiName))
	return hashedPrefix + hex.EncodeToString(sum[:16])
}

func (b *Backend) info(id string) *bucket.Bucket {
	return &bucket.Bucket{ID: id, S3: &bucket.S3Info{Endpoint: b.s3.Endpoint(), Region: b.s3.Region(),
		AddressingStyle: bucket.S3AddressingPath}}
}

func noParameters(what string, params map[string]string) error {
	if len(params) == 0 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(params))
	return fmt.Errorf("memorys3 takes no %s parameters, got %s: %w", what, strings.Join(keys, ", "), driver.ErrInvalidArgument)
}

// mapS3Error turns the S3 server's errors into the library's sentinels.
func mapS3Error(err error) error {
	switch {
	case errors.Is(err, s3server.ErrBucketNotFound), errors.Is(err, s3server.ErrAccountNotFound):
		return fmt.Errorf("%w: %w", err, driver.ErrNotFound)
	case errors.Is(err, s3server.ErrInvalidArgument):
		return fmt.Errorf("%w: %w", err, driver.ErrInvalidArgument)
	case errors.Is(err, s3server.ErrClosed):
		return fmt.Errorf("%w: %w", err, driver.ErrUnavailable)
	}
	return err
}

// CreateBucket implements bucket.Provisioner.
func (b *Backend) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return nil, err
	}
	id := S3Name(req.Name)
	if err := b.s3.CreateBucketFor(ctx, id, req.Name); err != nil {
		switch {
		case errors.Is(err, s3server.ErrBucketNotOwned):
			return nil, fmt.Errorf("bucket %q exists and was not created by this driver, which never takes a bucket over: %w", id, driver.ErrAlreadyExists)
		case errors.Is(err, s3server.ErrBucketClaimed):
			return nil, fmt.Errorf("bucket %q was created for another bucket name: %w", id, driver.ErrAlreadyExists)
		}
		return nil, mapS3Error(err)
	}
	return b.info(id), nil
}

// GetBucket implements bucket.Getter: it finds the buckets this driver created and, for
// COSI's static provisioning, those that exist in the store without it.
func (b *Backend) GetBucket(ctx context.Context, req *bucket.GetBucketRequest) (*bucket.Bucket, error) {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return nil, err
	}
	if _, err := b.s3.Bucket(ctx, req.ID); err != nil && !errors.Is(err, s3server.ErrBucketNotOwned) {
		return nil, mapS3Error(err)
	}
	return b.info(req.ID), nil
}

// DeleteBucket implements bucket.Provisioner: the bucket goes with its objects and its
// grants. A bucket this driver did not create is refused, never deleted. The S3 server is asked
// whatever the store holds: while it has a record of the bucket, it has work to finish.
func (b *Backend) DeleteBucket(ctx context.Context, req *bucket.DeleteBucketRequest) error {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return err
	}
	err := b.s3.DeleteBucket(ctx, req.ID)
	if errors.Is(err, s3server.ErrBucketNotOwned) {
		return fmt.Errorf("bucket %q was not created by this driver and is never deleted by it: %w", req.ID, driver.ErrFailedPrecondition)
	}
	return mapS3Error(err)
}

func s3Mode(m bucket.AccessMode) s3server.Mode {
	switch m {
	case bucket.ReadOnly:
		return s3server.ReadOnly
	case bucket.WriteOnly:
		return s3server.WriteOnly
	}
	return s3server.ReadWrite
}

// GrantBucketAccess implements bucket.AccessGranter.
func (b *Backend) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	if req.Authentication != bucket.AuthKey {
		return nil, fmt.Errorf("memorys3 grants access keys only, not %v: %w", req.Authentication, driver.ErrUnsupported)
	}
	if err := noParameters("access", req.Parameters); err != nil {
		return nil, err
	}
	want := make(map[string]s3server.Mode, len(req.Buckets))
	for _, g := range req.Buckets {
		want[g.BucketID] = s3Mode(g.Mode)
	}
	id := s3server.AccountID(req.AccountName)
	existing, err := b.s3.Account(ctx, id)
	switch {
	// Compared with what was granted, not with what is in force: a repeat after a bucket was
	// deleted is the same grant. An account with nothing granted (only in state written before
	// grants were recorded apart) has nothing to conflict with.
	case err == nil && len(existing.Granted) > 0 && !maps.Equal(existing.Granted, want):
		return nil, fmt.Errorf("account %q was granted other buckets or modes: %w", req.AccountName, driver.ErrAlreadyExists)
	case err != nil && !errors.Is(err, s3server.ErrAccountNotFound):
		return nil, mapS3Error(err)
	}
	acct, err := b.s3.GrantAccess(ctx, req.AccountName, want)
	if err != nil {
		return nil, mapS3Error(err)
	}
	out := &bucket.Access{AccountID: acct.ID, Credentials: bucket.Credentials{S3: &bucket.S3Credentials{
		AccessKeyID: acct.Credentials.AccessKeyID, SecretAccessKey: acct.Credentials.SecretAccessKey}}}
	for _, g := range req.Buckets {
		out.Buckets = append(out.Buckets, *b.info(g.BucketID))
	}
	return out, nil
}

// RevokeBucketAccess implements bucket.AccessGranter: the given buckets leave the
// account's grant, and when none is left the account and its keys go. Both wire versions name at
// least one bucket (v1alpha1 its one bucket_id, v1alpha2 one or more; the library refuses an
// empty list); a request naming none, which only a Go caller can make, revokes the whole account.
func (b *Backend) RevokeBucketAccess(ctx context.Context, req *bucket.RevokeBucketAccessRequest) error {
	return mapS3Error(b.s3.RevokeAccess(ctx, req.AccountID, req.BucketIDs...))
}
