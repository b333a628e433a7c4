package wire_test

import (
	"reflect"
	"testing"
	"time"

	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/internal/wire"
)

// TestProtocolRoundTrip is the differential test of the two v1alpha2 protocol directions.
func TestProtocolRoundTrip(t *testing.T) {
	for _, p := range []bucket.Protocol{bucket.S3, bucket.Azure, bucket.GCS} {
		if back := wire.ProtocolFromV1Alpha2(&cosi2.ObjectProtocol{Type: wire.V1Alpha2Protocol(p)}); back != p {
			t.Errorf("%v came back as %v", p, back)
		}
	}
	if got := wire.V1Alpha2Protocol(bucket.Protocol(9)); got != cosi2.ObjectProtocol_UNKNOWN {
		t.Errorf("an unnamed protocol was written as %v", got)
	}
	if got := wire.ProtocolFromV1Alpha2(nil); got != 0 {
		t.Errorf("a missing protocol read as %v", got)
	}
}

// TestV1Alpha2Enums: authentication types and access modes, their defaults included.
func TestV1Alpha2Enums(t *testing.T) {
	for _, tc := range []struct {
		in   *cosi2.AuthenticationType
		want bucket.AuthenticationType
	}{
		{&cosi2.AuthenticationType{Type: cosi2.AuthenticationType_SERVICE_ACCOUNT}, bucket.AuthServiceAccount},
		{&cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}, bucket.AuthKey},
		{nil, bucket.AuthKey},
	} {
		if got := wire.AuthenticationFromV1Alpha2(tc.in); got != tc.want {
			t.Errorf("%v read as %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		in   *cosi2.AccessMode
		want bucket.AccessMode
	}{
		{&cosi2.AccessMode{Mode: cosi2.AccessMode_READ_ONLY}, bucket.ReadOnly},
		{&cosi2.AccessMode{Mode: cosi2.AccessMode_WRITE_ONLY}, bucket.WriteOnly},
		{&cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}, bucket.ReadWrite},
		{nil, bucket.ReadWrite},
	} {
		if got := wire.AccessModeFromV1Alpha2(tc.in); got != tc.want {
			t.Errorf("%v read as %v, want %v", tc.in, got, tc.want)
		}
	}
}

// neutral is a request without the part that says how it came, for comparing the versions.
func neutral[T any](r *T, clear func(*T)) T {
	out := *r
	clear(&out)
	return out
}

