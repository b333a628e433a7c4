package bucketdriver_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
)

// BenchmarkCOSICycle is one bucket's life through memorys3's COSI socket, per wire version:
// create, grant, revoke, delete, against the real S3 server (in memory; with a state directory
// for the "durable" cases, where every change is a bbolt commit). Cycles per second = 1e9/ns/op.
func BenchmarkCOSICycle(b *testing.B) {
	for _, durable := range []bool{false, true} {
		b.Run("durable="+strconv.FormatBool(durable), func(b *testing.B) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			lis.Close()
			cfg := s3Config("http://" + lis.Addr().String())
			if durable {
				cfg.StateDir = b.TempDir()
			}
			srv := newS3(b, cfg)
			d, err := plugin.New(plugin.Config{Name: "memorys3.csikit.dev", VendorVersion: "bench", Logger: zap.NewNop(),
				COSI: &plugin.COSIConfig{Provisioner: bucketdriver.New(srv), Protocols: []bucket.Protocol{bucket.S3}}})
			if err != nil {
				b.Fatal(err)
			}
			sock := filepath.Join(b.TempDir(), "cosi.sock")
			sl, err := net.Listen("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Serve(ctx, sl) }()
			conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close(); cancel(); <-done })
			p1, p2 := cosi1.NewProvisionerClient(conn), cosi2.NewProvisionerClient(conn)
			s3p := &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3}
			key := &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}
			b.Run("v1alpha1", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					name := "v1-" + strconv.Itoa(i)
					c, err := p1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: name})
					if err != nil {
						b.Fatal(err)
					}
					g, err := p1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: c.GetBucketId(), Name: "ba-" + name,
						AuthenticationType: cosi1.AuthenticationType_Key})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p1.DriverRevokeBucketAccess(ctx, &cosi1.DriverRevokeBucketAccessRequest{BucketId: c.GetBucketId(), AccountId: g.GetAccountId()}); err != nil {
						b.Fatal(err)
					}
					if _, err := p1.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: c.GetBucketId()}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("v1alpha2", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					name := "v2-" + strconv.Itoa(i)
					c, err := p2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: name, Protocols: []*cosi2.ObjectProtocol{s3p}})
					if err != nil {
						b.Fatal(err)
					}
					g, err := p2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-" + name, Protocol: s3p,
						AuthenticationType: key, Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: c.GetBucketId(),
							AccessMode: &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}}}})
					if err != nil {
						b.Fatal(err)
					}
					if _, err := p2.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: g.GetAccountId(), Protocol: s3p,
						AuthenticationType: key, Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: c.GetBucketId()}}}); err != nil {
						b.Fatal(err)
					}
					if _, err := p2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: c.GetBucketId()}); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
