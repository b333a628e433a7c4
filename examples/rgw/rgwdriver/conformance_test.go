package rgwdriver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/zap"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/drivertest"
)

// TestCOSIConformance runs csikit's COSI suite, both wire versions, against the driver on the
// live RGW, with the granted keys proven on RGW itself by aws-sdk-go-v2 (they write and read
// back an object) and refused after the revoke.
func TestCOSIConformance(t *testing.T) {
	b, _ := newBackend(t)
	res := drivertest.COSI(t, pluginConfig(b, zap.NewNop()), drivertest.COSIOptions{
		MultiBucketAccess: true,
		CheckCredentials: func(ctx context.Context, p bucket.Protocol, bk bucket.Bucket, creds bucket.Credentials) error {
			if p != bucket.S3 || creds.S3 == nil || bk.S3 == nil {
				return fmt.Errorf("want S3 credentials and bucket info, got %v and %+v", creds, bk)
			}
			c := s3As(bk.S3.Endpoint, *creds.S3)
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bk.ID), Key: aws.String("conformance"),
				Body: strings.NewReader("x")}); err != nil {
				return err
			}
			out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk.ID), Key: aws.String("conformance")})
			if err != nil {
				return err
			}
			return out.Body.Close()
		},
	})
	t.Logf("COSI suite: %d ran, %d passed, %d skipped, %d failed", res.Ran, res.Passed, res.Skipped, res.Failed)
	for spec, why := range res.Skips {
		t.Logf("skipped %s: %s", spec, why)
	}
}
