// Command memorys3 is a complete COSI driver with the object store it manages in one process: an
// S3 server (gofakes3 behind csikit's SigV4 verification and per-key authorisation) and the COSI
// driver that creates and deletes its buckets and grants and revokes its keys, served as COSI
// v1alpha1 and v1alpha2 on one socket. It starts with no arguments at all:
//
//	go run ./examples/memorys3
//
// and prints where S3 clients and the COSI sidecar connect. Buckets, objects and keys live in
// memory unless --state-dir names a directory, where they survive a restart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "memorys3:", err)
		os.Exit(1)
	}
}

// defaultEndpoint is the COSI socket with no arguments and no COSI_ENDPOINT. COSI wants a unix
// socket whose name ends in ".sock", in a directory that holds nothing else.
const defaultEndpoint = "unix:///tmp/csikit-memorys3/cosi.sock"

// run starts both servers and serves until ctx ends or a signal arrives. started, when not nil,
// receives the S3 endpoint once both listen (for tests).
func run(ctx context.Context, args []string, out io.Writer, started chan<- string) error {
	fs := flag.NewFlagSet("memorys3", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: defaultEndpoint, EndpointEnv: "COSI_ENDPOINT"})
	var (
		s3Addr     = fs.String("s3-address", "127.0.0.1:9000", "TCP address the S3 server listens on")
		s3Endpoint = fs.String("s3-endpoint", "", "URL clients reach the S3 server at, reported in every grant (default http://<s3-address>)")
		region     = fs.String("region", s3server.DefaultRegion, "S3 region clients sign for")
		stateDir   = fs.String("state-dir", "", "directory where buckets, objects and keys survive a restart; empty keeps them in memory")
		name       = fs.String("driver-name", "memorys3.csikit.dev", "COSI driver name (DNS-1035 labels, at most 63 characters)")
		maxObject  = fs.Int64("max-object-size", s3server.DefaultMaxObjectSize, "largest object, part or completed multipart upload in bytes; larger ones get EntityTooLarge before their body is read")
		maxConns   = fs.Int("s3-max-connections", s3server.DefaultMaxConnections, "most S3 connections served at once; at the limit the connection quiet the longest is closed to make room, else further clients wait")
		idle       = fs.Duration("s3-idle-timeout", s3server.DefaultIdleTimeout, "close an S3 connection on which nothing moved for this long, between requests or within one; also a body's grace before --s3-min-body-rate applies")
		hdrTimeout = fs.Duration("s3-header-timeout", s3server.DefaultHeaderTimeout, "time a client has to send a request's headers")
		maxBuf     = fs.Int64("max-buffered-bytes", s3server.DefaultMaxBufferedBytes, "bytes the S3 server holds in request bodies (and the store's copies of them), parts awaiting completion, listing pages and objects being sent; past it requests get 503 SlowDown; one tenant alone may hold about half, which must hold a body of --max-object-size with its chunk buffer (about four times --max-object-size) and a listing page")
		maxBufTen  = fs.Int64("max-buffered-bytes-per-tenant", 0, "bytes of --max-buffered-bytes the requests of one account may hold (bodies, signed chunks, listing pages, DeleteObjects answers, GET answers), within its fair share of what the others leave; past it they get 503 SlowDown; 0: a quarter of --max-buffered-bytes, at least --max-object-size plus its largest chunk (up to 16 MiB) and at least a listing page (1.25 MiB)")
		minRate    = fs.Int64("s3-min-body-rate", s3server.DefaultMinBodyRate, "slowest rate of a request body in bytes a second: after a grace of --s3-idle-timeout, every --s3-body-rate-interval must bring this rate times the interval, or the connection is closed")
		rateIntvl  = fs.Duration("s3-body-rate-interval", 0, "interval over which --s3-min-body-rate is measured, at most --s3-idle-timeout; 0: 5s, or --s3-idle-timeout if shorter")
		maxParts   = fs.Int64("max-part-bytes", s3server.DefaultMaxPartBytes, "bytes held in the parts of multipart uploads in progress (within --max-buffered-bytes); past it UploadPart gets 503 SlowDown")
		maxPartsPB = fs.Int64("max-part-bytes-per-bucket", 0, "bytes of --max-part-bytes the uploads of one bucket may hold; past it UploadPart gets 503 SlowDown; 0: a quarter of --max-part-bytes, at least --max-object-size plus 1 MiB")
		maxPartsPT = fs.Int64("max-part-bytes-per-tenant", 0, "bytes of --max-part-bytes the parts one account stored may hold, across its buckets, within its fair share of what the others leave; past it UploadPart gets 503 SlowDown; 0: as --max-part-bytes-per-bucket")
		upIdle     = fs.Duration("upload-idle-timeout", s3server.DefaultUploadIdleTimeout, "abort a multipart upload in which no part was stored for this long, giving back its parts")
		maxUps     = fs.Int("max-uploads", s3server.DefaultMaxUploads, "multipart uploads in progress on the server; past it CreateMultipartUpload gets 503 SlowDown")
		maxUpsPB   = fs.Int("max-uploads-per-bucket", s3server.DefaultMaxUploadsPerBucket, "multipart uploads in progress in one bucket; past it CreateMultipartUpload gets 503 SlowDown")
		maxUpsPT   = fs.Int("max-uploads-per-tenant", s3server.DefaultMaxUploadsPerTenant, "multipart uploads in progress one account began, across its buckets, within its fair share of what the others leave; past it CreateMultipartUpload gets 503 SlowDown")
		maxReqsTen = fs.Int("s3-max-requests-per-tenant", 0, "requests of one account in progress at once, within its fair share of what the others leave of --s3-max-connections; past it a request gets 503 SlowDown; 0: a quarter of --s3-max-connections, at least 1")
		maxObjsPB  = fs.Int("max-objects-per-bucket", s3server.DefaultMaxObjectsPerBucket, "objects one bucket may hold; a PUT, copy or completed upload that would make another gets 403 QuotaExceeded")
		maxKeyLen  = fs.Int("max-key-length", 1024, "longest key of a new object in bytes, at most S3's 1024; longer ones get KeyTooLongError (objects stored before it was lowered are still read and deleted)")
	)
	// memorys3 gives each account one key: the bounds were named per key before they were
	// named per tenant, and a deployment may still pass the old names.
	fs.Int64Var(maxBufTen, "max-buffered-bytes-per-key", 0, "deprecated: the same as --max-buffered-bytes-per-tenant")
	fs.IntVar(maxReqsTen, "s3-max-requests-per-key", 0, "deprecated: the same as --s3-max-requests-per-tenant")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := settings.Logger()
	if err != nil {
		return err
	}
	defer logger.Sync() //nolint:errcheck // stderr

	lis, err := net.Listen("tcp", *s3Addr)
	if err != nil {
		return fmt.Errorf("S3 server: %w", err)
	}
	defer lis.Close()
	endpoint := *s3Endpoint
	if endpoint == "" {
		endpoint = "http://" + reachable(lis.Addr().(*net.TCPAddr))
	}
	for _, c := range []struct {
		flag string
		ok   bool
		want string
	}{
		{"--max-object-size", *maxObject > 0, "positive"}, {"--s3-max-connections", *maxConns > 0, "positive"},
		{"--s3-idle-timeout", *idle > 0, "positive"}, {"--s3-header-timeout", *hdrTimeout > 0, "positive"},
		{"--max-buffered-bytes", *maxBuf > 0, "positive"}, {"--s3-min-body-rate", *minRate > 0, "positive"},
		{"--max-part-bytes", *maxParts > 0, "positive"}, {"--upload-idle-timeout", *upIdle > 0, "positive"},
		{"--max-uploads", *maxUps > 0, "positive"}, {"--max-uploads-per-bucket", *maxUpsPB > 0, "positive"},
		{"--max-uploads-per-tenant", *maxUpsPT > 0, "positive"}, {"--max-objects-per-bucket", *maxObjsPB > 0, "positive"},
		{"--max-key-length", *maxKeyLen > 0 && *maxKeyLen <= 1024, "from 1 to 1024"},
		{"--max-buffered-bytes-per-tenant (or --max-buffered-bytes-per-key)", *maxBufTen >= 0, "positive, or 0 for its default"},
		{"--s3-max-requests-per-tenant (or --s3-max-requests-per-key)", *maxReqsTen >= 0, "positive, or 0 for its default"},
		{"--max-part-bytes-per-bucket", *maxPartsPB >= 0, "positive, or 0 for its default"},
		{"--max-part-bytes-per-tenant", *maxPartsPT >= 0, "positive, or 0 for its default"},
		{"--s3-body-rate-interval", *rateIntvl >= 0 && *rateIntvl <= *idle, "at most --s3-idle-timeout, or 0 for its default"},
	} {
		if !c.ok {
			return fmt.Errorf("%s must be %s", c.flag, c.want)
		}
	}
	s3, err := s3server.New(s3server.Config{StateDir: *stateDir, Region: *region, Endpoint: endpoint, Logger: logger.Named("s3"),
		Limits: s3server.Limits{MaxObjectSize: *maxObject, MaxConnections: *maxConns, IdleTimeout: *idle, HeaderTimeout: *hdrTimeout,
			MaxBufferedBytes: *maxBuf, MaxBufferedBytesPerTenant: *maxBufTen, MinBodyRate: *minRate, BodyRateInterval: *rateIntvl,
			MaxPartBytes: *maxParts, MaxPartBytesPerBucket: *maxPartsPB, MaxPartBytesPerTenant: *maxPartsPT, UploadIdleTimeout: *upIdle,
			MaxUploads: *maxUps, MaxUploadsPerBucket: *maxUpsPB, MaxUploadsPerTenant: *maxUpsPT, MaxRequestsPerTenant: *maxReqsTen,
			MaxObjectsPerBucket: *maxObjsPB, MaxKeyLength: *maxKeyLen}})
	if err != nil {
		return err
	}
	defer s3.Close()

	cfg := plugin.Config{
		Name: *name, VendorVersion: version,
		COSI:   &plugin.COSIConfig{Provisioner: bucketdriver.New(s3), Protocols: []bucket.Protocol{bucket.S3}, MultiBucketAccess: true},
		Logger: logger, // the S3 server logs through it too
	}
	flush, err := settings.Apply(ctx, &cfg) // endpoint, diagnostics, tracing; the logger above is kept
	if err != nil {
		return err
	}
	defer flush() // after Run: the spans of the last calls
	d, err := plugin.New(cfg)
	if err != nil {
		return err
	}

	served := make(chan error, 1)
	go func() { served <- s3.Serve(lis) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s3.Shutdown(sctx); err != nil {
			logger.Warn("stopping the S3 server", zap.Error(err))
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("S3 server", zap.Error(err))
		}
	}()

	fmt.Fprintf(out, "S3 endpoint:  %s (region %s, path-style addressing)\nCOSI socket:  %s\n", endpoint, *region, settings.Endpoint)
	if *stateDir == "" {
		fmt.Fprintln(out, "State:        in memory (--state-dir keeps it across restarts)")
	} else {
		fmt.Fprintf(out, "State:        %s\n", *stateDir)
	}
	if started != nil {
		started <- endpoint
	}
	return d.Run(ctx)
}

// version is what DriverGetInfo's sidecar logs show; the example is versioned with the module.
const version = "0.1.0"

// reachable is the address clients use for a listener: the loopback address when it listens on
// every interface.
func reachable(a *net.TCPAddr) string {
	if a.IP == nil || a.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(a.Port))
	}
	return a.String()
}
