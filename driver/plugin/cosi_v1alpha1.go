package plugin

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/internal/wire"
	"github.com/csikit/csikit/idempotency"
)

// The COSI v1alpha1 adapter (package cosi.v1alpha1 of
// sigs.k8s.io/container-object-storage-interface/proto v0.2.2, spoken by the released sidecar).
// It only translates, through package wire; cosiCore decides. What this version's sidecar needs
// beyond the neutral rules: one credentials entry keyed by protocol (wire.V1Alpha1Credentials),
// and never ALREADY_EXISTS from a grant, which it dereferences as a nil answer and
// crashes on: an incompatible repeated grant is FAILED_PRECONDITION here.

// cosiV1Alpha1Keys is the lock policy of cosiKeys for this version's requests.
func cosiV1Alpha1Keys(req any) ([]idempotency.Key, bool) {
	switch r := req.(type) {
	case *cosi.DriverCreateBucketRequest:
		return []idempotency.Key{excl(kindBucketName, r.GetName())}, true
	case *cosi.DriverDeleteBucketRequest:
		return []idempotency.Key{excl(kindBucket, r.GetBucketId())}, true
	case *cosi.DriverGrantBucketAccessRequest:
		return bucketKeys([]idempotency.Key{excl(kindAccountName, r.GetName())}, r.GetBucketId()), true
	case *cosi.DriverRevokeBucketAccessRequest:
		return bucketKeys([]idempotency.Key{excl(kindAccount, r.GetAccountId())}, r.GetBucketId()), true
	}
	return nil, false
}

func registerCOSIV1Alpha1(d *Plugin, s grpc.ServiceRegistrar, c *cosiCore) {
	s.RegisterService(d.wrap(&cosi.Identity_ServiceDesc), &cosiIdentityV1Alpha1{d: d})
	s.RegisterService(d.wrap(&cosi.Provisioner_ServiceDesc), &cosiProvisionerV1Alpha1{c: c})
}

type cosiIdentityV1Alpha1 struct {
	cosi.UnimplementedIdentityServer
	d *Plugin
}

func (s *cosiIdentityV1Alpha1) DriverGetInfo(context.Context, *cosi.DriverGetInfoRequest) (*cosi.DriverGetInfoResponse, error) {
	return &cosi.DriverGetInfoResponse{Name: s.d.cfg.Name}, nil
}

type cosiProvisionerV1Alpha1 struct {
	cosi.UnimplementedProvisionerServer
	c *cosiCore
}

func (s *cosiProvisionerV1Alpha1) DriverCreateBucket(ctx context.Context, req *cosi.DriverCreateBucketRequest) (*cosi.DriverCreateBucketResponse, error) {
	b, err := s.c.createBucket(ctx, wire.CreateBucketFromV1Alpha1(req))
	if err != nil {
		return nil, err
	}
	return &cosi.DriverCreateBucketResponse{BucketId: b.ID, BucketInfo: wire.V1Alpha1BucketInfo(b, s.c.d.cfg.COSI.Protocols)}, nil
}

func (s *cosiProvisionerV1Alpha1) DriverDeleteBucket(ctx context.Context, req *cosi.DriverDeleteBucketRequest) (*cosi.DriverDeleteBucketResponse, error) {
	err := s.c.deleteBucket(ctx, wire.DeleteBucketFromV1Alpha1(req))
	if err != nil {
		return nil, err
	}
	return &cosi.DriverDeleteBucketResponse{}, nil
}

func (s *cosiProvisionerV1Alpha1) DriverGrantBucketAccess(ctx context.Context, req *cosi.DriverGrantBucketAccessRequest) (*cosi.DriverGrantBucketAccessResponse, error) {
	protocol := s.c.d.cfg.COSI.Protocols[0]
	grant := wire.GrantBucketAccessFromV1Alpha1(req, protocol)
	a, err := s.c.grant(ctx, grant)
	if err != nil {
		if status.Code(err) == codes.AlreadyExists {
			// The v1alpha1 sidecar crashes on ALREADY_EXISTS from a grant; this keeps the
			// meaning (fix the request) without the crash.
			return nil, status.Error(codes.FailedPrecondition, status.Convert(err).Message())
		}
		return nil, err
	}
	creds := wire.V1Alpha1Credentials(protocol, a)
	if len(creds) == 0 && grant.Authentication == bucket.AuthKey {
		return nil, pluginBug(rpcGrantBucketAccess, "account %q: no credentials for %v", a.AccountID, protocol)
	}
	return &cosi.DriverGrantBucketAccessResponse{AccountId: a.AccountID, Credentials: creds}, nil
}

func (s *cosiProvisionerV1Alpha1) DriverRevokeBucketAccess(ctx context.Context, req *cosi.DriverRevokeBucketAccessRequest) (*cosi.DriverRevokeBucketAccessResponse, error) {
	err := s.c.revoke(ctx, wire.RevokeBucketAccessFromV1Alpha1(req))
	if err != nil {
		return nil, err
	}
	return &cosi.DriverRevokeBucketAccessResponse{}, nil
}
