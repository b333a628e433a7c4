package cosisuite

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// The checks speak of buckets, accounts and credentials; a cosiClient per wire version turns them
// into that version's messages and the answers back, and lists what is wrong with an answer the
// way that version's sidecar would see it. The rules common to both versions are written once.

// cosiClient is one wire version of the driver under test.
type cosiClient interface {
	version() bucket.Version
	// info returns the driver name and, in v1alpha2, its protocols (v1alpha1 names none).
	info(ctx context.Context) (name string, protocols []bucket.Protocol, err error)
	// create creates a bucket; problems lists what the sidecar would refuse in the answer.
	create(ctx context.Context, name string, params map[string]string) (b *bucket.Bucket, problems []string, err error)
	// get is DriverGetExistingBucket; errNoGet in v1alpha1, which has none.
	get(ctx context.Context, id string) (b *bucket.Bucket, problems []string, err error)
	remove(ctx context.Context, id string) error
	// grant gives account read-write access to buckets with key authentication.
	grant(ctx context.Context, account string, buckets []string, params map[string]string) (a *cosiAccess, problems []string, err error)
	revoke(ctx context.Context, accountID string, buckets []string) error
}

// errNoGet: the version has no DriverGetExistingBucket.
var errNoGet = errors.New("v1alpha1 has no DriverGetExistingBucket")

// cosiAccess is a grant's answer in neutral form.
type cosiAccess struct {
	AccountID   string
	Buckets     []bucket.Bucket // in the answer's order
	Credentials bucket.Credentials
}

// sameCredentials compares two answers' credentials, field by field.
func sameCredentials(a, b bucket.Credentials) bool { return credentialFields(a) == credentialFields(b) }

// credentialFields lays credentials out flat, for comparing; never printed.
func credentialFields(c bucket.Credentials) (out [8]string) {
	if c.S3 != nil {
		out[0], out[1] = c.S3.AccessKeyID, c.S3.SecretAccessKey
	}
	if c.Azure != nil {
		out[2], out[3] = c.Azure.AccessToken, c.Azure.Expiry.String()
	}
	if c.GCS != nil {
		out[4], out[5], out[6], out[7] = c.GCS.AccessID, c.GCS.AccessSecret, c.GCS.PrivateKeyName, c.GCS.ServiceAccount
	}
	return out
}

// v1alpha1 ---------------------------------------------------------------------------------

type cosiV1Alpha1 struct {
	id   cosi1.IdentityClient
	prov cosi1.ProvisionerClient
	// protocol is what the driver's buckets report, learnt from the first create of the run
	// (v1alpha1 grants name no protocol); S3 until then.
	protocol bucket.Protocol
}

func newCOSIV1Alpha1(conn *grpc.ClientConn) *cosiV1Alpha1 {
	return &cosiV1Alpha1{id: cosi1.NewIdentityClient(conn), prov: cosi1.NewProvisionerClient(conn), protocol: bucket.S3}
}

func (c *cosiV1Alpha1) version() bucket.Version { return bucket.V1Alpha1 }

func (c *cosiV1Alpha1) info(ctx context.Context) (string, []bucket.Protocol, error) {
	r, err := c.id.DriverGetInfo(ctx, &cosi1.DriverGetInfoRequest{})
	return r.GetName(), nil, err
}

func (c *cosiV1Alpha1) create(ctx context.Context, name string, params map[string]string) (*bucket.Bucket, []string, error) {
	r, err := c.prov.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: name, Parameters: params})
	if err != nil {
		return nil, nil, err
	}
	b := &bucket.Bucket{ID: r.GetBucketId()}
	var problems []string
	if p := objectIDProblem(b.ID); p != "" {
		problems = append(problems, "bucket_id "+p)
	}
	switch info := r.GetBucketInfo().GetType().(type) {
	case *cosi1.Protocol_S3:
		b.S3 = &bucket.S3Info{Name: b.ID, Region: info.S3.GetRegion()}
	case *cosi1.Protocol_AzureBlob:
		b.Azure = &bucket.AzureInfo{StorageAccount: info.AzureBlob.GetStorageAccount()}
	case *cosi1.Protocol_Gcs:
		b.GCS = &bucket.GCSInfo{ProjectID: info.Gcs.GetProjectId(), Name: b.ID}
	}
	return b, problems, nil
}

func (c *cosiV1Alpha1) get(context.Context, string) (*bucket.Bucket, []string, error) {
	return nil, nil, errNoGet
}