// TestRequestsAgreeAcrossVersions is the differential test of the two COSI versions: the same
// create, delete, grant and revoke sent as v1alpha1 and as v1alpha2 read into the same
// version-neutral fields, each with its own Version and wire request.
func TestRequestsAgreeAcrossVersions(t *testing.T) {
	params := map[string]string{"tier": "gold"}
	s3 := &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3}
	rw := &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}
	key := &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}

	c1 := wire.CreateBucketFromV1Alpha1(&cosi1.DriverCreateBucketRequest{Name: "bc", Parameters: params})
	c2 := wire.CreateBucketFromV1Alpha2(&cosi2.DriverCreateBucketRequest{Name: "bc", Parameters: params})
	d1 := wire.DeleteBucketFromV1Alpha1(&cosi1.DriverDeleteBucketRequest{BucketId: "b", DeleteContext: params})
	d2 := wire.DeleteBucketFromV1Alpha2(&cosi2.DriverDeleteBucketRequest{BucketId: "b", Parameters: params})
	g1 := wire.GrantBucketAccessFromV1Alpha1(&cosi1.DriverGrantBucketAccessRequest{Name: "ba", BucketId: "b",
		AuthenticationType: cosi1.AuthenticationType_Key, Parameters: params}, bucket.S3)
	g2 := wire.GrantBucketAccessFromV1Alpha2(&cosi2.DriverGrantBucketAccessRequest{AccountName: "ba", Protocol: s3, AuthenticationType: key,
		Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: "b", AccessMode: rw}}, Parameters: params})
	r1 := wire.RevokeBucketAccessFromV1Alpha1(&cosi1.DriverRevokeBucketAccessRequest{AccountId: "a", BucketId: "b", RevokeAccessContext: params})
	r2 := wire.RevokeBucketAccessFromV1Alpha2(&cosi2.DriverRevokeBucketAccessRequest{AccountId: "a",
		Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: "b"}}, Parameters: params})

	for _, tc := range []struct {
		name           string
		v1, v2         any
		ver1, ver2     bucket.Version
		raw1, raw2     bool // RawV1Alpha1 of v1 and RawV1Alpha2 of v2 are set
		other1, other2 bool // the other version's wire request is set (it must not be)
	}{
		{"create", neutral(c1, func(r *bucket.CreateBucketRequest) { r.Wire = c2.Wire; r.Protocols = nil }),
			neutral(c2, func(r *bucket.CreateBucketRequest) { r.Protocols = nil }),
			c1.Version, c2.Version, c1.RawV1Alpha1 != nil, c2.RawV1Alpha2 != nil, c1.RawV1Alpha2 != nil, c2.RawV1Alpha1 != nil},
		{"delete", neutral(d1, func(r *bucket.DeleteBucketRequest) { r.Wire = d2.Wire }), *d2,
			d1.Version, d2.Version, d1.RawV1Alpha1 != nil, d2.RawV1Alpha2 != nil, d1.RawV1Alpha2 != nil, d2.RawV1Alpha1 != nil},
		{"grant", neutral(g1, func(r *bucket.GrantBucketAccessRequest) { r.Wire = g2.Wire }), *g2,
			g1.Version, g2.Version, g1.RawV1Alpha1 != nil, g2.RawV1Alpha2 != nil, g1.RawV1Alpha2 != nil, g2.RawV1Alpha1 != nil},
		// v1alpha1 names no protocol or authentication for a revoke.
		{"revoke", neutral(r1, func(r *bucket.RevokeBucketAccessRequest) { r.Wire = r2.Wire }),
			neutral(r2, func(r *bucket.RevokeBucketAccessRequest) { r.Protocol, r.Authentication = 0, 0 }),
			r1.Version, r2.Version, r1.RawV1Alpha1 != nil, r2.RawV1Alpha2 != nil, r1.RawV1Alpha2 != nil, r2.RawV1Alpha1 != nil},
	} {
		if !reflect.DeepEqual(tc.v1, tc.v2) {
			t.Errorf("%s: v1alpha1 read as %+v, v1alpha2 as %+v", tc.name, tc.v1, tc.v2)
		}
		if tc.ver1 != bucket.V1Alpha1 || tc.ver2 != bucket.V1Alpha2 {
			t.Errorf("%s: versions %q and %q", tc.name, tc.ver1, tc.ver2)
		}
		if !tc.raw1 || !tc.raw2 || tc.other1 || tc.other2 {
			t.Errorf("%s: wire requests set: own %t %t, other %t %t", tc.name, tc.raw1, tc.raw2, tc.other1, tc.other2)
		}
	}
	if want := []bucket.Protocol{bucket.S3}; !reflect.DeepEqual(wire.CreateBucketFromV1Alpha2(&cosi2.DriverCreateBucketRequest{
		Protocols: []*cosi2.ObjectProtocol{s3}}).Protocols, want) {
		t.Errorf("v1alpha2 create protocols not read")
	}
	if g := wire.GrantBucketAccessFromV1Alpha1(&cosi1.DriverGrantBucketAccessRequest{AuthenticationType: cosi1.AuthenticationType_IAM}, bucket.GCS); g.Authentication != bucket.AuthServiceAccount || g.Protocol != bucket.GCS {
		t.Errorf("a v1alpha1 IAM grant read as %v for %v", g.Authentication, g.Protocol)
	}
	get := wire.GetBucketFromV1Alpha2(&cosi2.DriverGetExistingBucketRequest{ExistingBucketId: "b", Protocols: []*cosi2.ObjectProtocol{s3}, Parameters: params})
	if get.ID != "b" || !reflect.DeepEqual(get.Protocols, []bucket.Protocol{bucket.S3}) || get.Version != bucket.V1Alpha2 || get.RawV1Alpha2 == nil {
		t.Errorf("get read as %+v", get)
	}
}

// TestBucketInfo: v1alpha1 answers the first of the plugin's protocols the bucket reports,
// v1alpha2 every one asked for, naming the bucket by its ID when it has no name of its own.
func TestBucketInfo(t *testing.T) {
	b := &bucket.Bucket{ID: "b-1", S3: &bucket.S3Info{Endpoint: "https://s3", Region: "r", AddressingStyle: bucket.S3AddressingVirtual},
		GCS: &bucket.GCSInfo{ProjectID: "p", Name: "gcs-name"}}
	for _, tc := range []struct {
		order []bucket.Protocol
		s3    bool
		gcs   bool
	}{
		{[]bucket.Protocol{bucket.S3, bucket.GCS}, true, false},
		{[]bucket.Protocol{bucket.Azure, bucket.GCS}, false, true},
		{[]bucket.Protocol{bucket.Azure}, false, false},
	} {
		got := wire.V1Alpha1BucketInfo(b, tc.order)
		if (got.GetS3() != nil) != tc.s3 || (got.GetGcs() != nil) != tc.gcs {
			t.Errorf("order %v: %v", tc.order, got)
		}
	}
	all := wire.V1Alpha2BucketInfo(b, nil)
	if all.GetS3().GetBucketId() != "b-1" || all.GetS3().GetAddressingStyle().GetStyle() != cosi2.S3AddressingStyle_VIRTUAL ||
		all.GetGcs().GetBucketName() != "gcs-name" || all.GetAzure() != nil {
		t.Errorf("v1alpha2, every protocol: %v", all)
	}
	if only := wire.V1Alpha2BucketInfo(b, []bucket.Protocol{bucket.GCS}); only.GetS3() != nil || only.GetGcs() == nil {
		t.Errorf("v1alpha2, GCS only: %v", only)
	}
}

