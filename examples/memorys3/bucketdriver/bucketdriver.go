// Package bucketdriver is memorys3's COSI backend: it implements driver.BucketProvisioner,
// driver.BucketGetter and driver.BucketAccessGranter on an s3server.Server, so the buckets COSI
// creates are real S3 buckets and the keys a grant returns really sign requests.
//
// What it adds to the S3 server is COSI's idempotency and ownership:
//
//   - A bucket's S3 name is derived from its COSI name alone: the name itself when it is a valid S3
//     bucket name of at most 63 characters (what Kubernetes' "bc-<uid>" names are), otherwise
//     "cosi-" and 32 hex digits of its SHA-256. The same name therefore always gives the same
//     bucket, after a restart too, and the ID needs no table.
//   - A bucket this driver did not create (made through another tool on a shared state directory)
//     is never adopted by a create (ALREADY_EXISTS) and never deleted (FAILED_PRECONDITION). It
//     is what COSI calls statically provisioned ("a bucket that should already exist in the
//     backend", DriverGetExistingBucket): a get finds it and a grant covers it.
//   - A grant is idempotent by account name: the S3 server derives the account ID from the name and
//     keeps its keys, so every reconcile gets the same ID and the same keys. A grant under a known
//     name with other buckets or modes is ALREADY_EXISTS (the S3 server alone would apply it).
//   - Revoking removes the account: its keys fail from the next request on.
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
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// Backend is the COSI backend of one S3 server.
type Backend struct {
	s3 *s3server.Server
}

// New returns the backend managing s3's buckets and keys.
func New(s3 *s3server.Server) *Backend { return &Backend{s3: s3} }

// S3Name is the S3 bucket name (and COSI bucket ID) of a COSI bucket name.
func S3Name(cosiName string) string {
	if len(cosiName) <= 63 && gofakes3.ValidateBucketName(cosiName) == nil {
		return cosiName
	}
	sum := sha256.Sum256([]byte(cosiName))
	return "cosi-" + hex.EncodeToString(sum[:16])
}

func (b *Backend) info(id string) *driver.Bucket {
	return &driver.Bucket{ID: id, S3: &driver.S3Bucket{Endpoint: b.s3.Endpoint(), Region: b.s3.Region(),
		AddressingStyle: driver.S3AddressingPath}}
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

// CreateBucket implements driver.BucketProvisioner.
func (b *Backend) CreateBucket(ctx context.Context, req *driver.CreateBucketRequest) (*driver.Bucket, error) {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return nil, err
	}
	id := S3Name(req.Name)
	if err := b.s3.CreateBucket(ctx, id); err != nil {
		if errors.Is(err, s3server.ErrBucketNotOwned) {
			return nil, fmt.Errorf("bucket %q exists and was not created by this driver, which never takes a bucket over: %w", id, driver.ErrAlreadyExists)
		}
		return nil, mapS3Error(err)
	}
	return b.info(id), nil
}

// GetBucket implements driver.BucketGetter: it finds the buckets this driver created and, for
// COSI's static provisioning, those that exist in the store without it.
func (b *Backend) GetBucket(ctx context.Context, req *driver.GetBucketRequest) (*driver.Bucket, error) {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return nil, err
	}
	if _, err := b.s3.Bucket(ctx, req.ID); err != nil && !errors.Is(err, s3server.ErrBucketNotOwned) {
		return nil, mapS3Error(err)
	}
	return b.info(req.ID), nil
}

// DeleteBucket implements driver.BucketProvisioner: the bucket goes with its objects and its
// grants. A bucket this driver did not create is refused, never deleted.
func (b *Backend) DeleteBucket(ctx context.Context, req *driver.DeleteBucketRequest) error {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return err
	}
	if _, err := b.s3.Bucket(ctx, req.ID); err != nil {
		if errors.Is(err, s3server.ErrBucketNotOwned) {
			return fmt.Errorf("bucket %q was not created by this driver and is never deleted by it: %w", req.ID, driver.ErrFailedPrecondition)
		}
		return mapS3Error(err)
	}
	return mapS3Error(b.s3.DeleteBucket(ctx, req.ID))
}

func s3Mode(m driver.BucketAccessMode) s3server.Mode {
	switch m {
	case driver.BucketReadOnly:
		return s3server.ReadOnly
	case driver.BucketWriteOnly:
		return s3server.WriteOnly
	}
	return s3server.ReadWrite
}

// GrantBucketAccess implements driver.BucketAccessGranter.
func (b *Backend) GrantBucketAccess(ctx context.Context, req *driver.GrantBucketAccessRequest) (*driver.BucketAccess, error) {
	if req.Authentication != driver.AuthKey {
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
	case err == nil && !maps.Equal(existing.Buckets, want):
		return nil, fmt.Errorf("account %q was granted other buckets or modes: %w", req.AccountName, driver.ErrAlreadyExists)
	case err != nil && !errors.Is(err, s3server.ErrAccountNotFound):
		return nil, mapS3Error(err)
	}
	acct, err := b.s3.GrantAccess(ctx, req.AccountName, want)
	if err != nil {
		return nil, mapS3Error(err)
	}
	out := &driver.BucketAccess{AccountID: acct.ID, Credentials: driver.Credentials{S3: &driver.S3Credentials{
		AccessKeyID: acct.Credentials.AccessKeyID, SecretAccessKey: acct.Credentials.SecretAccessKey}}}
	for _, g := range req.Buckets {
		out.Buckets = append(out.Buckets, *b.info(g.BucketID))
	}
	return out, nil
}

// RevokeBucketAccess implements driver.BucketAccessGranter: the account and its keys go.
func (b *Backend) RevokeBucketAccess(ctx context.Context, req *driver.RevokeBucketAccessRequest) error {
	return mapS3Error(b.s3.RevokeAccess(ctx, req.AccountID))
}
