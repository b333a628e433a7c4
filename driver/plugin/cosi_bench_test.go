package plugin_test

import (
	"context"
	"strconv"
	"testing"

	"go.uber.org/zap"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/memdriver"
)

// BenchmarkCOSICycle measures one bucket's whole life through the COSI socket, per wire version:
// create, grant, revoke, delete (four calls through the full chain). Report cycles per second as
// 1e9 / ns/op.
func BenchmarkCOSICycle(b *testing.B) {
	cfg := bucketConfig(memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1"))
	cfg.Logger, cfg.CheckResponses = zap.NewNop(), false
	p := startCOSI(b, cfg)
	ctx := context.Background()
	b.Run("v1alpha1", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			name := "v1-" + strconv.Itoa(i)
			c, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: name})
			if err != nil {
				b.Fatal(err)
			}
			g, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: c.GetBucketId(), Name: "ba-" + name,
				AuthenticationType: cosi1.AuthenticationType_Key})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.prov1.DriverRevokeBucketAccess(ctx, &cosi1.DriverRevokeBucketAccessRequest{BucketId: c.GetBucketId(), AccountId: g.GetAccountId()}); err != nil {
				b.Fatal(err)
			}
			if _, err := p.prov1.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: c.GetBucketId()}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("v1alpha2", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			name := "v2-" + strconv.Itoa(i)
			c, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: name, Protocols: []*cosi2.ObjectProtocol{s3Proto()}})
			if err != nil {
				b.Fatal(err)
			}
			g, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-" + name, Protocol: s3Proto(),
				AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw(c.GetBucketId())}})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.prov2.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: g.GetAccountId(), Protocol: s3Proto(),
				AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: c.GetBucketId()}}}); err != nil {
				b.Fatal(err)
			}
			if _, err := p.prov2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: c.GetBucketId()}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