// TestCredentials: each version carries the granted protocol's credentials only, in its shape.
func TestCredentials(t *testing.T) {
	expiry := time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))
	creds := bucket.Credentials{S3: &bucket.S3Credentials{AccessKeyID: "id", SecretAccessKey: "sk"},
		Azure: &bucket.AzureCredentials{AccessToken: "tok", Expiry: expiry},
		GCS:   &bucket.GCSCredentials{AccessID: "gid", AccessSecret: "gs", PrivateKeyName: "pk", ServiceAccount: "sa"}}
	a := &bucket.Access{AccountID: "a", Credentials: creds, Buckets: []bucket.Bucket{{ID: "b",
		S3: &bucket.S3Info{Endpoint: "https://s3", Region: "r"}, GCS: &bucket.GCSInfo{ProjectID: "p"}}}}
	for _, tc := range []struct {
		protocol bucket.Protocol
		v1       map[string]map[string]string
	}{
		{bucket.S3, map[string]map[string]string{"s3": {"accessKeyID": "id", "accessSecretKey": "sk", "endpoint": "https://s3", "region": "r"}}},
		{bucket.Azure, map[string]map[string]string{"azure": {"accessToken": "tok", "expiryTS": "2029-12-31T23:00:00Z"}}},
		{bucket.GCS, map[string]map[string]string{"gcs": {"accessId": "gid", "accessSecret": "gs", "privateKeyName": "pk",
			"serviceAccount": "sa", "projectId": "p"}}},
	} {
		got := map[string]map[string]string{}
		for k, v := range wire.V1Alpha1Credentials(tc.protocol, a) {
			got[k] = v.GetSecrets()
		}
		if !reflect.DeepEqual(got, tc.v1) {
			t.Errorf("v1alpha1 %v: %v, want %v", tc.protocol, got, tc.v1)
		}
		v2 := wire.V1Alpha2Credentials(tc.protocol, creds)
		set := map[bucket.Protocol]bool{bucket.S3: v2.GetS3() != nil, bucket.Azure: v2.GetAzure() != nil, bucket.GCS: v2.GetGcs() != nil}
		for p, ok := range set {
			if ok != (p == tc.protocol) {
				t.Errorf("v1alpha2 %v: %v credentials set: %t", tc.protocol, p, ok)
			}
		}
	}
	if got := wire.V1Alpha2Credentials(bucket.Azure, creds).GetAzure().GetExpiryTimestamp(); got != "2029-12-31T23:00:00Z" {
		t.Errorf("v1alpha2 Azure expiry %q", got)
	}
	if got := wire.V1Alpha1Credentials(bucket.S3, &bucket.Access{Buckets: a.Buckets}); len(got) != 0 {
		t.Errorf("an access without credentials wrote %v", got)
	}
}

// TestV1Alpha2GrantedBuckets: the buckets go out in the request's order, for the granted
// protocol only.
func TestV1Alpha2GrantedBuckets(t *testing.T) {
	req := &cosi2.DriverGrantBucketAccessRequest{Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: "z"}, {BucketId: "a"}}}
	a := &bucket.Access{Buckets: []bucket.Bucket{
		{ID: "a", S3: &bucket.S3Info{Region: "r"}, GCS: &bucket.GCSInfo{ProjectID: "p"}},
		{ID: "z", S3: &bucket.S3Info{Region: "r"}}}}
	got := wire.V1Alpha2GrantedBuckets(req, a, bucket.S3)
	if len(got) != 2 || got[0].GetBucketId() != "z" || got[1].GetBucketId() != "a" {
		t.Fatalf("granted buckets %v, want z then a", got)
	}
	if got[1].GetBucketInfo().GetGcs() != nil || got[1].GetBucketInfo().GetS3() == nil {
		t.Errorf("bucket a carries other protocols: %v", got[1].GetBucketInfo())
	}
}
