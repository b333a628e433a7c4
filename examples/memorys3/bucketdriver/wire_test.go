package bucketdriver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// wire is one COSI wire version as the sidecar speaks it to memorys3's socket.
type wire interface {
	name() string
	create(ctx context.Context, name string) (string, error)
	remove(ctx context.Context, id string) error
	grant(ctx context.Context, account string, buckets ...string) (accountID string, keys bucket.S3Credentials, err error)
	revoke(ctx context.Context, accountID string, buckets ...string) error
	// incompatible is the code of a grant that conflicts with the account's grant: v1alpha1
	// answers FAILED_PRECONDITION where v1alpha2 answers ALREADY_EXISTS (its sidecar crashes
	// on ALREADY_EXISTS).
	incompatible() codes.Code
}

// cosiWires serves srv's COSI backend on a unix socket until the test ends and returns a client
// of each wire version.
func cosiWires(t *testing.T, srv *s3server.Server) []wire {
	t.Helper()
	conn := drivertest.NewServer(t, plugin.Config{Name: "memorys3.csikit.dev", VendorVersion: "test", Logger: zap.NewNop(),
		COSI: &plugin.COSIConfig{Provisioner: bucketdriver.New(srv), Protocols: []bucket.Protocol{bucket.S3}, MultiBucketAccess: true}}).Conn
	return []wire{v1alpha1Wire{cosi1.NewProvisionerClient(conn)}, v1alpha2Wire{cosi2.NewProvisionerClient(conn)}}
}

type v1alpha1Wire struct{ p cosi1.ProvisionerClient }

func (v1alpha1Wire) name() string             { return "v1alpha1" }
func (v1alpha1Wire) incompatible() codes.Code { return codes.FailedPrecondition }

func (w v1alpha1Wire) create(ctx context.Context, name string) (string, error) {
	r, err := w.p.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: name})
	return r.GetBucketId(), err
}

func (w v1alpha1Wire) remove(ctx context.Context, id string) error {
	_, err := w.p.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: id})
	return err
}

func (w v1alpha1Wire) grant(ctx context.Context, account string, buckets ...string) (string, bucket.S3Credentials, error) {
	if len(buckets) != 1 {
		return "", bucket.S3Credentials{}, errors.New("v1alpha1 grants one bucket per access")
	}
	r, err := w.p.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: buckets[0], Name: account,
		AuthenticationType: cosi1.AuthenticationType_Key})
	s := r.GetCredentials()["s3"].GetSecrets()
	return r.GetAccountId(), bucket.S3Credentials{AccessKeyID: s["accessKeyID"], SecretAccessKey: s["accessSecretKey"]}, err
}

func (w v1alpha1Wire) revoke(ctx context.Context, accountID string, buckets ...string) error {
	if len(buckets) > 1 {
		return errors.New("v1alpha1 revokes one bucket per call")
	}
	req := &cosi1.DriverRevokeBucketAccessRequest{AccountId: accountID}
	if len(buckets) == 1 {
		req.BucketId = buckets[0]
	}
	_, err := w.p.DriverRevokeBucketAccess(ctx, req)
	return err
}

type v1alpha2Wire struct{ p cosi2.ProvisionerClient }

var (
	s3Protocol = &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3}
	keyAuth    = &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}
)

func (v1alpha2Wire) name() string             { return "v1alpha2" }
func (v1alpha2Wire) incompatible() codes.Code { return codes.AlreadyExists }

func (w v1alpha2Wire) create(ctx context.Context, name string) (string, error) {
	r, err := w.p.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: name, Protocols: []*cosi2.ObjectProtocol{s3Protocol}})
	return r.GetBucketId(), err
}

func (w v1alpha2Wire) remove(ctx context.Context, id string) error {
	_, err := w.p.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: id})
	return err
}

func (w v1alpha2Wire) grant(ctx context.Context, account string, buckets ...string) (string, bucket.S3Credentials, error) {
	req := &cosi2.DriverGrantBucketAccessRequest{AccountName: account, Protocol: s3Protocol, AuthenticationType: keyAuth}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, &cosi2.DriverGrantBucketAccessRequest_AccessedBucket{BucketId: b,
			AccessMode: &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}})
	}
	r, err := w.p.DriverGrantBucketAccess(ctx, req)
	s := r.GetCredentials().GetS3()
	return r.GetAccountId(), bucket.S3Credentials{AccessKeyID: s.GetAccessKeyId(), SecretAccessKey: s.GetAccessSecretKey()}, err
}

func (w v1alpha2Wire) revoke(ctx context.Context, accountID string, buckets ...string) error {
	req := &cosi2.DriverRevokeBucketAccessRequest{AccountId: accountID, Protocol: s3Protocol, AuthenticationType: keyAuth}
	for _, b := range buckets {
		req.Buckets = append(req.Buckets, &cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{BucketId: b})
	}
	_, err := w.p.DriverRevokeBucketAccess(ctx, req)
	return err
}

// s3Code is the S3 error code of an aws-sdk-go-v2 error ("" for none).
func s3Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// keyProbe is what one key can do against srv right now.
type keyProbe struct {
	srv  *s3server.Server
	keys bucket.S3Credentials
}

func (k keyProbe) client() *s3.Client {
	return awsClient(k.srv.Endpoint(), k.srv.Region(), &k.keys)
}

// listBuckets answers the S3 error code of ListBuckets ("" when it succeeded): the one request
// that needs no grant, only a key that authenticates.
func (k keyProbe) listBuckets() string {
	_, err := k.client().ListBuckets(context.Background(), &s3.ListBucketsInput{})
	return s3Code(err)
}

// put answers the S3 error code of a PutObject to bucket ("" when it succeeded).
func (k keyProbe) put(bucket string) string {
	_, err := k.client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("probe"),
		Body: strings.NewReader("probe")})
	return s3Code(err)
}
