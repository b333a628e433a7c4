package rgwdriver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/ceph/go-ceph/rgw/admin"
	"go.uber.org/zap"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
)

// BenchmarkCOSICycle is one bucket's life through the driver's COSI socket on the one-node
// Ceph, per wire version: create, grant (read-write), revoke, delete. "direct" is the same
// work done straight on RGW with no driver, as the driver does it at the least (S3 create as the
// owner, put the closed policy and the public access block, admin create user with key, put the
// policy with the grant, put it without, admin delete user and bucket):
// the floor the driver's cycle is measured against; "v1alpha2-default-http-client" is the driver
// on Go's default HTTP client, without NewHTTPClient's quick ACKs. Cycles per second = 1e9/ns/op.
func BenchmarkCOSICycle(b *testing.B) {
	be, c := newBackend(b)
	srv := drivertest.NewServer(b, pluginConfig(be, zap.NewNop()))
	ctx := context.Background()
	run := fmt.Sprintf("%x", rand.Uint32())
	b.Run("v1alpha1", func(b *testing.B) {
		p := cosi1.NewProvisionerClient(srv.Conn)
		for i := 0; b.Loop(); i++ {
			name := fmt.Sprintf("bench1-%s-%d", run, i)
			cr, err := p.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: name})
			if err != nil {
				b.Fatal(err)
			}
			g, err := p.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: cr.GetBucketId(), Name: "ba-" + name,
				AuthenticationType: cosi1.AuthenticationType_Key})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.DriverRevokeBucketAccess(ctx, &cosi1.DriverRevokeBucketAccessRequest{BucketId: cr.GetBucketId(), AccountId: g.GetAccountId()}); err != nil {
				b.Fatal(err)
			}
			if _, err := p.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: cr.GetBucketId()}); err != nil {
				b.Fatal(err)
			}
		}
	})
	v2 := func(b *testing.B, srv *drivertest.Server, prefix string) {
		w := wire2{cosi2.NewProvisionerClient(srv.Conn)}
		for i := 0; b.Loop(); i++ {
			name := fmt.Sprintf("%s-%s-%d", prefix, run, i)
			id, err := w.create(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			acct, _, err := w.grant(ctx, "ba-"+name, map[string]cosi2.AccessMode_Mode{id: rw})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.revoke(ctx, acct, id); err != nil {
				b.Fatal(err)
			}
			if err := w.remove(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("v1alpha2", func(b *testing.B) { v2(b, srv, "bench2") })
	// The same driver on Go's default HTTP client: what the quick ACKs of NewHTTPClient save
	// (quickack_linux.go).
	b.Run("v1alpha2-default-http-client", func(b *testing.B) {
		plain, err := rgwdriver.New(rgwdriver.Config{Endpoint: c.RGW.Endpoint, AdminAccessKey: rgwdriver.Secret(c.RGW.AccessKey),
			AdminSecretKey: rgwdriver.Secret(string(c.RGW.SecretKey)), HTTPClient: &http.Client{}})
		if err != nil {
			b.Fatal(err)
		}
		v2(b, drivertest.NewServer(b, pluginConfig(plain, zap.NewNop())), "bench3")
	})
	b.Run("direct", func(b *testing.B) {
		// The driver's own HTTP client, so that the floor pays what the driver pays per request.
		hc := rgwdriver.NewHTTPClient(nil)
		api, err := admin.New(c.RGW.Endpoint, c.RGW.AccessKey, string(c.RGW.SecretKey), hc)
		if err != nil {
			b.Fatal(err)
		}
		// The driver makes its owner user on first use: one bucket through it, whatever ran before.
		w := wire2{cosi2.NewProvisionerClient(srv.Conn)}
		id, err := w.create(ctx, "bench0-"+run+"-owner")
		if err != nil {
			b.Fatal(err)
		}
		if err := w.remove(ctx, id); err != nil {
			b.Fatal(err)
		}
		owner, err := api.GetUser(ctx, admin.User{ID: rgwdriver.DefaultOwnerUID})
		if err != nil {
			b.Fatal(err)
		}
		oc := s3.New(s3.Options{BaseEndpoint: aws.String(c.RGW.Endpoint), Region: rgwdriver.DefaultRegion, UsePathStyle: true, HTTPClient: hc,
			Credentials:                credentials.NewStaticCredentialsProvider(owner.Keys[0].AccessKey, owner.Keys[0].SecretKey, ""),
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired})
		for i := 0; b.Loop(); i++ {
			name := fmt.Sprintf("bench0-%s-%d", run, i)
			uid := rgwdriver.AccountUID(name)
			if _, err := oc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
				b.Fatal(err)
			}
			deny := func(admitted string) string {
				return `{"Sid":"d","Effect":"Deny","NotPrincipal":{"AWS":["arn:aws:iam:::user/` + rgwdriver.DefaultOwnerUID + `"` + admitted +
					`]},"Action":["s3:*"],"Resource":["arn:aws:s3:::` + name + `/*"]}`
			}
			closedPolicy := `{"Version":"2012-10-17","Statement":[` + deny("") + `]}`
			if _, err := oc.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(name), Policy: aws.String(closedPolicy)}); err != nil {
				b.Fatal(err)
			}
			if _, err := oc.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(name),
				PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{IgnorePublicAcls: aws.Bool(true)}}); err != nil {
				b.Fatal(err)
			}
			if _, err := api.CreateUser(ctx, admin.User{ID: uid, DisplayName: name, MaxBuckets: new(-1), GenerateKey: new(true)}); err != nil {
				b.Fatal(err)
			}
			policy := `{"Version":"2012-10-17","Statement":[{"Sid":"s","Effect":"Allow","Principal":{"AWS":["arn:aws:iam:::user/` + uid +
				`"]},"Action":["s3:GetObject","s3:PutObject"],"Resource":["arn:aws:s3:::` + name + `/*"]},` +
				deny(`,"arn:aws:iam:::user/`+uid+`"`) + `]}`
			for _, p := range []string{policy, closedPolicy} {
				if _, err := oc.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(name), Policy: aws.String(p)}); err != nil {
					b.Fatal(err)
				}
			}
			if err := api.RemoveUser(ctx, admin.User{ID: uid}); err != nil {
				b.Fatal(err)
			}
			if err := api.RemoveBucket(ctx, admin.Bucket{Bucket: name, PurgeObject: new(true)}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
