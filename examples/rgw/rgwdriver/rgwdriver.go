// Package rgwdriver is a COSI backend on Ceph's object gateway (RGW), in the spirit of
// ceph-cosi-driver, built on csikit's bucket contract: it implements bucket.Provisioner,
// bucket.Getter, bucket.AccessGranter and driver.Prober, and package plugin serves it as COSI
// v1alpha1 and v1alpha2. It talks to RGW over HTTP only (S3 with aws-sdk-go-v2, the admin ops API
// with go-ceph's pure-Go rgw/admin), so it builds with CGO_ENABLED=0 and needs no Ceph library.
// It is tested against Ceph 16.2 (Pacific) and uses nothing newer.
//
// What lives where in RGW, so that the driver keeps no state of its own and a restart (or a kill
// -9 at any point) loses nothing:
//
//   - Buckets are created over S3 by a dedicated RGW user, the owner (Config.OwnerUID, made by the
//     driver on first use with the admin credentials). Ownership is the record: a bucket the
//     owner does not own was not created by this driver, and is never adopted by a create
//     (ALREADY_EXISTS), deleted (FAILED_PRECONDITION) or granted (FAILED_PRECONDITION). A
//     bucket's name is derived from its COSI name alone, injectively (BucketName), and is its
//     COSI bucket ID.
//   - Every bucket is closed for its whole life, whatever its grants: its policy always holds a
//     Deny of everyone but the owner and the accounts granted now, and Denies of PutObject
//     carrying an ACL (policy.go); its public access block has IgnorePublicAcls, so that even
//     without the policy no ACL opens an object to anonymous or every authenticated request.
//     Create, get, grant and revoke all leave a bucket so; CloseBuckets brings every bucket of
//     the driver to it (those an earlier version left without a policy).
//   - A grant is an RGW user of its own, "cosi-" and a hash of the account name (AccountUID), with
//     one S3 key and no right to create buckets, plus statements naming it in the policy of each
//     granted bucket: an Allow of its mode's actions (read-write, read-only, write-only) and a
//     Deny of every other object action, ACL writes included. The user's display name records
//     the account name and what was granted, in the same admin call that creates the user and
//     its key: a repeated grant finds the same user and answers the same key; one with other
//     buckets or modes is ALREADY_EXISTS; a grant interrupted after the user was made is
//     finished by its retry.
//   - A revoke takes the named buckets out of the user's record, deleting its keys when nothing
//     is left (from that request on, the key authenticates nowhere), then takes the account's
//     statements out of those buckets' policies, which puts it under each bucket's Deny of
//     everyone else, objects it owns there included, and resets the ACLs of those objects to the
//     owner alone (RGW checks an UploadPartCopy's source by its ACL only); a user with nothing
//     left goes last. Deleting a bucket first revokes it from
//     every account its policy names (so a key whose only bucket it was is deleted, and none is
//     answered again by a grant on a later bucket of that name), then deletes it with its
//     objects and policy.
//
// Every RGW fault that is not final (nothing listening, timeouts, 5xx, answers cut short) is
// driver.ErrUnavailable, which the sidecars retry; a call's own deadline stays DEADLINE_EXCEEDED.
// Probe answers not ready while RGW does not answer, or cannot reach its OSDs, and ready again as
// soon as it does, with no restart. The admin credentials come from the driver's Config (COSI has
// no per-call secrets) and never appear in an error or a log line; neither do the owner's or any
// account's keys.
//
// Edits of one bucket's policy are serialised inside the process, so run one replica of the
// driver per RGW (as the COSI sidecar's deployment does); two would need a lock in RGW itself.
package rgwdriver

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/ceph/go-ceph/rgw/admin"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
)

// Secret is a credential in the driver's configuration. It prints as "[REDACTED]" with every fmt
// verb and in JSON, so a Config logged or quoted in an error never shows it.
type Secret string

// String returns "[REDACTED]".
func (Secret) String() string { return "[REDACTED]" }

// GoString returns a redacted literal, for %#v.
func (Secret) GoString() string { return `rgwdriver.Secret("[REDACTED]")` }

