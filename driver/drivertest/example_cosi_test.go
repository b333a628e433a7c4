package drivertest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// The whole COSI conformance test of a bucket driver: one call, both wire versions. Unlike CSI,
// COSI may be called any number of times in one test binary, so several configurations can be
// proven side by side. In your package the function below is a top-level
// func TestCOSIConformance(t *testing.T); an example cannot be given a *testing.T, so here it is a
// variable and the example has no output to check.
func ExampleCOSI() {
	TestCOSIConformance := func(t *testing.T) {
		backend := memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1") // your bucket backend
		cfg := plugin.Config{
			Name:           "mem-s3.example.com",
			VendorVersion:  "1.0.0",
			COSI:           &plugin.COSIConfig{Provisioner: backend, Protocols: []bucket.Protocol{bucket.S3}},
			CheckResponses: true,
		}
		res := drivertest.COSI(t, cfg, drivertest.COSIOptions{
			// A BucketClass's parameters, and a conflicting set for the ALREADY_EXISTS check.
			BucketParameters:             map[string]string{"tier": "gold"},
			IncompatibleBucketParameters: map[string]string{"tier": "bronze"},
			// Prove the granted keys work and the revoked ones fail; a real driver would
			// sign a request with them (memorys3 lists the bucket with aws-sdk-go-v2).
			CheckCredentials: func(_ context.Context, _ bucket.Protocol, _ bucket.Bucket, creds bucket.Credentials) error {
				if creds.S3 == nil || !backend.KeyLive(creds.S3.AccessKeyID) {
					return errors.New("access denied")
				}
				return nil
			},
		})
		// Failures already failed t. With every option given, no rule should be skipped
		// either (a version the driver does not serve would be, with that reason).
		for rule, reason := range res.Skips {
			t.Errorf("skipped %s: %s", rule, reason)
		}
	}
	_ = TestCOSIConformance
}

// A COSI driver running elsewhere (a container started by the test, a pod's socket) is tested
// through its endpoint, with its debug-level logs for the credential canary.
func ExampleCOSIEndpoint() {
	TestDeployedCOSI := func(t *testing.T) {
		var logs func() string // e.g. read the driver container's log
		drivertest.COSIEndpoint(t, "unix:///var/lib/cosi/cosi.sock", drivertest.COSIOptions{Logs: logs})
	}
	_ = TestDeployedCOSI
}
