// Package cosisuite is the COSI conformance suite behind drivertest.COSI.
//
// It runs plain subtests, one per wire version and rule.
// drivertest owns the public types. Options and Result here have exactly the fields of
// drivertest.COSIOptions and drivertest.Result, so drivertest converts between them, and a field
// added to one side only fails to compile there.
package cosisuite

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver/bucket"
)

// Options are drivertest.COSIOptions, field for field; see there for what each one means.
type Options struct {
	BucketParameters             map[string]string
	IncompatibleBucketParameters map[string]string
	AccessParameters             map[string]string
	IncompatibleAccessParameters map[string]string
	MultiBucketAccess            bool
	CheckCredentials             func(ctx context.Context, protocol bucket.Protocol, bucket bucket.Bucket, creds bucket.Credentials) error
	ArmPanic                     func()
	Logs                         func() string
	CallTimeout                  time.Duration
}

// Result is drivertest.Result, field for field: the counts of one run, by spec
// ("<version>/<rule>").
type Result struct {
	Ran, Passed, Skipped, Failed int
	Skips                        map[string]string
	Failures                     map[string]string
}

// Run runs the suite against the driver at endpoint, as subtests of t, with every message t
// prints scrubbed of the credentials the suite has seen.
func Run(t *testing.T, endpoint string, opts Options) Result {
	t.Helper()
	return runCOSI(newTestReporter(t), endpoint, opts)
}

// dialCOSI connects to endpoint with the recorder's interceptor, so every call the suite makes is
// seen by the terminal-code table and the canary.
func dialCOSI(endpoint string, rec *cosiRecorder) (*grpc.ClientConn, error) {
	target := endpoint
	if strings.HasPrefix(endpoint, "/") {
		target = "unix://" + endpoint
	}
	return grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(rec.unary))
}

// callTimeout is the bound of one call.
func (o *Options) callTimeout() time.Duration {
	if o.CallTimeout > 0 {
		return o.CallTimeout
	}
	return 30 * time.Second
}