func (c *cosiV1Alpha1) remove(ctx context.Context, id string) error {
	_, err := c.prov.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: id})
	return err
}

// v1alpha1CredentialKey is the key of the one credentials entry the v1alpha1 sidecar reads.
var v1alpha1CredentialKey = map[bucket.Protocol]string{bucket.S3: "s3", bucket.Azure: "azure", bucket.GCS: "gcs"}

// grant sends one bucket (v1alpha1 grants exactly one); more is the caller's mistake.
func (c *cosiV1Alpha1) grant(ctx context.Context, account string, buckets []string, params map[string]string) (*cosiAccess, []string, error) {
	if len(buckets) != 1 {
		return nil, nil, fmt.Errorf("drivertest: a v1alpha1 grant names exactly one bucket, not %d", len(buckets))
	}
	r, err := c.prov.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: buckets[0], Name: account,
		AuthenticationType: cosi1.AuthenticationType_Key, Parameters: params})
	if err != nil {
		return nil, nil, err
	}
	a := &cosiAccess{AccountID: r.GetAccountId()}
	var problems []string
	if p := objectIDProblem(a.AccountID); p != "" {
		problems = append(problems, "account_id "+p)
	}
	key := v1alpha1CredentialKey[c.protocol]
	creds := r.GetCredentials()
	if len(creds) != 1 || creds[key] == nil {
		keys := make([]string, 0, len(creds))
		for k := range creds {
			keys = append(keys, fmt.Sprintf("%q", k))
		}
		slices.Sort(keys)
		problems = append(problems, fmt.Sprintf("credentials has entries %v; the v1alpha1 sidecar needs exactly one, keyed %q", keys, key))
	}
	s := creds[key].GetSecrets()
	b := bucket.Bucket{ID: buckets[0]}
	switch c.protocol {
	case bucket.S3:
		for _, k := range []string{"accessKeyID", "accessSecretKey", "endpoint", "region"} {
			if s[k] == "" {
				problems = append(problems, fmt.Sprintf("credentials entry %q has no %q", key, k))
			}
		}
		a.Credentials.S3 = &bucket.S3Credentials{AccessKeyID: s["accessKeyID"], SecretAccessKey: s["accessSecretKey"]}
		b.S3 = &bucket.S3Info{Name: buckets[0], Endpoint: s["endpoint"], Region: s["region"]}
	case bucket.Azure:
		if s["accessToken"] == "" {
			problems = append(problems, fmt.Sprintf("credentials entry %q has no %q", key, "accessToken"))
		}
		a.Credentials.Azure = &bucket.AzureCredentials{AccessToken: s["accessToken"]}
		b.Azure = &bucket.AzureInfo{}
	case bucket.GCS:
		for _, k := range []string{"accessId", "accessSecret"} {
			if s[k] == "" {
				problems = append(problems, fmt.Sprintf("credentials entry %q has no %q", key, k))
			}
		}
		a.Credentials.GCS = &bucket.GCSCredentials{AccessID: s["accessId"], AccessSecret: s["accessSecret"],
			PrivateKeyName: s["privateKeyName"], ServiceAccount: s["serviceAccount"]}
		b.GCS = &bucket.GCSInfo{ProjectID: s["projectId"], Name: buckets[0]}
	}
	a.Buckets = []bucket.Bucket{b}
	return a, problems, nil
}

func (c *cosiV1Alpha1) revoke(ctx context.Context, accountID string, buckets []string) error {
	var errs []error
	for _, b := range buckets {
		_, err := c.prov.DriverRevokeBucketAccess(ctx, &cosi1.DriverRevokeBucketAccessRequest{BucketId: b, AccountId: accountID})
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// v1alpha2 ---------------------------------------------------------------------------------

type cosiV1Alpha2 struct {
	id   cosi2.IdentityClient
	prov cosi2.ProvisionerClient
	// protocol is the one the suite asks for: the first the driver lists.
	protocol bucket.Protocol
}

func newCOSIV1Alpha2(conn *grpc.ClientConn) *cosiV1Alpha2 {
	return &cosiV1Alpha2{id: cosi2.NewIdentityClient(conn), prov: cosi2.NewProvisionerClient(conn), protocol: bucket.S3}
}

func (c *cosiV1Alpha2) version() bucket.Version { return bucket.V1Alpha2 }

func (c *cosiV1Alpha2) info(ctx context.Context) (string, []bucket.Protocol, error) {
	r, err := c.id.DriverGetInfo(ctx, &cosi2.DriverGetInfoRequest{})
	if err != nil {
		return "", nil, err
	}
	var ps []bucket.Protocol
	for _, p := range r.GetSupportedProtocols() {
		ps = append(ps, bucket.Protocol(p.GetType())) // the wire numbers are the neutral ones; 0 is UNKNOWN
	}
	return r.GetName(), ps, nil
}

func wireProtocol(p bucket.Protocol) *cosi2.ObjectProtocol {
	return &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_Type(p)}
}

var (
	keyAuthV1Alpha2 = &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}
	readWriteMode   = &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}
)

