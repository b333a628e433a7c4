package cosisuite

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// Bad input is INVALID_ARGUMENT: the sidecar gives up on it, which is right for a request that
// can never succeed, and a driver that answers anything else (INTERNAL, say) makes it retry
// forever. Each row breaks exactly one rule of an otherwise valid request.

// cosiBadCall is one row: its name says what is wrong with the request.
type cosiBadCall struct {
	name string
	call func(ctx context.Context) error
	// optional rows belong to an RPC the driver need not serve: UNIMPLEMENTED skips them.
	optional bool
}

var (
	cosiLongName = strings.Repeat("a", 254)
	cosiLongID   = strings.Repeat("a", 2049)
)

func checkBucketBadInput(t reporter, s *cosiSuite) {
	runBadCalls(t, s, s.bucketBadCalls())
}

func checkAccessBadInput(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	bucket := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters).ID
	runBadCalls(t, s, s.accessBadCalls(bucket))
}

func runBadCalls(t reporter, s *cosiSuite, rows []cosiBadCall) {
	for _, row := range rows {
		t.Run(row.name, func(t reporter) {
			allow := []codes.Code{codes.InvalidArgument}
			if row.optional {
				allow = append(allow, codes.Unimplemented)
			}
			err := row.call(expectCall(context.Background(), row.name, allow...))
			switch code := status.Code(err); {
			case code == codes.InvalidArgument:
			case code == codes.Unimplemented && row.optional:
				t.Skipf("drivertest: the driver does not serve this RPC (UNIMPLEMENTED)")
			default:
				t.Errorf("%s: %s; want INVALID_ARGUMENT", row.name, cosiCode(err))
			}
		})
	}
}

func (s *cosiSuite) bucketBadCalls() []cosiBadCall {
	if s.c.version() == bucket.V1Alpha1 {
		p := cosi1.NewProvisionerClient(s.conn)
		create := func(r *cosi1.DriverCreateBucketRequest) func(context.Context) error {
			return func(ctx context.Context) error { _, err := p.DriverCreateBucket(ctx, r); return err }
		}
		remove := func(id string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := p.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: id})
				return err
			}
		}
		return []cosiBadCall{
			{name: "DriverCreateBucket without a name", call: create(&cosi1.DriverCreateBucketRequest{})},
			{name: "DriverCreateBucket with a name that is not a DNS subdomain", call: create(&cosi1.DriverCreateBucketRequest{Name: "Bad_Name"})},
			{name: "DriverCreateBucket with a name of 254 characters", call: create(&cosi1.DriverCreateBucketRequest{Name: cosiLongName})},
			{name: "DriverDeleteBucket without a bucket_id", call: remove("")},
			{name: "DriverDeleteBucket with a bucket_id holding a character outside [A-Za-z0-9._-/]", call: remove("bad id")},
			{name: "DriverDeleteBucket with a bucket_id of 2049 characters", call: remove(cosiLongID)},
		}
	}
	p := cosi2.NewProvisionerClient(s.conn)
	proto := wireProtocol(s.protocol())
	create := func(r *cosi2.DriverCreateBucketRequest) func(context.Context) error {
		return func(ctx context.Context) error { _, err := p.DriverCreateBucket(ctx, r); return err }
	}
	get := func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := p.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: id, Protocols: []*cosi2.ObjectProtocol{proto}})
			return err
		}
	}
	remove := func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := p.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: id})
			return err
		}
	}
	valid := func() *cosi2.DriverCreateBucketRequest {
		return &cosi2.DriverCreateBucketRequest{Name: bucketName(), Protocols: []*cosi2.ObjectProtocol{proto}, Parameters: s.opts.BucketParameters}
	}
	with := func(f func(r *cosi2.DriverCreateBucketRequest)) *cosi2.DriverCreateBucketRequest {
		r := valid()
		f(r)
		return r
	}
	return []cosiBadCall{
		{name: "DriverCreateBucket without a name", call: create(with(func(r *cosi2.DriverCreateBucketRequest) { r.Name = "" }))},
		{name: "DriverCreateBucket with a name that is not a DNS subdomain", call: create(with(func(r *cosi2.DriverCreateBucketRequest) { r.Name = "Bad_Name" }))},
		{name: "DriverCreateBucket with a name of 254 characters", call: create(with(func(r *cosi2.DriverCreateBucketRequest) { r.Name = cosiLongName }))},
		{name: "DriverCreateBucket with an UNKNOWN protocol", call: create(with(func(r *cosi2.DriverCreateBucketRequest) {
			r.Protocols = []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_UNKNOWN}}
		}))},
		{name: "DriverCreateBucket with a protocol listed twice", call: create(with(func(r *cosi2.DriverCreateBucketRequest) {
			r.Protocols = []*cosi2.ObjectProtocol{proto, proto}
		}))},
		{name: "DriverGetExistingBucket without an existing_bucket_id", call: get(""), optional: true},
		{name: "DriverGetExistingBucket with an existing_bucket_id holding a character outside [A-Za-z0-9._-/]", call: get("bad id"), optional: true},
		{name: "DriverDeleteBucket without a bucket_id", call: remove("")},
		{name: "DriverDeleteBucket with a bucket_id holding a character outside [A-Za-z0-9._-/]", call: remove("bad id")},
		{name: "DriverDeleteBucket with a bucket_id of 2049 characters", call: remove(cosiLongID)},
	}
}

