package memdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
)

// Buckets is a complete COSI bucket backend in memory: buckets by name, accounts by name with
// keys minted once, grants per bucket and mode. It implements bucket.Provisioner,
// bucket.Getter and bucket.AccessGranter, and is the smallest correct one: create is
// idempotent by name with CreateBucketRequest.CheckExisting, a grant by account name returns the
// same account and keys every time, and "not found" on delete and revoke is left to the library.
// It serves S3 info only (no S3 server stands behind it: use examples/memorys3 for keys that
// work).
type Buckets struct {
	// Endpoint and Region are reported in every bucket's S3 info.
	Endpoint, Region string

	mu       sync.Mutex
	byName   map[string]*memBucket // by CreateBucket name
	byID     map[string]*memBucket
	accounts map[string]*memAccount // by account name
	byAcctID map[string]*memAccount
	// Foreign are bucket IDs that exist in the storage but were not created here: GetBucket finds
	// them (static provisioning), CreateBucket never adopts them.
	foreign map[string]bool
}

type memBucket struct {
	id, name, fingerprint string
}

type memAccount struct {
	id, fingerprint string
	buckets         []bucket.Grant
	keyID, secret   string
}

// NewBuckets returns an empty bucket backend reporting the given S3 endpoint and region.
func NewBuckets(endpoint, region string) *Buckets {
	return &Buckets{Endpoint: endpoint, Region: region, byName: map[string]*memBucket{}, byID: map[string]*memBucket{},
		accounts: map[string]*memAccount{}, byAcctID: map[string]*memAccount{}, foreign: map[string]bool{}}
}

// AddForeignBucket records a bucket that exists in the storage but was not created by this
// backend, as an administrator's bucket would: GetBucket reports it, CreateBucket never takes it
// over, DeleteBucket never deletes it.
func (m *Buckets) AddForeignBucket(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.foreign[id] = true
}

func (m *Buckets) info(id string) *bucket.Bucket {
	return &bucket.Bucket{ID: id, S3: &bucket.S3Info{Endpoint: m.Endpoint, Region: m.Region, AddressingStyle: bucket.S3AddressingPath}}
}

// CreateBucket implements bucket.Provisioner.
func (m *Buckets) CreateBucket(_ context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	for _, p := range req.Protocols {
		if p != bucket.S3 {
			return nil, fmt.Errorf("protocol %v: %w", p, driver.ErrUnsupported)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.byName[req.Name]; ok {
		if err := req.CheckExisting(b.fingerprint, m.info(b.id)); err != nil {
			return nil, err
		}
		return m.info(b.id), nil
	}
	if m.foreign[req.Name] {
		return nil, fmt.Errorf("bucket %q exists and was not created by this driver: %w", req.Name, driver.ErrAlreadyExists)
	}
	b := &memBucket{id: req.Name, name: req.Name, fingerprint: req.Fingerprint()}
	m.byName[b.name], m.byID[b.id] = b, b
	return m.info(b.id), nil
}

// GetBucket implements bucket.Getter.
func (m *Buckets) GetBucket(_ context.Context, req *bucket.GetBucketRequest) (*bucket.Bucket, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[req.ID]; !ok && !m.foreign[req.ID] {
		return nil, fmt.Errorf("bucket %q: %w", req.ID, driver.ErrNotFound)
	}
	return m.info(req.ID), nil
}

// DeleteBucket implements bucket.Provisioner. A bucket an account still has access to is
// in use: revoke first, as Kubernetes does (a BucketAccess holds its BucketClaim).
func (m *Buckets) DeleteBucket(_ context.Context, req *bucket.DeleteBucketRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.byID[req.ID]
	if !ok {
		if m.foreign[req.ID] {
			return fmt.Errorf("bucket %q was not created by this driver and is never deleted by it: %w", req.ID, driver.ErrFailedPrecondition)
		}
		return fmt.Errorf("bucket %q: %w", req.ID, driver.ErrNotFound)
	}
	for name, a := range m.accounts {
		if slices.ContainsFunc(a.buckets, func(g bucket.Grant) bool { return g.BucketID == b.id }) {
			return fmt.Errorf("bucket %q: account %q still has access: %w", b.id, name, driver.ErrInUse)
		}
	}
	delete(m.byID, b.id)
	delete(m.byName, b.name)
	return nil
}

// GrantBucketAccess implements bucket.AccessGranter.
func (m *Buckets) GrantBucketAccess(_ context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	if req.Authentication != bucket.AuthKey {
		return nil, fmt.Errorf("authentication %v: only keys: %w", req.Authentication, driver.ErrUnsupported)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range req.Buckets {
		if _, ok := m.byID[g.BucketID]; !ok && !m.foreign[g.BucketID] {
			return nil, fmt.Errorf("bucket %q: %w", g.BucketID, driver.ErrNotFound)
		}
	}
	if a, ok := m.accounts[req.AccountName]; ok {
		existing := m.access(a)
		if err := req.CheckExisting(a.fingerprint, existing); err != nil {
			return nil, err
		}
		return existing, nil
	}
	keyID, err := randomHex(10)
	if err != nil {
		return nil, err
	}
	secret, err := randomHex(20)
	if err != nil {
		return nil, err
	}
	a := &memAccount{id: "acct-" + req.AccountName, fingerprint: req.Fingerprint(), buckets: slices.Clone(req.Buckets),
		keyID: "MEM" + keyID, secret: secret}
	m.accounts[req.AccountName], m.byAcctID[a.id] = a, a
	return m.access(a), nil
}

// access is the answer to a grant of account a; the caller holds m.mu.
func (m *Buckets) access(a *memAccount) *bucket.Access {
	out := &bucket.Access{AccountID: a.id,
		Credentials: bucket.Credentials{S3: &bucket.S3Credentials{AccessKeyID: a.keyID, SecretAccessKey: a.secret}}}
	for _, g := range a.buckets {
		out.Buckets = append(out.Buckets, *m.info(g.BucketID))
	}
	return out
}

// RevokeBucketAccess implements bucket.AccessGranter: the account goes, with its keys.
func (m *Buckets) RevokeBucketAccess(_ context.Context, req *bucket.RevokeBucketAccessRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.byAcctID[req.AccountID]
	if !ok {
		return fmt.Errorf("account %q: %w", req.AccountID, driver.ErrNotFound)
	}
	delete(m.byAcctID, a.id)
	for name, o := range m.accounts {
		if o == a {
			delete(m.accounts, name)
		}
	}
	return nil
}

// KeyLive reports whether an access key is live (granted and not revoked), for tests that
// check a revoke took effect.
func (m *Buckets) KeyLive(keyID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range m.accounts {
		if a.keyID == keyID {
			return true
		}
	}
	return false
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random key: %w", err)
	}
	return hex.EncodeToString(b), nil
}
