package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/validation"
)

// The version-neutral half of COSI: what every wire version's adapter calls once it has turned its
// messages into the requests of cosi.go. The rules that the sidecars enforce on answers are
// checked here, so an adapter cannot forget one and a backend bug is an INTERNAL error naming it
// rather than a Secret the sidecar rejects later, or worse, writes.

// servesVersion reports whether the plugin serves a COSI wire version.
func (d *Plugin) servesVersion(v bucket.Version) bool {
	return len(d.cfg.COSI.Versions) == 0 || slices.Contains(d.cfg.COSI.Versions, v)
}

// registerCOSI adds the COSI services of every configured wire version.
func (d *Plugin) registerCOSI(s grpc.ServiceRegistrar) {
	c := &cosiCore{d: d}
	if d.servesVersion(bucket.V1Alpha1) {
		registerCOSIV1Alpha1(d, s, c)
	}
	if d.servesVersion(bucket.V1Alpha2) {
		registerCOSIV1Alpha2(d, s, c)
	}
}

// cosiKeysOf is cosiKeys for the requests of one RPC, whatever their wire version (a request is
// named after its RPC in every version).
func cosiKeysOf(r rpc) func(any) []idempotency.Key {
	want := protoreflect.Name(string(r) + "Request")
	return func(req any) []idempotency.Key {
		m, ok := req.(proto.Message)
		if !ok || m.ProtoReflect().Descriptor().Name() != want {
			return nil
		}
		return cosiKeys(req)
	}
}

// cosiKeys is the lock policy of every mutating COSI RPC, whatever the version: a create holds
// its name, a delete its bucket, a grant its account name, a revoke its account ID; grants and
// revokes hold their buckets shared, so a bucket is not deleted while access to it changes.
func cosiKeys(req any) []idempotency.Key {
	var ks []idempotency.Key
	if name, ok := cosiV1Alpha1Keys(req); ok {
		ks = name
	} else if name, ok := cosiV1Alpha2Keys(req); ok {
		ks = name
	}
	out := ks[:0]
	for _, k := range ks {
		// An empty ID never reaches here through validation; skipping it keeps a hand-composed
		// chain from locking the empty key for everyone.
		if k.ID != "" {
			out = append(out, k)
		}
	}
	return out
}

// bucketKeys holds buckets shared.
func bucketKeys(ks []idempotency.Key, ids ...string) []idempotency.Key {
	for _, id := range ids {
		ks = append(ks, shared(kindBucket, id))
	}
	return ks
}

// cosiCore runs the version-neutral part of each COSI RPC.
type cosiCore struct {
	d *Plugin
}

func (c *cosiCore) provisioner() bucket.Provisioner { return c.d.b.buckets }

// checkProtocols refuses protocols the plugin does not serve; the spec's answer is
// INVALID_ARGUMENT, which is final for the sidecar, as it should be for a class that asks for a
// protocol this driver will never have.
func (c *cosiCore) checkProtocols(r rpc, field string, ps []bucket.Protocol) error {
	for i, p := range ps {
		if !slices.Contains(c.d.cfg.COSI.Protocols, p) {
			return invalid(r, fmt.Sprintf("%s[%d]", field, i), "this driver does not serve the %v protocol (it serves %s)",
				p, protocolList(c.d.cfg.COSI.Protocols))
		}
		if slices.Contains(ps[:i], p) {
			return invalid(r, fmt.Sprintf("%s[%d]", field, i), "%v is listed twice", p)
		}
	}
	return nil
}

func protocolList(ps []bucket.Protocol) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

// createBucket calls the backend and checks that its bucket serves what was asked for and only
// what the plugin serves.
func (c *cosiCore) createBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	if err := c.checkProtocols(rpcCreateBucket, "protocols", req.Protocols); err != nil {
		return nil, err
	}
	b, err := c.provisioner().CreateBucket(ctx, req)
	if err != nil {
		return nil, mapError(ctx, rpcCreateBucket, err)
	}
	return b, c.checkBucket(rpcCreateBucket, b, req.Protocols)
}

