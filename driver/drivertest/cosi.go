package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/drivertest/internal/cosisuite"
	"github.com/csikit/csikit/driver/plugin"
)

// COSIOptions tell the COSI suite what it cannot find out from the driver. The zero value runs
// every check that needs no driver-specific knowledge and skips the others, each with the field
// that would enable it.
type COSIOptions struct {
	// BucketParameters are DriverCreateBucket parameters the driver accepts (a BucketClass's).
	BucketParameters map[string]string
	// IncompatibleBucketParameters are parameters the driver accepts too, but that differ from
	// BucketParameters in a way that matters: creating a bucket again under the same name with
	// them must be ALREADY_EXISTS. Nil skips that check.
	IncompatibleBucketParameters map[string]string
	// AccessParameters are DriverGrantBucketAccess parameters the driver accepts (a
	// BucketAccessClass's).
	AccessParameters map[string]string
	// IncompatibleAccessParameters are grant parameters the driver accepts that differ from
	// AccessParameters in a way that matters: a grant repeated under the same account name with
	// them must be ALREADY_EXISTS in v1alpha2 and anything but ALREADY_EXISTS in v1alpha1. The
	// suite always tries another bucket as the incompatible change; these add a second try.
	IncompatibleAccessParameters map[string]string
	// MultiBucketAccess says the driver can put several buckets behind one access
	// (plugin.COSIConfig.MultiBucketAccess). When false, a grant of several buckets must be
	// OUT_OF_RANGE; when true, it must succeed. OUT_OF_RANGE is never right for one bucket.
	MultiBucketAccess bool
	// CheckCredentials, when set, proves that granted credentials really work: it returns nil when
	// creds give access to bucket over protocol, and an error when they do not. The suite calls
	// it after grants (wanting nil) and after the revoke (wanting an error). bucket is what the
	// grant answered (v1alpha1, which answers no bucket info, gives the S3 endpoint and region of
	// its credentials entry and the bucket ID as name). Nil skips that check.
	CheckCredentials func(ctx context.Context, protocol bucket.Protocol, bucket bucket.Bucket, creds bucket.Credentials) error
	// ArmPanic, when set, makes the backend panic once: in its next GrantBucketAccess, after it
	// has minted and stored that account's credentials, so the panic report is somewhere they
	// could leak. The canary then searches the report and the error too. Nil skips that part.
	ArmPanic func()
	// Logs returns everything the driver has logged so far, at debug level, for the credential
	// canary. COSI captures what the library logs itself and adds these (give them when the
	// backend logs through a logger of its own); for COSIEndpoint, nil means log lines are not
	// searched.
	Logs func() string
	// CallTimeout bounds each call the suite makes; zero means 30 seconds.
	CallTimeout time.Duration
}

// COSI runs the COSI conformance suite against a plugin built from cfg, which must have COSI set.
// NewServer serves the plugin until the test ends; what it captures of the plugin's log at debug
// level (beside cfg.Logger when that is set) feeds the credential canary. Each wire version is a
// subtest of t, skipped when the plugin does not serve it, and each rule a subtest of that.
//
// It returns the counts, as CSI does: a spec is one rule of one version, named
// "<version>/<rule>" ("v1alpha2/DriverCreateBucket of one name three times answers the same
// valid bucket"). Every failure also fails t, so most tests ignore the Result; one that wants
// to pin which rules a driver skips, and why, asserts on Skips.
func COSI(t *testing.T, cfg plugin.Config, opts COSIOptions) Result {
	t.Helper()
	endpoint, logs := serveCOSI(t, cfg)
	if backendLogs := opts.Logs; backendLogs != nil {
		opts.Logs = func() string { return logs() + "\n" + backendLogs() }
	} else {
		opts.Logs = logs
	}
	return Result(cosisuite.Run(t, endpoint, cosisuite.Options(opts)))
}

// COSIEndpoint runs the same suite as COSI against a driver that is already running at endpoint,
// "unix:///path/cosi.sock" (COSI_ENDPOINT's form) or any gRPC target, and returns the same
// counts. The canary reads the driver's logs from COSIOptions.Logs.
func COSIEndpoint(t *testing.T, endpoint string, opts COSIOptions) Result {
	t.Helper()
	return Result(cosisuite.Run(t, endpoint, cosisuite.Options(opts)))
}

// serveCOSI serves cfg on a fresh socket until the test ends and returns its endpoint and the
// plugin's captured log.
func serveCOSI(t *testing.T, cfg plugin.Config) (endpoint string, logs func() string) {
	t.Helper()
	if cfg.COSI == nil {
		t.Fatal("drivertest: COSI needs a plugin.Config with COSI set")
	}
	srv := NewServer(t, cfg)
	return srv.Endpoint, srv.Logs
}
