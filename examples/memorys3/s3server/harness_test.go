package s3server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// fakeClock is the server's clock: real time plus an offset the test moves, so clients
// (which sign with the real clock) can be made to look early, late or expired without
// sleeping.
type fakeClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

type fixture struct {
	t     testing.TB
	srv   *Server
	hs    *httptest.Server
	clock *fakeClock
	tls   bool

	mu    sync.Mutex
	forms map[string]int // x-amz-content-sha256 forms of the PUT requests seen, hex hashes as "hex"
}

// sawForm says whether a PUT arrived with the given payload form.
func (f *fixture) sawForm(form string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forms[form] > 0
}

func (f *fixture) record(r *http.Request) {
	if r.Method != http.MethodPut {
		return
	}
	form := r.Header.Get("X-Amz-Content-Sha256")
	if len(form) == 64 {
		form = "hex"
	}
	if strings.Contains(r.URL.RawQuery, "X-Amz-Signature=") {
		form = "presigned"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forms[form]++
}

// newFixture serves a fresh Server over HTTP (tls false) or HTTPS (tls true): aws-sdk-go-v2
// and minio-go pick their payload forms by scheme, so both matter.
func newFixture(t testing.TB, tls bool, cfg Config) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: &fakeClock{}, tls: tls, forms: map[string]int{}}
	if cfg.Now == nil {
		cfg.Now = f.clock.Now
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.srv = srv
	f.hs = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.record(r)
		srv.ServeHTTP(w, r)
	}))
	if tls {
		f.hs.StartTLS()
	} else {
		f.hs.Start()
	}
	t.Cleanup(func() {
		f.hs.Close()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// bucketWithAccount creates a bucket and grants an account on it with the mode.
func (f *fixture) bucketWithAccount(bucket, account string, mode Mode) Credentials {
	f.t.Helper()
	ctx := context.Background()
	if err := f.srv.CreateBucket(ctx, bucket); err != nil {
		f.t.Fatalf("CreateBucket(%s): %v", bucket, err)
	}
	acc, err := f.srv.GrantAccess(ctx, account, map[string]Mode{bucket: mode})
	if err != nil {
		f.t.Fatalf("GrantAccess(%s): %v", account, err)
	}
	return acc.Credentials
}

// awsClient is aws-sdk-go-v2's S3 client in its default configuration (default checksums,
// default signing), pointed at the fixture with path-style addressing. Retries are off so a
// refusal is reported at once instead of after backoff sleeps.
//
// The two checksum settings are what config.LoadDefaultConfig resolves when nothing is
// configured (WhenSupported); s3.New on bare Options would leave them unset, which sends no
// checksum at all and would test less than real clients send.
func (f *fixture) awsClient(c Credentials, opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
		Region:                     DefaultRegion,
		BaseEndpoint:               aws.String(f.hs.URL),
		UsePathStyle:               true,
		HTTPClient:                 f.hs.Client(),
		Retryer:                    aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
	}, opts...)
}

// minioClient is minio-go with path-style addressing; trailing enables its trailer checksums.
func (f *fixture) minioClient(c Credentials, trailing bool) *minio.Client {
	f.t.Helper()
	mc, err := minio.New(f.hs.Listener.Addr().String(), &minio.Options{
		Creds:           credentials.NewStaticV4(c.AccessKeyID, c.SecretAccessKey, ""),
		Secure:          f.tls,
		Transport:       f.hs.Client().Transport,
		Region:          DefaultRegion,
		BucketLookup:    minio.BucketLookupPath,
		TrailingHeaders: trailing,
		MaxRetries:      1,
	})
	if err != nil {
		f.t.Fatalf("minio.New: %v", err)
	}
	return mc
}

// apiCode is the S3 error code of an aws-sdk-go-v2 error ("" if none).
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// minioCode is the S3 error code of a minio-go error.
func minioCode(err error) string {
	return minio.ToErrorResponse(err).Code
}

// httpStatus is the HTTP status of an aws-sdk-go-v2 error (0 if none).
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

var _ http.Handler = (*Server)(nil)
