package plugin

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/idempotency"
)

// The COSI v1alpha1 adapter (package cosi.v1alpha1 of
// sigs.k8s.io/container-object-storage-interface/proto v0.2.2, spoken by the released sidecar).
// It only translates; cosiCore decides. What this version's sidecar needs beyond the neutral
// rules: one credentials entry keyed by protocol ("s3" with accessKeyID, accessSecretKey, endpoint
// and region), and never ALREADY_EXISTS from a grant, which it dereferences as a nil answer and
// crashes on: an incompatible repeated grant is FAILED_PRECONDITION here.

// The v1alpha1 credentials map: keys of the entry the sidecar copies into the user's Secret.
const (
	v1alpha1KeyS3          = "s3"
	v1alpha1KeyAzure       = "azure"
	v1alpha1KeyGCS         = "gcs"
	v1alpha1AccessKeyID    = "accessKeyID"
	v1alpha1AccessSecret   = "accessSecretKey"
	v1alpha1Endpoint       = "endpoint"
	v1alpha1Region         = "region"
	v1alpha1AccessToken    = "accessToken"
	v1alpha1ExpiryTS       = "expiryTS"
	v1alpha1AccessID       = "accessId"
	v1alpha1AccessSecretGC = "accessSecret"
	v1alpha1PrivateKeyName = "privateKeyName"
	v1alpha1ServiceAccount = "serviceAccount"
	v1alpha1ProjectID      = "projectId"
)

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
	b, err := s.c.createBucket(ctx, &bucket.CreateBucketRequest{Name: req.GetName(), Parameters: req.GetParameters(),
		Version: bucket.V1Alpha1, RawV1Alpha1: req})
	if err != nil {
		return nil, err
	}
	return &cosi.DriverCreateBucketResponse{BucketId: b.ID, BucketInfo: v1alpha1BucketInfo(b, s.c.d.cfg.COSI.Protocols)}, nil
}

// v1alpha1BucketInfo is the bucket's info for one protocol (the oneof holds one): the first of the
// plugin's protocols the bucket reports.
func v1alpha1BucketInfo(b *bucket.Bucket, order []bucket.Protocol) *cosi.Protocol {
	for _, p := range order {
		switch {
		case p == bucket.S3 && b.S3 != nil:
			return &cosi.Protocol{Type: &cosi.Protocol_S3{S3: &cosi.S3{Region: b.S3.Region, SignatureVersion: cosi.S3SignatureVersion_S3V4}}}
		case p == bucket.Azure && b.Azure != nil:
			return &cosi.Protocol{Type: &cosi.Protocol_AzureBlob{AzureBlob: &cosi.AzureBlob{StorageAccount: b.Azure.StorageAccount}}}
		case p == bucket.GCS && b.GCS != nil:
			return &cosi.Protocol{Type: &cosi.Protocol_Gcs{Gcs: &cosi.GCS{ProjectId: b.GCS.ProjectID}}}
		}
	}
	return nil
}

func (s *cosiProvisionerV1Alpha1) DriverDeleteBucket(ctx context.Context, req *cosi.DriverDeleteBucketRequest) (*cosi.DriverDeleteBucketResponse, error) {
	err := s.c.deleteBucket(ctx, &bucket.DeleteBucketRequest{ID: req.GetBucketId(), Parameters: req.GetDeleteContext(),
		Version: bucket.V1Alpha1, RawV1Alpha1: req})
	if err != nil {
		return nil, err
	}
	return &cosi.DriverDeleteBucketResponse{}, nil
}

func (s *cosiProvisionerV1Alpha1) DriverGrantBucketAccess(ctx context.Context, req *cosi.DriverGrantBucketAccessRequest) (*cosi.DriverGrantBucketAccessResponse, error) {
	auth := bucket.AuthKey
	if req.GetAuthenticationType() == cosi.AuthenticationType_IAM {
		auth = bucket.AuthServiceAccount
	}
	protocol := s.c.d.cfg.COSI.Protocols[0]
	a, err := s.c.grant(ctx, &bucket.GrantBucketAccessRequest{
		AccountName: req.GetName(), Protocol: protocol, Authentication: auth, Parameters: req.GetParameters(),
		Buckets: []bucket.Grant{{BucketID: req.GetBucketId(), Mode: bucket.ReadWrite}}, Version: bucket.V1Alpha1, RawV1Alpha1: req})
	if err != nil {
		if status.Code(err) == codes.AlreadyExists {
			// The v1alpha1 sidecar crashes on ALREADY_EXISTS from a grant; this keeps the
			// meaning (fix the request) without the crash.
			return nil, status.Error(codes.FailedPrecondition, status.Convert(err).Message())
		}
		return nil, err
	}
	creds := map[string]*cosi.CredentialDetails{}
	b := a.Buckets[0]
	switch protocol {
	case bucket.S3:
		if a.Credentials.S3 != nil {
			creds[v1alpha1KeyS3] = &cosi.CredentialDetails{Secrets: map[string]string{
				v1alpha1AccessKeyID: a.Credentials.S3.AccessKeyID, v1alpha1AccessSecret: a.Credentials.S3.SecretAccessKey,
				v1alpha1Endpoint: b.S3.Endpoint, v1alpha1Region: b.S3.Region}}
		}
	case bucket.Azure:
		if az := a.Credentials.Azure; az != nil {
			m := map[string]string{v1alpha1AccessToken: az.AccessToken}
			if !az.Expiry.IsZero() {
				m[v1alpha1ExpiryTS] = az.Expiry.UTC().Format(time.RFC3339)
			}
			creds[v1alpha1KeyAzure] = &cosi.CredentialDetails{Secrets: m}
		}
	case bucket.GCS:
		if g := a.Credentials.GCS; g != nil {
			creds[v1alpha1KeyGCS] = &cosi.CredentialDetails{Secrets: map[string]string{
				v1alpha1AccessID: g.AccessID, v1alpha1AccessSecretGC: g.AccessSecret, v1alpha1PrivateKeyName: g.PrivateKeyName,
				v1alpha1ServiceAccount: g.ServiceAccount, v1alpha1ProjectID: b.GCS.ProjectID}}
		}
	}
	if len(creds) == 0 && auth == bucket.AuthKey {
		return nil, pluginBug(rpcGrantBucketAccess, "account %q: no credentials for %v", a.AccountID, protocol)
	}
	return &cosi.DriverGrantBucketAccessResponse{AccountId: a.AccountID, Credentials: creds}, nil
}

func (s *cosiProvisionerV1Alpha1) DriverRevokeBucketAccess(ctx context.Context, req *cosi.DriverRevokeBucketAccessRequest) (*cosi.DriverRevokeBucketAccessResponse, error) {
	err := s.c.revoke(ctx, &bucket.RevokeBucketAccessRequest{AccountID: req.GetAccountId(), Parameters: req.GetRevokeAccessContext(),
		BucketIDs: []string{req.GetBucketId()}, Version: bucket.V1Alpha1, RawV1Alpha1: req})
	if err != nil {
		return nil, err
	}
	return &cosi.DriverRevokeBucketAccessResponse{}, nil
}
