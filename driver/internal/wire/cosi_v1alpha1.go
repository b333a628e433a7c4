package wire

import (
	"time"

	cosi "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
)

// COSI v1alpha1 is package cosi.v1alpha1 of sigs.k8s.io/container-object-storage-interface/proto
// v0.2.2, spoken by the released sidecar. It names no protocol, access mode or service account:
// a grant is read-write, for the protocol the plugin chooses.

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

// CreateBucketFromV1Alpha1 reads a create; it names no protocol, so Protocols is empty.
func CreateBucketFromV1Alpha1(req *cosi.DriverCreateBucketRequest) *bucket.CreateBucketRequest {
	out := &bucket.CreateBucketRequest{Name: req.GetName(), Parameters: req.GetParameters()}
	out.Version, out.RawV1Alpha1 = bucket.V1Alpha1, req
	return out
}

// DeleteBucketFromV1Alpha1 reads a delete; its delete_context becomes Parameters.
func DeleteBucketFromV1Alpha1(req *cosi.DriverDeleteBucketRequest) *bucket.DeleteBucketRequest {
	out := &bucket.DeleteBucketRequest{ID: req.GetBucketId(), Parameters: req.GetDeleteContext()}
	out.Version, out.RawV1Alpha1 = bucket.V1Alpha1, req
	return out
}

// GrantBucketAccessFromV1Alpha1 reads a grant of one bucket, read-write, for protocol: the
// version names neither. IAM authentication is AuthServiceAccount, anything else AuthKey.
func GrantBucketAccessFromV1Alpha1(req *cosi.DriverGrantBucketAccessRequest, protocol bucket.Protocol) *bucket.GrantBucketAccessRequest {
	auth := bucket.AuthKey
	if req.GetAuthenticationType() == cosi.AuthenticationType_IAM {
		auth = bucket.AuthServiceAccount
	}
	out := &bucket.GrantBucketAccessRequest{AccountName: req.GetName(), Protocol: protocol, Authentication: auth,
		Parameters: req.GetParameters(), Buckets: []bucket.Grant{{BucketID: req.GetBucketId(), Mode: bucket.ReadWrite}}}
	out.Version, out.RawV1Alpha1 = bucket.V1Alpha1, req
	return out
}

// RevokeBucketAccessFromV1Alpha1 reads a revoke of one bucket; its revoke_access_context
// becomes Parameters, and Protocol and Authentication stay 0 (the version does not say).
func RevokeBucketAccessFromV1Alpha1(req *cosi.DriverRevokeBucketAccessRequest) *bucket.RevokeBucketAccessRequest {
	out := &bucket.RevokeBucketAccessRequest{AccountID: req.GetAccountId(), Parameters: req.GetRevokeAccessContext(),
		BucketIDs: []string{req.GetBucketId()}}
	out.Version, out.RawV1Alpha1 = bucket.V1Alpha1, req
	return out
}

// V1Alpha1BucketInfo writes a bucket's info for one protocol (the oneof holds one): the first
// of order the bucket reports, nil when it reports none of them.
func V1Alpha1BucketInfo(b *bucket.Bucket, order []bucket.Protocol) *cosi.Protocol {
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

// V1Alpha1Credentials writes a grant's credentials for protocol as the one entry, keyed by
// protocol ("s3": accessKeyID, accessSecretKey, endpoint and region), that the sidecar copies
// into the user's Secret. It is empty when the access has no credentials for protocol. The
// access must describe its first bucket for protocol (the plugin checks the answer first).
func V1Alpha1Credentials(protocol bucket.Protocol, a *bucket.Access) map[string]*cosi.CredentialDetails {
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
	return creds
}