// MarshalJSON writes "[REDACTED]".
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"[REDACTED]"`), nil }

// DefaultOwnerUID is the RGW user that owns the buckets the driver creates, unless
// Config.OwnerUID names another.
const DefaultOwnerUID = "csikit-cosi-owner"

// DefaultRegion is the region reported to clients, and signed for; RGW takes any.
const DefaultRegion = "us-east-1"

// Config says where RGW is and how the driver reaches it.
type Config struct {
	// Endpoint is RGW's URL, "http://host:port": S3 at its root, the admin ops API under /admin.
	// It is also the endpoint every grant reports to clients.
	Endpoint string
	// Region is the S3 region reported to clients; empty means DefaultRegion.
	Region string
	// AdminAccessKey and AdminSecretKey are an RGW user's S3 key with the admin caps
	// "users=*;buckets=*": they create the owner and the accounts' users and delete buckets.
	AdminAccessKey, AdminSecretKey Secret
	// OwnerUID is the user that creates and owns the driver's buckets; empty means
	// DefaultOwnerUID. It must belong to the driver alone: any bucket it owns counts as the
	// driver's. The driver creates it on first use; an existing user of that ID that the driver
	// did not create is refused.
	OwnerUID string
	// HTTPClient carries every request to RGW; nil means NewHTTPClient's.
	HTTPClient *http.Client
}

// Timeouts of NewHTTPClient's client. A call's own deadline bounds it as a whole.
const (
	// DialTimeout bounds connecting to RGW: nothing listening, or a host that drops packets.
	DialTimeout = 3 * time.Second
	// HeaderTimeout bounds the wait for an answer's headers once a request is sent: an RGW that
	// accepts and then hangs (its OSDs gone) is a fault after this long, within a longer deadline.
	// Deleting a bucket with many objects answers only when done, so it is generous.
	HeaderTimeout = 30 * time.Second
)

// ownerMarker is the display name of the owner user this driver creates.
const ownerMarker = "csikit COSI bucket owner: every bucket of this user belongs to the COSI driver"

// NewHTTPClient returns the HTTP client the driver uses when Config.HTTPClient is nil (with tlsConfig
// nil): connect and header timeouts (DialTimeout, HeaderTimeout), so that an RGW that accepts and
// then hangs is a fault rather than a stuck call, and, on Linux, quick ACKs on every read
// (quickack_linux.go says why: without them each call to Pacific's RGW waits 40 ms on a kept-alive
// connection). tlsConfig, when not nil, is used for https endpoints (a private CA, say).
func NewHTTPClient(tlsConfig *tls.Config) *http.Client {
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return quickACK(c), nil
		},
		ResponseHeaderTimeout: HeaderTimeout,
		TLSHandshakeTimeout:   10 * time.Second,
		TLSClientConfig:       tlsConfig,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
	}}
}

// Backend is the COSI backend of one RGW.
type Backend struct {
	endpoint, region, ownerUID string
	admin                      *admin.API
	http                       *http.Client

	mu    sync.Mutex // guards owner; held only to read or set it
	owner *s3.Client // the owner's S3 client, once the owner is known

	locks keyedMutex // policy edits per bucket, grants and revokes per account
}

// New returns the backend for cfg. It does not contact RGW: the first call does, so a driver
// started while RGW is down serves (not ready, answering UNAVAILABLE) instead of crashing.
func New(cfg Config) (*Backend, error) {
	if cfg.Endpoint == "" || cfg.AdminAccessKey == "" || cfg.AdminSecretKey == "" {
		return nil, errors.New("rgwdriver: the RGW endpoint and the admin access and secret keys are required")
	}
	// The endpoint is reported to every client, so it must carry nothing but where RGW is; it is
	// quoted in errors only once that is known.
	u, err := url.Parse(cfg.Endpoint)
	switch {
	case err != nil || u.User != nil:
		return nil, errors.New("rgwdriver: the endpoint must be an http:// or https:// URL without user information")
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.RawQuery != "", u.Fragment != "":
		return nil, fmt.Errorf("rgwdriver: endpoint %q is not an http:// or https:// URL of a host, without query or fragment", cfg.Endpoint)
	}
	b := &Backend{endpoint: strings.TrimSuffix(cfg.Endpoint, "/"), region: cfg.Region, ownerUID: cfg.OwnerUID, http: cfg.HTTPClient}
	if b.region == "" {
		b.region = DefaultRegion
	}
	if b.ownerUID == "" {
		b.ownerUID = DefaultOwnerUID
	}
	if validAccountUID(b.ownerUID) {
		return nil, fmt.Errorf("rgwdriver: owner %q has the shape of an account's user ID", b.ownerUID)
	}
	if b.http == nil {
		b.http = NewHTTPClient(nil)
	}
	api, err := admin.New(b.endpoint, string(cfg.AdminAccessKey), string(cfg.AdminSecretKey), adminHTTP{b.http})
	if err != nil {
		return nil, fmt.Errorf("rgwdriver: %w", err)
	}
	b.admin = api
	return b, nil
}

// s3Client is an S3 client of key on RGW: path-style, the configured region, payload checksums
// only where S3 requires them (Pacific's RGW predates the newer checksum headers), and retries
// without the SDK's retry quota, which would turn a burst of faults into errors of its own.
func s3Client(endpoint, region string, hc *http.Client, accessKey, secretKey string) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint:               aws.String(endpoint),
		Region:                     region,
		UsePathStyle:               true,
		HTTPClient:                 hc,
		Credentials:                credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.RateLimiter = ratelimit.None
			o.MaxAttempts = 3
			o.MaxBackoff = time.Second
		}),
	})
}

// ownerClient returns the owner's S3 client, creating the owner user on first use.
func (b *Backend) ownerClient(ctx context.Context) (*s3.Client, error) {
	b.mu.Lock()
	c := b.owner
	b.mu.Unlock()
	if c != nil {
		return c, nil
	}
	unlock, err := b.locks.lock(ctx, "owner") // one look-up at a time; others wait for it, within their deadline
	if err != nil {
		return nil, err
	}
	defer unlock()
	b.mu.Lock()
	c = b.owner
	b.mu.Unlock()
	if c != nil {
		return c, nil
	}
	u, err := b.admin.GetUser(ctx, admin.User{ID: b.ownerUID})
	if errors.Is(err, admin.ErrNoSuchUser) {
		// max-buckets 0 is "no limit": the owner holds every bucket the driver creates.
		u, err = b.admin.CreateUser(ctx, admin.User{ID: b.ownerUID, DisplayName: ownerMarker, MaxBuckets: new(0), GenerateKey: new(true)})
		if errors.Is(err, admin.ErrUserExists) { // created meanwhile by another replica
			u, err = b.admin.GetUser(ctx, admin.User{ID: b.ownerUID})
		}
	}
	if err != nil {
		return nil, rgwError(ctx, fmt.Sprintf("finding the bucket owner %q", b.ownerUID), err)
	}
	if u.DisplayName != ownerMarker {
		return nil, fmt.Errorf("RGW user %q exists and was not created by this driver as its bucket owner; choose another --owner-uid: %w",
			b.ownerUID, driver.ErrFailedPrecondition)
	}
	key, ok := firstKey(u)
	if !ok {
		return nil, fmt.Errorf("the bucket owner %q has no S3 key: %w", b.ownerUID, driver.ErrFailedPrecondition)
	}
	c = s3Client(b.endpoint, b.region, b.http, key.AccessKey, key.SecretKey)
	b.mu.Lock()
	b.owner = c
	b.mu.Unlock()
	return c, nil
}

// ownerError is rgwError for a call made with the owner's key. RGW refusing that key means it
// changed (an administrator rotated it): the cached client is dropped, so the next call reads
// the owner's keys again instead of failing until a restart.
func (b *Backend) ownerError(ctx context.Context, what string, err error) error {
	if code := errorCode(err); credentialCodes[code] {
		b.mu.Lock()
		b.owner = nil
		b.mu.Unlock()
		return fmt.Errorf("%s: RGW refused the key of the bucket owner %q (%s); it is read again on the next call: %w",
			what, b.ownerUID, code, driver.ErrFailedPrecondition)
	}
	return rgwError(ctx, what, err)
}

// firstKey is the user's S3 key with the smallest access key ID, so that every answer names the
// same key even if an administrator added one.
func firstKey(u admin.User) (admin.UserKeySpec, bool) {
	var keys []admin.UserKeySpec
	for _, k := range u.Keys {
		if k.User == u.ID && k.AccessKey != "" && k.SecretKey != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return admin.UserKeySpec{}, false
	}
	return slices.MinFunc(keys, func(a, b admin.UserKeySpec) int { return strings.Compare(a.AccessKey, b.AccessKey) }), true
}

func (b *Backend) info(id string) *bucket.Bucket {
	return &bucket.Bucket{ID: id, S3: &bucket.S3Info{Endpoint: b.endpoint, Region: b.region, AddressingStyle: bucket.S3AddressingPath}}
}

func noParameters(what string, params map[string]string) error {
	if len(params) == 0 {
		return nil
	}
	return fmt.Errorf("the RGW driver takes no %s parameters, got %s: %w", what,
		strings.Join(slices.Sorted(maps.Keys(params)), ", "), driver.ErrInvalidArgument)
}

// ownedBy reports the owner of bucket id: driver.ErrNotFound (wrapped) when it does not exist.
func (b *Backend) ownerOf(ctx context.Context, id string) (string, error) {
	info, err := b.admin.GetBucketInfo(ctx, admin.Bucket{Bucket: id})
	if errors.Is(err, admin.ErrNoSuchBucket) {
		return "", fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return "", rgwError(ctx, fmt.Sprintf("reading bucket %q", id), err)
	}
	return info.Owner, nil
}

// ownBucket checks that id is a bucket of this driver: ErrNotFound when there is none (or id is
// no bucket name at all), ErrFailedPrecondition when someone else owns it.
func (b *Backend) ownBucket(ctx context.Context, id string) error {
	if !ValidBucketName(id) {
		return fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
	}
	owner, err := b.ownerOf(ctx, id)
	if err != nil {
		return err
	}
	if owner != b.ownerUID {
		return fmt.Errorf("bucket %q belongs to RGW user %q, not to this driver, which never takes a bucket over: %w",
			id, owner, driver.ErrFailedPrecondition)
	}
	return nil
}

// closeBucket leaves bucket id closed (the package doc), with its grants as they are.
func (b *Backend) closeBucket(ctx context.Context, id string) error {
	return b.editPolicy(ctx, id, func(p string) (string, bool, error) { return closed(p, id, b.ownerUID) })
}

// CreateBucket implements bucket.Provisioner: the bucket is created by the owner, or found
// already owned by it (a repeat). A bucket of that name someone else owns is ALREADY_EXISTS.
func (b *Backend) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return nil, err
	}
	id := BucketName(req.Name)
	c, err := b.ownerClient(ctx)
	if err != nil {
		return nil, err
	}
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(id)})
	var owned *s3types.BucketAlreadyOwnedByYou
	var exists *s3types.BucketAlreadyExists
	switch {
	case err == nil, errors.As(err, &owned):
	case errors.As(err, &exists):
		// RGW answers this for a bucket of another user, and on some versions for its own: ask.
		if err := b.ownBucket(ctx, id); err != nil {
			if errors.Is(err, driver.ErrFailedPrecondition) {
				return nil, fmt.Errorf("bucket %q exists and was not created by this driver, which never takes a bucket over: %w",
					id, driver.ErrAlreadyExists)
			}
			return nil, err
		}
	default:
		return nil, b.ownerError(ctx, fmt.Sprintf("creating bucket %q", id), err)
	}
	// Closed before its first grant; a create interrupted before this is finished by its retry,
	// which finds the bucket its own.
	if err := b.closeBucket(ctx, id); err != nil {
		return nil, err
	}
	return b.info(id), nil
}

// GetBucket implements bucket.Getter, for COSI's static provisioning: it finds the buckets of
// this driver (made by an earlier installation, say). A bucket someone else owns is refused
// (FAILED_PRECONDITION): a grant would have to rewrite its policy, which is taking it over.
func (b *Backend) GetBucket(ctx context.Context, req *bucket.GetBucketRequest) (*bucket.Bucket, error) {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return nil, err
	}
	if err := b.ownBucket(ctx, req.ID); err != nil {
		return nil, err
	}
	if err := b.closeBucket(ctx, req.ID); err != nil {
		return nil, err
	}
	return b.info(req.ID), nil
}

// DeleteBucket implements bucket.Provisioner: every account the bucket's policy names loses it
// first (its user and key go with its last bucket), then the bucket goes with its objects and
// its policy, so no key of this bucket reaches a later bucket of the same name, nor is answered
// again by a grant on one. The revokes come before the delete, so a retry after a crash finds
// in the policy whoever is left. A bucket of someone else is refused, never deleted.
func (b *Backend) DeleteBucket(ctx context.Context, req *bucket.DeleteBucketRequest) error {
	if err := noParameters("bucket", req.Parameters); err != nil {
		return err
	}
	if err := b.ownBucket(ctx, req.ID); err != nil {
		if errors.Is(err, driver.ErrFailedPrecondition) {
			return fmt.Errorf("bucket %q was not created by this driver and is never deleted by it: %w", req.ID, driver.ErrFailedPrecondition)
		}
		return err
	}
	for {
		uids, err := b.removeUngranted(ctx, req.ID)
		if err != nil || len(uids) == 0 {
			return err
		}
		// Accounts a grant adds meanwhile are found by the next look.
		for _, uid := range uids {
			if err := b.revoke(ctx, uid, []string{req.ID}); err != nil && !errors.Is(err, driver.ErrNotFound) {
				return err
			}
		}
	}
}

// removeUngranted deletes bucket id with its objects if its policy grants no account (or finds
// it gone), else answers the accounts it grants. It holds the bucket's lock, under which every
// grant adds its statements, so none is added between the look and the delete.
func (b *Backend) removeUngranted(ctx context.Context, id string) ([]string, error) {
	unlock, err := b.locks.lock(ctx, "bucket/"+id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	policy, err := b.readPolicy(ctx, id)
	if errors.Is(err, driver.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	uids, err := accountsIn(policy)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w: %w", id, err, driver.ErrFailedPrecondition)
	}
	if len(uids) > 0 {
		return uids, nil
	}
	err = b.admin.RemoveBucket(ctx, admin.Bucket{Bucket: id, PurgeObject: new(true)})
	if err != nil && !errors.Is(err, admin.ErrNoSuchBucket) {
		return nil, rgwError(ctx, fmt.Sprintf("deleting bucket %q", id), err)
	}
	return nil, nil
}

// GrantBucketAccess implements bucket.AccessGranter.
func (b *Backend) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	if req.Authentication != bucket.AuthKey {
		return nil, fmt.Errorf("the RGW driver grants access keys only, not %v: %w", req.Authentication, driver.ErrUnsupported)
	}
	if err := noParameters("access", req.Parameters); err != nil {
		return nil, err
	}
	want := grantRecord{Account: req.AccountName, Buckets: make(map[string]string, len(req.Buckets))}
	for _, g := range req.Buckets {
		name, ok := modeNames[g.Mode]
		if !ok {
			return nil, fmt.Errorf("access mode %v: %w", g.Mode, driver.ErrUnsupported)
		}
		want.Buckets[g.BucketID] = name
	}
	uid := AccountUID(req.AccountName)
	unlock, err := b.locks.lock(ctx, "account/"+uid)
	if err != nil {
		return nil, err
	}
	defer unlock()

	for _, id := range want.bucketsOf() {
		if err := b.ownBucket(ctx, id); err != nil {
			return nil, err
		}
	}
	u, err := b.admin.GetUser(ctx, admin.User{ID: uid})
	switch {
	case errors.Is(err, admin.ErrNoSuchUser):
		// The user, its key and the record in one call: nothing half-made to find later.
		u, err = b.admin.CreateUser(ctx, admin.User{ID: uid, DisplayName: want.displayName(), MaxBuckets: new(-1), GenerateKey: new(true)})
		if err != nil {
			return nil, rgwError(ctx, fmt.Sprintf("creating the RGW user of account %q", req.AccountName), err)
		}
	case err != nil:
		return nil, rgwError(ctx, fmt.Sprintf("reading the RGW user of account %q", req.AccountName), err)
	default:
		got, err := parseRecord(u.DisplayName)
		switch {
		case err != nil:
			return nil, fmt.Errorf("RGW user %q exists and was not created by this driver: %w", uid, driver.ErrFailedPrecondition)
		case got.Account != req.AccountName:
			return nil, fmt.Errorf("RGW user %q belongs to another account name: %w", uid, driver.ErrAlreadyExists)
		case !sameGrant(got, want):
			return nil, fmt.Errorf("account %q was granted other buckets or modes: %w", req.AccountName, driver.ErrAlreadyExists)
		}
	}
	key, ok := firstKey(u)
	if !ok {
		return nil, fmt.Errorf("the RGW user of account %q has no S3 key: %w", req.AccountName, driver.ErrFailedPrecondition)
	}
	for _, id := range want.bucketsOf() {
		mode, _ := modeOf(want.Buckets[id])
		if err := b.editPolicy(ctx, id, func(p string) (string, bool, error) { return withGrant(p, id, b.ownerUID, uid, mode) }); err != nil {
			return nil, err
		}
	}
	out := &bucket.Access{AccountID: uid, Credentials: bucket.Credentials{S3: &bucket.S3Credentials{
		AccessKeyID: key.AccessKey, SecretAccessKey: key.SecretKey}}}
	for _, g := range req.Buckets {
		out.Buckets = append(out.Buckets, *b.info(g.BucketID))
	}
	return out, nil
}

// RevokeBucketAccess implements bucket.AccessGranter: the named buckets (every granted one when
// none is named, which only a Go caller can do) leave the account's record, its user and keys
// going with the last, and its statements leave their policies, which leaves it under each
// bucket's Deny of everyone else.
func (b *Backend) RevokeBucketAccess(ctx context.Context, req *bucket.RevokeBucketAccessRequest) error {
	if !validAccountUID(req.AccountID) {
		return fmt.Errorf("account %q: %w", req.AccountID, driver.ErrNotFound)
	}
	return b.revoke(ctx, req.AccountID, req.BucketIDs)
}

// revoke takes the buckets targets (every granted one when none is named) from account uid:
// first from its user's record (with its last bucket, its keys are deleted instead), then from
// each target's policy, whatever the record said, and from the ACLs of the objects it owns there
// (disownObjects); with its last bucket, the user goes last, since RGW writes no ACL naming an
// owner that does not exist. In that order a revoke interrupted anywhere is finished by its
// retry, or by a retried delete of the bucket, which finds the statements still in the policy;
// the other order could leave a user whose record names a bucket it no longer has, which a
// grant on a later bucket of that name would take for a repeat (one left without a key answers
// no key). ErrNotFound when uid is no user of this driver, once its statements are out all the
// same.
func (b *Backend) revoke(ctx context.Context, uid string, targets []string) error {
	unlock, err := b.locks.lock(ctx, "account/"+uid)
	if err != nil {
		return err
	}
	defer unlock()
	u, err := b.admin.GetUser(ctx, admin.User{ID: uid})
	missing := errors.Is(err, admin.ErrNoSuchUser)
	if err != nil && !missing {
		return rgwError(ctx, fmt.Sprintf("reading RGW user %q", uid), err)
	}
	rec, recErr := parseRecord(u.DisplayName) // errNotOurs for a missing user's empty name
	last := false                             // the user goes once its objects are disowned
	if recErr == nil {
		if len(targets) == 0 {
			targets = rec.bucketsOf()
		}
		left := maps.Clone(rec.Buckets)
		for _, id := range targets {
			delete(left, id)
		}
		switch {
		case len(left) == len(rec.Buckets):
		case len(left) > 0:
			rec.Buckets = left
			if _, err := b.admin.ModifyUser(ctx, admin.User{ID: uid, DisplayName: rec.displayName()}); err != nil {
				return rgwError(ctx, fmt.Sprintf("recording the revoke on RGW user %q", uid), err)
			}
		default:
			last = true
			for _, k := range u.Keys {
				err := b.admin.RemoveKey(ctx, admin.UserKeySpec{UID: uid, AccessKey: k.AccessKey, KeyType: "s3"})
				if err != nil && !errors.Is(err, admin.ErrNoSuchUser) && !errors.Is(err, admin.ErrInvalidAccessKey) {
					return rgwError(ctx, fmt.Sprintf("deleting the keys of RGW user %q", uid), err)
				}
			}
		}
	}
	for _, id := range targets {
		err := b.editPolicy(ctx, id, func(p string) (string, bool, error) { return withoutGrant(p, id, b.ownerUID, uid) })
		if err == nil && !missing {
			err = b.disownObjects(ctx, id, uid)
		}
		if err != nil && !errors.Is(err, driver.ErrNotFound) && !errors.Is(err, driver.ErrFailedPrecondition) {
			return err
		}
	}
	if last {
		if err := b.admin.RemoveUser(ctx, admin.User{ID: uid}); err != nil && !errors.Is(err, admin.ErrNoSuchUser) {
			return rgwError(ctx, fmt.Sprintf("deleting RGW user %q", uid), err)
		}
	}
	switch {
	case missing:
		return fmt.Errorf("account %q: %w", uid, driver.ErrNotFound)
	case recErr != nil:
		return fmt.Errorf("RGW user %q was not created by this driver: %w", uid, driver.ErrNotFound)
	}
	return nil
}

// disownObjects leaves uid no grant in the ACL of any object it owns in bucket id: each gets
// an ACL granting the bucket's owner alone (uid stays its owner, which RGW lets no ACL write
// change). The bucket policy keeps uid out of everything else once its statements are gone, but
// Pacific's RGW checks the source of an UploadPartCopy by the source object's ACL alone: without
// this, a revoked key could copy what it uploaded here into a bucket it still has, and read it
// there. Run after the policy edit, so no upload of uid's starts meanwhile; ErrNotFound when the
// bucket is gone.
func (b *Backend) disownObjects(ctx context.Context, id, uid string) error {
	c, err := b.ownerClient(ctx)
	if err != nil {
		return err
	}
	acl := &s3types.AccessControlPolicy{Owner: &s3types.Owner{ID: aws.String(uid)}, Grants: []s3types.Grant{{
		Grantee: &s3types.Grantee{Type: s3types.TypeCanonicalUser, ID: aws.String(b.ownerUID)}, Permission: s3types.PermissionFullControl}}}
	pages := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(id), FetchOwner: aws.Bool(true)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if errorCode(err) == "NoSuchBucket" {
			return fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
		}
		if err != nil {
			return b.ownerError(ctx, fmt.Sprintf("listing the objects of bucket %q", id), err)
		}
		for _, o := range page.Contents {
			if o.Owner == nil || aws.ToString(o.Owner.ID) != uid {
				continue
			}
			_, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(id), Key: o.Key, AccessControlPolicy: acl})
			switch code := errorCode(err); {
			case err == nil, code == "NoSuchKey": // deleted meanwhile: nothing left to reach
			case code == "NoSuchBucket":
				return fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
			default:
				return b.ownerError(ctx, fmt.Sprintf("resetting the ACL of an object of RGW user %q in bucket %q", uid, id), err)
			}
		}
	}
	return nil
}

// editPolicy applies edit to bucket id's policy as its owner (edit returns the new policy and
// whether it changed; every edit leaves the bucket's own statements in it), then makes sure the
// bucket's public access block ignores public ACLs. Edits of one bucket run one at a time. A
// bucket that is gone is ErrNotFound; one the owner does not own is never touched
// (ErrFailedPrecondition).
func (b *Backend) editPolicy(ctx context.Context, id string, edit func(string) (string, bool, error)) error {
	if err := b.ownBucket(ctx, id); err != nil {
		return err
	}
	c, err := b.ownerClient(ctx)
	if err != nil {
		return err
	}
	unlock, err := b.locks.lock(ctx, "bucket/"+id)
	if err != nil {
		return err
	}
	defer unlock()
	current, err := b.readPolicy(ctx, id)
	if err != nil {
		return err
	}
	policy, changed, err := edit(current)
	if err != nil {
		return fmt.Errorf("bucket %q: %w: %w", id, err, driver.ErrFailedPrecondition)
	}
	if changed {
		_, err = c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(id), Policy: aws.String(policy)})
		if errorCode(err) == "NoSuchBucket" {
			return fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
		}
		if err != nil {
			return b.ownerError(ctx, fmt.Sprintf("writing the policy of bucket %q", id), err)
		}
	}
	return b.ignorePublicACLs(ctx, c, id)
}

// readPolicy is bucket id's policy as its owner reads it, "" for none; ErrNotFound when the
// bucket is gone.
func (b *Backend) readPolicy(ctx context.Context, id string) (string, error) {
	c, err := b.ownerClient(ctx)
	if err != nil {
		return "", err
	}
	got, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(id)})
	switch {
	case err == nil:
		return aws.ToString(got.Policy), nil
	case errorCode(err) == "NoSuchBucketPolicy":
		return "", nil
	case errorCode(err) == "NoSuchBucket":
		return "", fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
	}
	return "", b.ownerError(ctx, fmt.Sprintf("reading the policy of bucket %q", id), err)
}

// ignorePublicACLs sets IgnorePublicAcls in bucket id's public access block, keeping its other
// settings: RGW then never reads an ACL grant to everyone or to every authenticated user, which
// keeps objects closed should the bucket policy ever be lost. BlockPublicAcls is never set by
// the driver: Pacific's RGW refuses every PutObject under it, while CopyObject, multipart and
// POST uploads still write public ACLs.
func (b *Backend) ignorePublicACLs(ctx context.Context, c *s3.Client, id string) error {
	conf := &s3types.PublicAccessBlockConfiguration{}
	got, err := c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String(id)})
	switch code := errorCode(err); {
	case err == nil && got.PublicAccessBlockConfiguration != nil:
		conf = got.PublicAccessBlockConfiguration
	case err == nil, code == "NoSuchPublicAccessBlockConfiguration":
	case code == "NoSuchBucket":
		return fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
	default:
		return b.ownerError(ctx, fmt.Sprintf("reading the public access block of bucket %q", id), err)
	}
	if aws.ToBool(conf.IgnorePublicAcls) {
		return nil
	}
	conf.IgnorePublicAcls = aws.Bool(true)
	_, err = c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(id), PublicAccessBlockConfiguration: conf})
	if errorCode(err) == "NoSuchBucket" {
		return fmt.Errorf("bucket %q: %w", id, driver.ErrNotFound)
	}
	return b.ownerError(ctx, fmt.Sprintf("writing the public access block of bucket %q", id), err)
}

// CloseBuckets leaves every bucket of the driver closed, as create, grant and revoke leave it
// (the package doc): for buckets that an earlier version of this driver left without a policy
// once their last grant was revoked, whose objects' ACLs then decided who reads them. It edits
// only what is not so already, and may run beside any other call. A bucket deleted meanwhile is
// skipped; the errors of the others are joined, each naming its bucket.
func (b *Backend) CloseBuckets(ctx context.Context) error {
	if _, err := b.ownerClient(ctx); err != nil {
		return err
	}
	ids, err := b.admin.ListUsersBuckets(ctx, b.ownerUID)
	if err != nil {
		return rgwError(ctx, fmt.Sprintf("listing the buckets of %q", b.ownerUID), err)
	}
	var errs []error
	for _, id := range ids {
		if !ValidBucketName(id) {
			continue // not a name this driver gives, so not one of its buckets
		}
		if err := b.closeBucket(ctx, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Probe implements driver.Prober with one admin request that RGW must answer from RADOS: the
// info of a bucket named at random, which does not exist (a name never asked for before, so no
// cache of RGW's answers it). Ready when RGW answers; not ready, without an error (nothing is
// wrong with the driver), while RGW is unreachable, failing, or cannot reach its OSDs; an error
// when RGW refuses the driver's credentials. It honours ctx, which the plugin bounds (a second
// for /healthz). A lookup RGW may cache, such as the owner user's, would say ready while every
// write hangs.
func (b *Backend) Probe(ctx context.Context) (bool, error) {
	var r [8]byte
	_, _ = rand.Read(r[:]) // crypto/rand never fails
	_, err := b.admin.GetBucketInfo(ctx, admin.Bucket{Bucket: "csikit-probe-" + hex.EncodeToString(r[:])})
	if err == nil || errors.Is(err, admin.ErrNoSuchBucket) {
		return true, nil
	}
	if ctx.Err() != nil {
		return false, nil
	}
	mapped := rgwError(ctx, "probing RGW", err)
	if errors.Is(mapped, driver.ErrUnavailable) {
		return false, nil
	}
	return false, mapped
}

// keyedMutex is a mutex per key, dropped when nobody holds or waits for it. A waiter gives up
// when its call's context ends, so a call stuck on RGW never holds up a later one past its
// deadline.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	ch   chan struct{} // holds one token while locked
	refs int
}

func (k *keyedMutex) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = make(map[string]*keyedEntry)
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, fmt.Errorf("waiting for another call on %s: %w", key, ctx.Err())
	}
}