func (c *cosiCore) getBucket(ctx context.Context, req *bucket.GetBucketRequest) (*bucket.Bucket, error) {
	if err := c.checkProtocols(rpcGetExistingBucket, "protocols", req.Protocols); err != nil {
		return nil, err
	}
	b, err := impl[bucket.Getter](c.provisioner()).GetBucket(ctx, req)
	if err != nil {
		return nil, mapError(ctx, rpcGetExistingBucket, err)
	}
	return b, c.checkBucket(rpcGetExistingBucket, b, req.Protocols)
}

func (c *cosiCore) deleteBucket(ctx context.Context, req *bucket.DeleteBucketRequest) error {
	return mapError(ctx, rpcDeleteBucket, c.provisioner().DeleteBucket(ctx, req))
}

// checkBucket is the answer rule of create and get: a valid ID, at least one protocol, every
// requested protocol and no protocol the plugin does not serve.
func (c *cosiCore) checkBucket(r rpc, b *bucket.Bucket, want []bucket.Protocol) error {
	if b == nil {
		return pluginBug(r, "the backend returned no bucket and no error")
	}
	if p := validation.COSIObjectIDProblem(b.ID); p != "" {
		return pluginBug(r, "bucket ID %s", p)
	}
	has := bucketProtocols(b)
	if len(has) == 0 {
		return pluginBug(r, "bucket %q reports no protocol (set S3, Azure or GCS)", b.ID)
	}
	for _, p := range want {
		if !slices.Contains(has, p) {
			return pluginBug(r, "bucket %q does not report the requested %v protocol", b.ID, p)
		}
	}
	for _, p := range has {
		if !slices.Contains(c.d.cfg.COSI.Protocols, p) {
			return pluginBug(r, "bucket %q reports %v, which Config.COSI.Protocols does not list", b.ID, p)
		}
	}
	if b.S3 != nil {
		if err := checkS3Bucket(r, b.ID, b.S3); err != nil {
			return err
		}
	}
	return nil
}

// checkS3Bucket: the sidecar requires endpoint, region and addressing style.
func checkS3Bucket(r rpc, id string, s *bucket.S3Info) error {
	switch {
	case s.Endpoint == "":
		return pluginBug(r, "bucket %q: S3 info without an endpoint", id)
	case s.Region == "":
		return pluginBug(r, "bucket %q: S3 info without a region", id)
	case s.AddressingStyle != bucket.S3AddressingPath && s.AddressingStyle != bucket.S3AddressingVirtual:
		return pluginBug(r, "bucket %q: S3 info without an addressing style (path or virtual)", id)
	}
	return nil
}

// grant checks the request against the plugin's abilities, calls the backend and checks its answer
// against what the sidecar will demand of it.
func (c *cosiCore) grant(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	r := rpcGrantBucketAccess
	if err := c.checkProtocols(r, "protocol", []bucket.Protocol{req.Protocol}); err != nil {
		return nil, err
	}
	if req.Authentication == bucket.AuthServiceAccount && req.ServiceAccountName == "" && req.Version != bucket.V1Alpha1 {
		return nil, invalid(r, "service_account_name", "required for service-account authentication")
	}
	slices.SortFunc(req.Buckets, func(a, b bucket.Grant) int { return strings.Compare(a.BucketID, b.BucketID) })
	for i := 1; i < len(req.Buckets); i++ {
		if req.Buckets[i].BucketID == req.Buckets[i-1].BucketID {
			return nil, invalid(r, "buckets", "bucket %q is listed twice", req.Buckets[i].BucketID)
		}
	}
	if len(req.Buckets) > 1 && !c.d.cfg.COSI.MultiBucketAccess {
		return nil, status.Errorf(codes.OutOfRange, "%s: this driver cannot put %d buckets behind one access; grant them one by one", r, len(req.Buckets))
	}
	a, err := impl[bucket.AccessGranter](c.provisioner()).GrantBucketAccess(ctx, req)
	if err != nil {
		if (errors.Is(err, driver.ErrOutOfRange) || status.Code(err) == codes.OutOfRange) && len(req.Buckets) < 2 {
			// OUT_OF_RANGE means "not several buckets behind one access" and nothing else.
			return nil, pluginBug(r, "the backend answered out of range to a single-bucket grant: %v", err)
		}
		return nil, mapError(ctx, r, err)
	}
	return a, c.checkAccess(req, a)
}

