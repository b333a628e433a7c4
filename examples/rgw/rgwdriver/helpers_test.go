package rgwdriver_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
	"github.com/csikit/csikit/internal/cephtest"
)

// One Ceph cluster for the whole binary; the fault tests stop and start its daemons, so no
// test here runs in parallel.
func TestMain(m *testing.M) { os.Exit(cephtest.Main(m)) }

// driverName is the COSI name the tests serve the driver under.
const driverName = "rgw.csikit.dev"

// newBackend starts (or shares) the cluster and returns a backend on its RGW.
func newBackend(t testing.TB) (*rgwdriver.Backend, *cephtest.Cluster) {
	t.Helper()
	c := cephtest.Start(t)
	b, err := rgwdriver.New(rgwdriver.Config{Endpoint: c.RGW.Endpoint, AdminAccessKey: rgwdriver.Secret(c.RGW.AccessKey),
		AdminSecretKey: rgwdriver.Secret(string(c.RGW.SecretKey))})
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

func pluginConfig(b *rgwdriver.Backend, logger *zap.Logger) plugin.Config {
	return plugin.Config{Name: driverName, VendorVersion: "test", Logger: logger,
		COSI: &plugin.COSIConfig{Provisioner: b, Protocols: []bucket.Protocol{bucket.S3}, MultiBucketAccess: true}}
}

// s3As is an aws-sdk-go-v2 client of RGW signing with keys.
func s3As(endpoint string, keys bucket.S3Credentials) *s3.Client {
	return s3.New(s3.Options{BaseEndpoint: aws.String(endpoint), Region: rgwdriver.DefaultRegion, UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(keys.AccessKeyID, keys.SecretAccessKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           1})
}

// s3Code is the S3 error code of an aws-sdk-go-v2 error: "" for none, "?" for a failure that
// carries no S3 code (a test wants to see that too).
func s3Code(err error) string {
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "?" + err.Error()
}

// keyOps is what one key can do with one bucket right now, each answered by its S3 error code.
type keyOps struct {
	put, get, list, del string
}

// probeKey tries put, get, list and delete of one object with keys on bucketName. The object is
// first written by the owner's side (writer, a read-write key) so that get and delete have
// something to find whatever keys may do; writer may be keys itself.
func probeKey(t *testing.T, endpoint, bucketName string, keys, writer bucket.S3Credentials) keyOps {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := s3As(endpoint, writer)
	if _, err := w.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucketName), Key: aws.String("seed"),
		Body: strings.NewReader("seed")}); err != nil {
		t.Fatalf("seeding %s with the writer's key: %v", bucketName, err)
	}
	c := s3As(endpoint, keys)
	var ops keyOps
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucketName), Key: aws.String("probe"), Body: strings.NewReader("probe")})
	ops.put = s3Code(err)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucketName), Key: aws.String("seed")})
	if err == nil {
		out.Body.Close()
	}
	ops.get = s3Code(err)
	_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucketName)})
	ops.list = s3Code(err)
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucketName), Key: aws.String("seed")})
	ops.del = s3Code(err)
	return ops
}

// wire2 is the v1alpha2 provisioner client with helpers.
type wire2 struct{ p cosi2.ProvisionerClient }

var (
	s3Protocol = &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3}
	keyAuth    = &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}
)

func (w wire2) create(ctx context.Context, name string) (string, error) {
	r, err := w.p.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: name, Protocols: []*cosi2.ObjectProtocol{s3Protocol}})
	return r.GetBucketId(), err
}

func (w wire2) remove(ctx context.Context, id string) error {
	_, err := w.p.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: id})
	return err
}

// grant grants account the buckets, each in its mode.
func (w wire2) grant(ctx context.Context, account string, modes map[string]cosi2.AccessMode_Mode) (string, bucket.S3Credentials, error) {
	req := &cosi2.DriverGrantBucketAccessRequest{AccountName: account, Protocol: s3Protocol, AuthenticationType: keyAuth}
	for b, m := range modes {
		req.Buckets = append(req.Buckets, &cosi2.DriverGrantBucketAccessRequest_AccessedBucket{BucketId: b, AccessMode: &cosi2.AccessMode{Mode: m}})
	}
	r, err := w.p.DriverGrantBucketAccess(ctx, req)
	s := r.GetCredentials().GetS3()
	return r.GetAccountId(), bucket.S3Credentials{AccessKeyID: s.GetAccessKeyId(), SecretAccessKey: s.GetAccessSecretKey()}, err
}

func (w wire2) revoke(ctx context.Context, accountID string, buckets ...string) error {
	req := &cosi2.DriverRevokeBucketAccessRequest{AccountId: accountID, Protocol: s3Protocol, AuthenticationType: keyAuth}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, &cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{BucketId: b})
	}
	_, err := w.p.DriverRevokeBucketAccess(ctx, req)
	return err
}

// wire1 is the v1alpha1 provisioner client.
type wire1 struct{ p cosi1.ProvisionerClient }

func (w wire1) grant(ctx context.Context, account, bucketID string) (string, bucket.S3Credentials, error) {
	r, err := w.p.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: bucketID, Name: account,
		AuthenticationType: cosi1.AuthenticationType_Key})
	s := r.GetCredentials()["s3"].GetSecrets()
	return r.GetAccountId(), bucket.S3Credentials{AccessKeyID: s["accessKeyID"], SecretAccessKey: s["accessSecretKey"]}, err
}

// code is err's gRPC code.
func code(err error) codes.Code { return status.Code(err) }

// served serves b for the test and returns both wire clients and the server (for its logs).
func served(t *testing.T, b *rgwdriver.Backend) (wire1, wire2, *drivertest.Server) {
	t.Helper()
	srv := drivertest.NewServer(t, pluginConfig(b, zap.NewNop()))
	return wire1{cosi1.NewProvisionerClient(srv.Conn)}, wire2{cosi2.NewProvisionerClient(srv.Conn)}, srv
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
