package bucketdriver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

func s3Config(endpoint string) s3server.Config { return s3server.Config{Endpoint: endpoint} }

// newS3 starts an S3 server with cfg, closed when the test ends.
func newS3(t testing.TB, cfg s3server.Config) *s3server.Server {
	t.Helper()
	srv, err := s3server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// s3Fixture is an S3 server on a loopback port, as memorys3 runs it.
func s3Fixture(t *testing.T) *s3server.Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newS3(t, s3Config("http://"+lis.Addr().String()))
	serveS3(t, lis, srv)
	return srv
}

// awsClient is aws-sdk-go-v2 with its default checksums, path-style, no retries (a refusal is
// reported at once).
func awsClient(endpoint, region string, c *bucket.S3Credentials) *s3.Client {
	return s3.New(s3.Options{
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
		Region:                     region,
		BaseEndpoint:               aws.String(endpoint),
		UsePathStyle:               true,
		Retryer:                    aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
	})
}

// putAndGet proves a key can write and read an object in the bucket the grant describes.
func putAndGet(ctx context.Context, b bucket.Bucket, c bucket.Credentials) error {
	if b.S3 == nil || c.S3 == nil {
		return fmt.Errorf("no S3 info or keys")
	}
	cl := awsClient(b.S3.Endpoint, b.S3.Region, c.S3)
	body := []byte("conformance object")
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.ID), Key: aws.String("probe"), Body: bytes.NewReader(body)}); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.ID), Key: aws.String("probe")})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	defer out.Body.Close()
	got, err := io.ReadAll(out.Body)
	if err != nil || !bytes.Equal(got, body) {
		return fmt.Errorf("get returned other bytes (%v)", err)
	}
	return nil
}

// TestCOSIConformance runs csikit's COSI suite against memorys3, both wire versions, with granted
// keys proven by a real S3 client: they put and get, and fail once revoked.
func TestCOSIConformance(t *testing.T) {
	srv := s3Fixture(t)
	drivertest.COSI(t, plugin.Config{Name: "memorys3.csikit.dev", VendorVersion: "test",
		COSI: &plugin.COSIConfig{Provisioner: bucketdriver.New(srv), Protocols: []bucket.Protocol{bucket.S3}, MultiBucketAccess: true}},
		drivertest.COSIOptions{
			MultiBucketAccess: true,
			CheckCredentials: func(ctx context.Context, _ bucket.Protocol, b bucket.Bucket, c bucket.Credentials) error {
				return putAndGet(ctx, b, c)
			},
		})
}

func TestS3Names(t *testing.T) {
	for _, tc := range []struct {
		cosi, want string
	}{
		{"bc-2f1a9c3e-8d7b-4c1e-9f0a-1b2c3d4e5f60", "bc-2f1a9c3e-8d7b-4c1e-9f0a-1b2c3d4e5f60"},
		{"bucketclaim.with.dots", "bucketclaim.with.dots"},
		// The prefix of hashed names is theirs alone: a valid S3 name with it is hashed too.
		{"cosi-7fe1ee2e0ab0bd14d4d5ab5e53432a4e", hashedName("cosi-7fe1ee2e0ab0bd14d4d5ab5e53432a4e")},
	} {
		if got := bucketdriver.S3Name(tc.cosi); got != tc.want {
			t.Errorf("S3Name(%q) = %q, want %q", tc.cosi, got, tc.want)
		}
	}
	long := strings.Repeat("a", 64)
	got := bucketdriver.S3Name(long)
	if got == long || !strings.HasPrefix(got, "cosi-") || len(got) > 63 || got != bucketdriver.S3Name(long) {
		t.Errorf("S3Name of a 64-character name = %q: want a stable cosi-<hash> of at most 63 characters", got)
	}
}