func (s *cosiSuite) accessBadCalls(bucketID string) []cosiBadCall {
	if s.c.version() == bucket.V1Alpha1 {
		p := cosi1.NewProvisionerClient(s.conn)
		grant := func(f func(r *cosi1.DriverGrantBucketAccessRequest)) func(context.Context) error {
			r := &cosi1.DriverGrantBucketAccessRequest{BucketId: bucketID, Name: accountName(), AuthenticationType: cosi1.AuthenticationType_Key,
				Parameters: s.opts.AccessParameters}
			f(r)
			return func(ctx context.Context) error { _, err := p.DriverGrantBucketAccess(ctx, r); return err }
		}
		revoke := func(f func(r *cosi1.DriverRevokeBucketAccessRequest)) func(context.Context) error {
			r := &cosi1.DriverRevokeBucketAccessRequest{BucketId: bucketID, AccountId: "csikit-account-" + cosiUID()}
			f(r)
			return func(ctx context.Context) error { _, err := p.DriverRevokeBucketAccess(ctx, r); return err }
		}
		return []cosiBadCall{
			{name: "DriverGrantBucketAccess without a bucket_id", call: grant(func(r *cosi1.DriverGrantBucketAccessRequest) { r.BucketId = "" })},
			{name: "DriverGrantBucketAccess with a bucket_id holding a character outside [A-Za-z0-9._-/]", call: grant(func(r *cosi1.DriverGrantBucketAccessRequest) { r.BucketId = "bad id" })},
			{name: "DriverGrantBucketAccess without a name", call: grant(func(r *cosi1.DriverGrantBucketAccessRequest) { r.Name = "" })},
			{name: "DriverGrantBucketAccess with a name that is not a DNS subdomain", call: grant(func(r *cosi1.DriverGrantBucketAccessRequest) { r.Name = "Bad_Name" })},
			{name: "DriverGrantBucketAccess with an unknown authentication type", call: grant(func(r *cosi1.DriverGrantBucketAccessRequest) {
				r.AuthenticationType = cosi1.AuthenticationType_UnknownAuthenticationType
			})},
			{name: "DriverRevokeBucketAccess without an account_id", call: revoke(func(r *cosi1.DriverRevokeBucketAccessRequest) { r.AccountId = "" })},
			{name: "DriverRevokeBucketAccess with an account_id holding a character outside [A-Za-z0-9._-/]", call: revoke(func(r *cosi1.DriverRevokeBucketAccessRequest) { r.AccountId = "bad id" })},
			{name: "DriverRevokeBucketAccess without a bucket_id", call: revoke(func(r *cosi1.DriverRevokeBucketAccessRequest) { r.BucketId = "" })},
		}
	}
	c := s.c.(*cosiV1Alpha2)
	p := cosi2.NewProvisionerClient(s.conn)
	grant := func(f func(r *cosi2.DriverGrantBucketAccessRequest)) func(context.Context) error {
		r := c.grantRequest(accountName(), []string{bucketID}, s.opts.AccessParameters)
		f(r)
		return func(ctx context.Context) error { _, err := p.DriverGrantBucketAccess(ctx, r); return err }
	}
	revoke := func(f func(r *cosi2.DriverRevokeBucketAccessRequest)) func(context.Context) error {
		r := &cosi2.DriverRevokeBucketAccessRequest{AccountId: "csikit-account-" + cosiUID(), Protocol: wireProtocol(c.protocol),
			AuthenticationType: keyAuthV1Alpha2, Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: bucketID}}}
		f(r)
		return func(ctx context.Context) error { _, err := p.DriverRevokeBucketAccess(ctx, r); return err }
	}
	type grantReq = cosi2.DriverGrantBucketAccessRequest
	type accessed = cosi2.DriverGrantBucketAccessRequest_AccessedBucket
	return []cosiBadCall{
		{name: "DriverGrantBucketAccess without an account_name", call: grant(func(r *grantReq) { r.AccountName = "" })},
		{name: "DriverGrantBucketAccess with an account_name that is not a DNS subdomain", call: grant(func(r *grantReq) { r.AccountName = "Bad_Name" })},
		{name: "DriverGrantBucketAccess without a protocol", call: grant(func(r *grantReq) { r.Protocol = nil })},
		{name: "DriverGrantBucketAccess with an UNKNOWN protocol", call: grant(func(r *grantReq) { r.Protocol = &cosi2.ObjectProtocol{} })},
		{name: "DriverGrantBucketAccess without an authentication_type", call: grant(func(r *grantReq) { r.AuthenticationType = nil })},
		{name: "DriverGrantBucketAccess with an UNKNOWN authentication type", call: grant(func(r *grantReq) { r.AuthenticationType = &cosi2.AuthenticationType{} })},
		{name: "DriverGrantBucketAccess without buckets", call: grant(func(r *grantReq) { r.Buckets = nil })},
		{name: "DriverGrantBucketAccess with a bucketID without a bucket_id", call: grant(func(r *grantReq) { r.Buckets[0].BucketId = "" })},
		{name: "DriverGrantBucketAccess with a bucket_id holding a character outside [A-Za-z0-9._-/]", call: grant(func(r *grantReq) { r.Buckets[0].BucketId = "bad id" })},
		{name: "DriverGrantBucketAccess with a bucketID without an access_mode", call: grant(func(r *grantReq) { r.Buckets[0].AccessMode = nil })},
		{name: "DriverGrantBucketAccess with an UNKNOWN access mode", call: grant(func(r *grantReq) { r.Buckets[0].AccessMode = &cosi2.AccessMode{} })},
		{name: "DriverGrantBucketAccess with one bucketID listed twice", call: grant(func(r *grantReq) {
			r.Buckets = append(r.Buckets, &accessed{BucketId: bucketID, AccessMode: readWriteMode})
		})},
		{name: "DriverRevokeBucketAccess without an account_id", call: revoke(func(r *cosi2.DriverRevokeBucketAccessRequest) { r.AccountId = "" })},
		{name: "DriverRevokeBucketAccess with an account_id holding a character outside [A-Za-z0-9._-/]", call: revoke(func(r *cosi2.DriverRevokeBucketAccessRequest) { r.AccountId = "bad id" })},
		{name: "DriverRevokeBucketAccess with an UNKNOWN protocol", call: revoke(func(r *cosi2.DriverRevokeBucketAccessRequest) { r.Protocol = &cosi2.ObjectProtocol{} })},
		{name: "DriverRevokeBucketAccess without buckets", call: revoke(func(r *cosi2.DriverRevokeBucketAccessRequest) { r.Buckets = nil })},
	}
}