// bucketInfo converts one protocol-and-bucket-info and lists its problems: the requested protocol
// must be there and complete; only is true where the sidecar wants nothing else.
func (c *cosiV1Alpha2) bucketInfo(id string, info *cosi2.ObjectProtocolAndBucketInfo, only bool) (bucket.Bucket, []string) {
	b := bucket.Bucket{ID: id}
	var problems []string
	if s3 := info.GetS3(); s3 != nil {
		b.S3 = &bucket.S3Info{Name: s3.GetBucketId(), Endpoint: s3.GetEndpoint(), Region: s3.GetRegion(),
			AddressingStyle: bucket.S3AddressingStyle(s3.GetAddressingStyle().GetStyle())}
	}
	if az := info.GetAzure(); az != nil {
		b.Azure = &bucket.AzureInfo{StorageAccount: az.GetStorageAccount()}
	}
	if g := info.GetGcs(); g != nil {
		b.GCS = &bucket.GCSInfo{ProjectID: g.GetProjectId(), Name: g.GetBucketName()}
	}
	switch c.protocol {
	case bucket.S3:
		s3 := info.GetS3()
		switch {
		case s3 == nil:
			problems = append(problems, fmt.Sprintf("bucket %q: no S3 info for the requested S3 protocol", id))
		case s3.GetBucketId() == "" || s3.GetEndpoint() == "" || s3.GetRegion() == "":
			problems = append(problems, fmt.Sprintf("bucket %q: S3 info needs bucket_id, endpoint and region (has bucket_id %t, endpoint %t, region %t)",
				id, s3.GetBucketId() != "", s3.GetEndpoint() != "", s3.GetRegion() != ""))
		case s3.GetAddressingStyle().GetStyle() != cosi2.S3AddressingStyle_PATH && s3.GetAddressingStyle().GetStyle() != cosi2.S3AddressingStyle_VIRTUAL:
			problems = append(problems, fmt.Sprintf("bucket %q: S3 addressing style %v, want PATH or VIRTUAL", id, s3.GetAddressingStyle().GetStyle()))
		}
	case bucket.Azure:
		if info.GetAzure() == nil {
			problems = append(problems, fmt.Sprintf("bucket %q: no Azure info for the requested Azure protocol", id))
		}
	case bucket.GCS:
		if info.GetGcs() == nil {
			problems = append(problems, fmt.Sprintf("bucket %q: no GCS info for the requested GCS protocol", id))
		}
	}
	if only {
		for p, has := range map[bucket.Protocol]bool{bucket.S3: b.S3 != nil, bucket.Azure: b.Azure != nil, bucket.GCS: b.GCS != nil} {
			if has && p != c.protocol {
				problems = append(problems, fmt.Sprintf("bucket %q: %v info in an answer for the %v protocol only", id, p, c.protocol))
			}
		}
	}
	return b, problems
}

func (c *cosiV1Alpha2) create(ctx context.Context, name string, params map[string]string) (*bucket.Bucket, []string, error) {
	r, err := c.prov.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: name,
		Protocols: []*cosi2.ObjectProtocol{wireProtocol(c.protocol)}, Parameters: params})
	if err != nil {
		return nil, nil, err
	}
	return c.bucketAnswer(r.GetBucketId(), r.GetProtocols())
}

func (c *cosiV1Alpha2) bucketAnswer(id string, info *cosi2.ObjectProtocolAndBucketInfo) (*bucket.Bucket, []string, error) {
	var problems []string
	if p := objectIDProblem(id); p != "" {
		problems = append(problems, "bucket_id "+p)
	}
	b, more := c.bucketInfo(id, info, false)
	return &b, append(problems, more...), nil
}

func (c *cosiV1Alpha2) get(ctx context.Context, id string) (*bucket.Bucket, []string, error) {
	r, err := c.prov.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: id,
		Protocols: []*cosi2.ObjectProtocol{wireProtocol(c.protocol)}})
	if err != nil {
		return nil, nil, err
	}
	return c.bucketAnswer(r.GetBucketId(), r.GetProtocols())
}

