// Command rgw is a COSI driver on Ceph's object gateway (RGW): buckets are RGW buckets, and a
// grant is an RGW user with its own S3 key and a bucket-policy statement for the requested mode
// (read-write, read-only, write-only), served as COSI v1alpha1 and v1alpha2 on one socket. See
// package rgwdriver for what lives where in RGW.
//
// It needs RGW's URL and an RGW user's S3 key with the admin caps "users=*;buckets=*", from files
// (a Kubernetes Secret mounted as a volume), never from the command line:
//
//	rgw --rgw-endpoint http://rgw.example:8080 \
//	    --admin-access-key-file /etc/rgw/access-key --admin-secret-key-file /etc/rgw/secret-key
//
// (with --rgw-ca-file for an https endpoint whose certificate a private CA signed), or, against
// the one-node Ceph of internal/cephtest, from the cluster.env it writes:
//
//	bash internal/cephtest/ceph-up.sh /tmp/csikit-ceph
//	go run ./examples/rgw --rgw-config /tmp/csikit-ceph/cluster.env
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, nil); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed
		}
		fmt.Fprintln(os.Stderr, "rgw:", err)
		os.Exit(1)
	}
}

// defaultEndpoint is the COSI socket with no --endpoint and no COSI_ENDPOINT.
const defaultEndpoint = "unix:///tmp/csikit-rgw/cosi.sock"

// version is what DriverGetInfo's sidecar logs show; the example is versioned with the module.
const version = "0.1.0"

// run serves until ctx ends or a signal arrives. started, when not nil, is closed once the
// configuration is read and the plugin built (for tests).
func run(ctx context.Context, args []string, out io.Writer, started chan<- struct{}) error {
	fs := flag.NewFlagSet("rgw", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: defaultEndpoint, EndpointEnv: "COSI_ENDPOINT"})
	var (
		endpoint   = fs.String("rgw-endpoint", "", "RGW's URL (http://host:port): S3 at its root, the admin ops API under /admin; reported to clients in every grant")
		accessFile = fs.String("admin-access-key-file", "", "file holding the access key ID of an RGW user with the caps users=*;buckets=*")
		secretFile = fs.String("admin-secret-key-file", "", "file holding that user's secret access key")
		caFile     = fs.String("rgw-ca-file", "", "PEM file of the CA certificates that sign RGW's https certificate, when the system's do not")
		config     = fs.String("rgw-config", "", "file of shell assignments RGW_ENDPOINT, RGW_ACCESS_KEY and RGW_SECRET_KEY (the cluster.env ceph-up.sh writes); --rgw-endpoint, --admin-access-key-file and --admin-secret-key-file win over it")
		region     = fs.String("region", rgwdriver.DefaultRegion, "S3 region reported to clients (RGW takes signatures for any)")
		owner      = fs.String("owner-uid", rgwdriver.DefaultOwnerUID, "RGW user that creates and owns the driver's buckets; made on first use, and must belong to this driver alone")
		name       = fs.String("driver-name", "rgw.csikit.dev", "COSI driver name (DNS-1035 labels, at most 63 characters)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := rgwConfig(*config, *endpoint, *accessFile, *secretFile)
	if err != nil {
		return err
	}
	cfg.Region, cfg.OwnerUID = *region, *owner
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			return fmt.Errorf("--rgw-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--rgw-ca-file %s: no PEM certificate in it", *caFile)
		}
		cfg.HTTPClient = rgwdriver.NewHTTPClient(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	}
	backend, err := rgwdriver.New(cfg)
	if err != nil {
		return err
	}
	pcfg := plugin.Config{Name: *name, VendorVersion: version,
		COSI: &plugin.COSIConfig{Provisioner: backend, Protocols: []bucket.Protocol{bucket.S3}, MultiBucketAccess: true}}
	flush, err := settings.Apply(ctx, &pcfg)
	if err != nil {
		return err
	}
	defer flush()
	d, err := plugin.New(pcfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "RGW:          %s (region %s, bucket owner %s)\nCOSI socket:  %s\n", cfg.Endpoint, cfg.Region, cfg.OwnerUID, settings.Endpoint)
	if started != nil {
		close(started)
	}
	stop := closeBuckets(ctx, backend, pcfg.Logger)
	defer stop()
	return d.Run(ctx)
}

// Waits between the attempts of closeBuckets.
const (
	closeRetryFirst = time.Second
	closeRetryMax   = time.Minute
)

// closeBuckets runs backend.CloseBuckets beside the driver until it succeeds, waiting longer
// after each fault, so that buckets an earlier version left open are closed even if RGW is down
// when the driver starts (which must not keep it from serving). stop ends it and waits for it.
func closeBuckets(ctx context.Context, backend *rgwdriver.Backend, logger *zap.Logger) (stop func()) {
	if logger == nil {
		logger = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := closeRetryFirst
		for {
			err := backend.CloseBuckets(ctx)
			if err == nil {
				logger.Info("every bucket of the driver is closed to everyone but its grants")
				return
			}
			if ctx.Err() != nil {
				return
			}
			logger.Warn("closing the driver's buckets; retrying", zap.Error(err), zap.Duration("in", wait))
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			wait = min(2*wait, closeRetryMax)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// rgwConfig reads the endpoint and admin key from the config file, then the flags.
func rgwConfig(configFile, endpoint, accessFile, secretFile string) (rgwdriver.Config, error) {
	var cfg rgwdriver.Config
	if configFile != "" {
		f, err := os.Open(configFile)
		if err != nil {
			return cfg, fmt.Errorf("--rgw-config: %w", err)
		}
		env, err := parseEnvFile(f)
		f.Close()
		if err != nil {
			return cfg, fmt.Errorf("--rgw-config %s: %w", configFile, err)
		}
		cfg.Endpoint = env["RGW_ENDPOINT"]
		cfg.AdminAccessKey, cfg.AdminSecretKey = rgwdriver.Secret(env["RGW_ACCESS_KEY"]), rgwdriver.Secret(env["RGW_SECRET_KEY"])
	}
	if endpoint != "" {
		cfg.Endpoint = endpoint
	}
	for _, f := range []struct {
		flag, path string
		into       *rgwdriver.Secret
	}{{"--admin-access-key-file", accessFile, &cfg.AdminAccessKey}, {"--admin-secret-key-file", secretFile, &cfg.AdminSecretKey}} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.into = rgwdriver.Secret(strings.TrimSpace(string(b)))
	}
	if cfg.Endpoint == "" || cfg.AdminAccessKey == "" || cfg.AdminSecretKey == "" {
		return cfg, errors.New("RGW's endpoint and an admin key are required: --rgw-endpoint, --admin-access-key-file and " +
			"--admin-secret-key-file, or --rgw-config")
	}
	return cfg, nil
}