// checkAccess: an account ID; exactly the requested buckets, each with the granted protocol's
// info; both halves of a key for key authentication.
func (c *cosiCore) checkAccess(req *bucket.GrantBucketAccessRequest, a *bucket.Access) error {
	r := rpcGrantBucketAccess
	if a == nil {
		return pluginBug(r, "the backend returned no access and no error")
	}
	if p := validation.COSIObjectIDProblem(a.AccountID); p != "" {
		return pluginBug(r, "account ID %s", p)
	}
	if len(a.Buckets) != len(req.Buckets) {
		return pluginBug(r, "account %q: %d buckets answered for %d requested", a.AccountID, len(a.Buckets), len(req.Buckets))
	}
	for _, want := range req.Buckets {
		i := slices.IndexFunc(a.Buckets, func(b bucket.Bucket) bool { return b.ID == want.BucketID })
		if i < 0 {
			return pluginBug(r, "account %q: requested bucket %q is missing from the answer", a.AccountID, want.BucketID)
		}
		b := &a.Buckets[i]
		switch req.Protocol {
		case bucket.S3:
			if b.S3 == nil {
				return pluginBug(r, "bucket %q: no S3 info in the grant", b.ID)
			}
			if err := checkS3Bucket(r, b.ID, b.S3); err != nil {
				return err
			}
		case bucket.Azure:
			if b.Azure == nil {
				return pluginBug(r, "bucket %q: no Azure info in the grant", b.ID)
			}
		case bucket.GCS:
			if b.GCS == nil {
				return pluginBug(r, "bucket %q: no GCS info in the grant", b.ID)
			}
		}
	}
	if req.Authentication != bucket.AuthKey {
		return nil
	}
	cr := a.Credentials
	switch req.Protocol {
	case bucket.S3:
		if cr.S3 == nil || cr.S3.AccessKeyID == "" || cr.S3.SecretAccessKey == "" {
			return pluginBug(r, "account %q: key authentication needs an S3 access key ID and secret key", a.AccountID)
		}
	case bucket.Azure:
		if cr.Azure == nil || cr.Azure.AccessToken == "" {
			return pluginBug(r, "account %q: key authentication needs an Azure access token", a.AccountID)
		}
	case bucket.GCS:
		if cr.GCS == nil || cr.GCS.AccessID == "" || cr.GCS.AccessSecret == "" {
			return pluginBug(r, "account %q: key authentication needs a GCS access ID and secret", a.AccountID)
		}
	}
	return nil
}

func (c *cosiCore) revoke(ctx context.Context, req *bucket.RevokeBucketAccessRequest) error {
	slices.Sort(req.BucketIDs)
	req.BucketIDs = slices.Compact(req.BucketIDs)
	return mapError(ctx, rpcRevokeBucketAccess, impl[bucket.AccessGranter](c.provisioner()).RevokeBucketAccess(ctx, req))
}

// bucketProtocols lists the protocols the bucket reports info for.
func bucketProtocols(b *bucket.Bucket) []bucket.Protocol {
	var out []bucket.Protocol
	if b.S3 != nil {
		out = append(out, bucket.S3)
	}
	if b.Azure != nil {
		out = append(out, bucket.Azure)
	}
	if b.GCS != nil {
		out = append(out, bucket.GCS)
	}
	return out
}