func (c *cosiV1Alpha2) remove(ctx context.Context, id string) error {
	_, err := c.prov.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: id})
	return err
}

func (c *cosiV1Alpha2) grantRequest(account string, buckets []string, params map[string]string) *cosi2.DriverGrantBucketAccessRequest {
	req := &cosi2.DriverGrantBucketAccessRequest{AccountName: account, Protocol: wireProtocol(c.protocol),
		AuthenticationType: keyAuthV1Alpha2, Parameters: params}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, &cosi2.DriverGrantBucketAccessRequest_AccessedBucket{BucketId: b, AccessMode: readWriteMode})
	}
	return req
}

func (c *cosiV1Alpha2) grant(ctx context.Context, account string, buckets []string, params map[string]string) (*cosiAccess, []string, error) {
	r, err := c.prov.DriverGrantBucketAccess(ctx, c.grantRequest(account, buckets, params))
	if err != nil {
		return nil, nil, err
	}
	a := &cosiAccess{AccountID: r.GetAccountId()}
	var problems []string
	if p := objectIDProblem(a.AccountID); p != "" {
		problems = append(problems, "account_id "+p)
	}
	// Exactly the requested buckets, each once, with only the requested protocol.
	var got []string
	for _, bi := range r.GetBuckets() {
		got = append(got, bi.GetBucketId())
		b, more := c.bucketInfo(bi.GetBucketId(), bi.GetBucketInfo(), true)
		a.Buckets = append(a.Buckets, b)
		problems = append(problems, more...)
	}
	want := slices.Sorted(slices.Values(buckets))
	if gotSorted := slices.Sorted(slices.Values(got)); !slices.Equal(gotSorted, want) {
		problems = append(problems, fmt.Sprintf("the answer lists buckets %q for the requested %q; it must cover exactly the requested buckets, each once", gotSorted, want))
	}
	cr := r.GetCredentials()
	if s3 := cr.GetS3(); s3 != nil {
		a.Credentials.S3 = &bucket.S3Credentials{AccessKeyID: s3.GetAccessKeyId(), SecretAccessKey: s3.GetAccessSecretKey()}
	}
	if az := cr.GetAzure(); az != nil {
		a.Credentials.Azure = &bucket.AzureCredentials{AccessToken: az.GetAccessToken()}
	}
	if g := cr.GetGcs(); g != nil {
		a.Credentials.GCS = &bucket.GCSCredentials{AccessID: g.GetAccessId(), AccessSecret: g.GetAccessSecret(),
			PrivateKeyName: g.GetPrivateKeyName(), ServiceAccount: g.GetServiceAccount()}
	}
	problems = append(problems, c.credentialProblems(a.Credentials)...)
	return a, problems, nil
}

// credentialProblems: key authentication needs both halves, for the requested protocol only.
func (c *cosiV1Alpha2) credentialProblems(cr bucket.Credentials) []string {
	var problems []string
	has := map[bucket.Protocol]bool{bucket.S3: cr.S3 != nil, bucket.Azure: cr.Azure != nil, bucket.GCS: cr.GCS != nil}
	for _, p := range []bucket.Protocol{bucket.S3, bucket.Azure, bucket.GCS} {
		if has[p] && p != c.protocol {
			problems = append(problems, fmt.Sprintf("%v credentials in an answer for the %v protocol only", p, c.protocol))
		}
	}
	switch c.protocol {
	case bucket.S3:
		if cr.S3 == nil || cr.S3.AccessKeyID == "" || cr.S3.SecretAccessKey == "" {
			problems = append(problems, "key authentication: the S3 credentials need both access_key_id and access_secret_key")
		}
	case bucket.Azure:
		if cr.Azure == nil || cr.Azure.AccessToken == "" {
			problems = append(problems, "key authentication: the Azure credentials need an access_token")
		}
	case bucket.GCS:
		if cr.GCS == nil || cr.GCS.AccessID == "" || cr.GCS.AccessSecret == "" {
			problems = append(problems, "key authentication: the GCS credentials need both access_id and access_secret")
		}
	}
	return problems
}

func (c *cosiV1Alpha2) revoke(ctx context.Context, accountID string, buckets []string) error {
	req := &cosi2.DriverRevokeBucketAccessRequest{AccountId: accountID, Protocol: wireProtocol(c.protocol), AuthenticationType: keyAuthV1Alpha2}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, &cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{BucketId: b})
	}
	_, err := c.prov.DriverRevokeBucketAccess(ctx, req)
	return err
}
