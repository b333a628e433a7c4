package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// started runs memorys3 as main does, until the test ends or stop is called, and returns the
// S3 endpoint and a COSI connection.
func started(t *testing.T, args ...string) (endpoint string, conn *grpc.ClientConn, out *bytes.Buffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &bytes.Buffer{}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, out, ready) }()
	select {
	case endpoint = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("memorys3 stopped at start: %v", err)
	}
	sock := ""
	for i, a := range args {
		if a == "--endpoint" {
			sock = args[i+1]
		}
	}
	// The socket appears when the driver listens, a moment after the S3 server: calls wait for it.
	conn, err := grpc.NewClient(sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("memorys3 exited with %v", err)
		}
	}
	t.Cleanup(stop)
	return endpoint, conn, out, stop
}

func client(endpoint string, keyID, secret string) *s3.Client {
	return s3.New(s3.Options{
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(endpoint),
		UsePathStyle:               true,
		Retryer:                    aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}, nil
		}),
	})
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// captureStderr sends what the process writes to os.Stderr from now until the test ends to a
// file, and returns a reader of it. memorys3 logs there: its logger opens os.Stderr as run
// starts.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = f
	t.Cleanup(func() {
		os.Stderr = saved
		f.Close()
	})
	return func() string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// TestMemoryS3EndToEnd drives the binary as the COSI sidecars and an application would: buckets
// and keys through the COSI socket (both versions), objects through S3 with the granted keys;
// with --state-dir everything survives a restart, and a revoked key is refused at once. No
// secret key reaches its output or its log.
func TestMemoryS3EndToEnd(t *testing.T) {
	logs := captureStderr(t)
	dir := t.TempDir()
	args := []string{"--endpoint", "unix://" + filepath.Join(dir, "sock", "cosi.sock"), "--s3-address", freePort(t),
		"--state-dir", filepath.Join(dir, "state"), "--log-level", "debug"}
	endpoint, conn, out, stop := started(t, args...)
	if !strings.Contains(out.String(), endpoint) || !strings.Contains(out.String(), "cosi.sock") {
		t.Errorf("start-up output does not say where to connect:\n%s", out)
	}
	ctx := context.Background()
	p2 := cosi2.NewProvisionerClient(conn)
	b, err := p2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "bc-e2e",
		Protocols: []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_S3}}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if got := b.GetProtocols().GetS3().GetEndpoint(); got != endpoint {
		t.Errorf("bucket info endpoint %q, want %q", got, endpoint)
	}
	grant := &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-e2e", Protocol: &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3},
		AuthenticationType: &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY},
		Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: b.GetBucketId(),
			AccessMode: &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}}}}
	a, err := p2.DriverGrantBucketAccess(ctx, grant)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	creds := a.GetCredentials().GetS3()
	c := client(endpoint, creds.GetAccessKeyId(), creds.GetAccessSecretKey())
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b.GetBucketId()), Key: aws.String("hello"),
		Body: strings.NewReader("kept across restarts")}); err != nil {
		t.Fatalf("put with granted keys: %v", err)
	}
	// v1alpha1's sidecar gets its one "s3" entry, whose keys work too (read-write).
	a1, err := cosi1.NewProvisionerClient(conn).DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{
		BucketId: b.GetBucketId(), Name: "ba-v1", AuthenticationType: cosi1.AuthenticationType_Key})
	if err != nil {
		t.Fatalf("v1alpha1 grant: %v", err)
	}
	s := a1.GetCredentials()["s3"].GetSecrets()
	if _, err := client(s["endpoint"], s["accessKeyID"], s["accessSecretKey"]).HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(b.GetBucketId()), Key: aws.String("hello")}); err != nil {
		t.Errorf("head with v1alpha1 keys: %v", err)
	}
	// A request signed with the granted key ID and another secret is refused, and the refusal
	// logged at debug level; so are the grants' answers, which carry the secrets: the log
	// this test reads must hold both, or a secret logged there would go unseen.
	if _, err := client(endpoint, creds.GetAccessKeyId(), "not-"+creds.GetAccessSecretKey()).HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(b.GetBucketId()), Key: aws.String("hello")}); err == nil {
		t.Fatal("a request signed with the wrong secret was accepted")
	}
	for _, line := range []string{`"code":"SignatureDoesNotMatch"`, `"msg":"response","cosi_version":"v1alpha2","method":"DriverGrantBucketAccess"`} {
		if !strings.Contains(logs(), line) {
			t.Fatalf("the log holds no %s: it is not where this test looks\n%s", line, logs())
		}
	}
	for _, secret := range []string{creds.GetAccessSecretKey(), s["accessSecretKey"]} {
		if strings.Contains(out.String(), secret) {
			t.Error("a secret key reached memorys3's output")
		}
		if strings.Contains(logs(), secret) {
			t.Error("a secret key reached memorys3's log")
		}
	}
	stop()

	// Restart on the same state: the object is there, and the same grant answers the same keys.
	endpoint, conn, _, _ = started(t, args...)
	p2 = cosi2.NewProvisionerClient(conn)
	again, err := p2.DriverGrantBucketAccess(ctx, grant)
	if err != nil {
		t.Fatalf("grant after restart: %v", err)
	}
	if again.GetAccountId() != a.GetAccountId() || again.GetCredentials().GetS3().GetAccessSecretKey() != creds.GetAccessSecretKey() {
		t.Error("a grant after a restart answered other keys")
	}
	c = client(endpoint, creds.GetAccessKeyId(), creds.GetAccessSecretKey())
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.GetBucketId()), Key: aws.String("hello")})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(body) != "kept across restarts" {
		t.Errorf("object after restart = %q", body)
	}
	if _, err := p2.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: a.GetAccountId(),
		Protocol: grant.GetProtocol(), AuthenticationType: grant.GetAuthenticationType(),
		Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: b.GetBucketId()}}}); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.GetBucketId()), Key: aws.String("hello")}); errorCode(err) != "InvalidAccessKeyId" {
		t.Errorf("get with revoked keys: %v, want InvalidAccessKeyId", err)
	}
	if strings.Contains(logs(), creds.GetAccessSecretKey()) {
		t.Error("a secret key reached memorys3's log after the restart")
	}
}

// TestLimitFlagsMustBePositive: every limit flag is refused at zero or below, except those
// whose 0 derives the limit from the others (and which are refused below zero).
func TestLimitFlagsMustBePositive(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ flag, value string }{
		{"--max-object-size", "0"}, {"--s3-max-connections", "0"}, {"--s3-idle-timeout", "0s"}, {"--s3-header-timeout", "0s"},
		{"--max-buffered-bytes", "0"}, {"--s3-min-body-rate", "0"}, {"--max-part-bytes", "0"}, {"--upload-idle-timeout", "0s"},
		{"--max-uploads", "0"}, {"--max-uploads-per-bucket", "0"}, {"--max-uploads-per-tenant", "0"}, {"--max-objects-per-bucket", "0"},
		{"--max-key-length", "0"}, {"--max-key-length", "1025"},
		{"--s3-body-rate-interval", "-1s"}, {"--s3-body-rate-interval", "31s"},
		{"--max-buffered-bytes-per-tenant", "-1"}, {"--max-part-bytes-per-bucket", "-1"}, {"--max-part-bytes-per-tenant", "-1"},
		{"--s3-max-requests-per-tenant", "-1"}, {"--max-buffered-bytes-per-key", "-1"}, {"--s3-max-requests-per-key", "-1"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			err := run(context.Background(), []string{"--endpoint", "unix://" + filepath.Join(dir, "cosi.sock"), "--s3-address", freePort(t),
				tc.flag, tc.value}, io.Discard, nil)
			if err == nil || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("%s %s: %v, want an error naming the flag", tc.flag, tc.value, err)
			}
		})
	}
}
