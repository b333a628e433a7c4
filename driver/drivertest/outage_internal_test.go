package drivertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// storageSwitch is a backend's storage that can be taken away: while down, every call fails
// with a refused connection, as a client of a stopped daemon does.
type storageSwitch struct{ down atomic.Bool }

func (s *storageSwitch) err() error {
	if !s.down.Load() {
		return nil
	}
	return fmt.Errorf("storage at 127.0.0.1:6789: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
}

func (s *storageSwitch) options() OutageOptions {
	return OutageOptions{
		Down:   func() error { s.down.Store(true); return nil },
		Up:     func() error { s.down.Store(false); return nil },
		Within: 20 * time.Second, CallTimeout: 5 * time.Second,
	}
}

// switchedVolumes is memdriver behind a storageSwitch. goneWhenDown plants the bug the check
// must catch: a delete that cannot reach the storage reports the volume gone.
type switchedVolumes struct {
	*memdriver.Driver
	sw           *storageSwitch
	goneWhenDown bool
}

func (v *switchedVolumes) CreateVolume(ctx context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	if err := v.sw.err(); err != nil {
		return nil, err
	}
	return v.Driver.CreateVolume(ctx, req)
}

func (v *switchedVolumes) DeleteVolume(ctx context.Context, req *driver.DeleteVolumeRequest) error {
	if err := v.sw.err(); err != nil {
		if v.goneWhenDown {
			return fmt.Errorf("volume %q: %w", req.VolumeID, driver.ErrNotFound)
		}
		return err
	}
	return v.Driver.DeleteVolume(ctx, req)
}

func (v *switchedVolumes) Probe(ctx context.Context) (bool, error) {
	if err := v.sw.err(); err != nil {
		return false, err
	}
	return v.Driver.Probe(ctx)
}

// switchedBuckets is memdriver's bucket backend behind a storageSwitch.
type switchedBuckets struct {
	*memdriver.Buckets
	sw *storageSwitch
}

func (b *switchedBuckets) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	if err := b.sw.err(); err != nil {
		return nil, err
	}
	return b.Buckets.CreateBucket(ctx, req)
}

func (b *switchedBuckets) DeleteBucket(ctx context.Context, req *bucket.DeleteBucketRequest) error {
	if err := b.sw.err(); err != nil {
		return err
	}
	return b.Buckets.DeleteBucket(ctx, req)
}

func (b *switchedBuckets) Probe(context.Context) (bool, error) {
	if err := b.sw.err(); err != nil {
		return false, err
	}
	return true, nil
}

// failures is an outageT that records what a check reports.
type failures struct {
	mu   sync.Mutex
	errs []string
}

func (f *failures) Helper()             {}
func (f *failures) Logf(string, ...any) {}
func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func freeHTTPAddr(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return lis.Addr().String()
}

func TestCSIOutagePassesAGoodDriver(t *testing.T) {
	sw := &storageSwitch{}
	v := &switchedVolumes{Driver: memdriver.New(memdriver.Options{}), sw: sw}
	cfg := plugin.Config{Name: "outage.csikit.dev", VendorVersion: "1", Controller: v, HTTPEndpoint: freeHTTPAddr(t)}
	o := sw.options()
	o.ReadyzURL = "http://" + cfg.HTTPEndpoint + "/readyz"
	CSIOutage(t, NewServer(t, cfg).Conn, o)
}

func TestCOSIOutagePassesAGoodDriver(t *testing.T) {
	sw := &storageSwitch{}
	b := &switchedBuckets{Buckets: memdriver.NewBuckets("http://s3.example", "us-east-1"), sw: sw}
	cfg := plugin.Config{Name: "outage.csikit.dev", VendorVersion: "1", HTTPEndpoint: freeHTTPAddr(t),
		COSI: &plugin.COSIConfig{Provisioner: b, Protocols: []bucket.Protocol{bucket.S3}}}
	o := sw.options()
	o.ReadyzURL = "http://" + cfg.HTTPEndpoint + "/readyz"
	COSIOutage(t, NewServer(t, cfg).Conn, o)
}

// TestCSIOutageFailsBadDrivers: the check catches a delete that reports success while the
// storage is away, and a Probe that fails with an error code instead of saying not ready.
func TestCSIOutageFailsBadDrivers(t *testing.T) {
	tests := []struct {
		name   string
		plant  func(v *switchedVolumes, cfg *plugin.Config)
		expect string
	}{
		{"a delete that cannot reach the storage answers OK", func(v *switchedVolumes, _ *plugin.Config) { v.goneWhenDown = true },
			"OK would report a deletion that did not happen"},
		{"a Probe that fails with an error code", func(v *switchedVolumes, cfg *plugin.Config) {
			cfg.Prober = errProber{v.sw}
		}, "want ready=false, not an error code"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sw := &storageSwitch{}
			v := &switchedVolumes{Driver: memdriver.New(memdriver.Options{}), sw: sw}
			cfg := plugin.Config{Name: "outage.csikit.dev", VendorVersion: "1", Controller: v}
			tc.plant(v, &cfg)
			f := &failures{}
			srv := NewServer(t, cfg)
			outage(f, csiOutageCalls(srv.Conn, OutageOptions{}), sw.options())
			if !strings.Contains(strings.Join(f.errs, "\n"), tc.expect) {
				t.Errorf("CSIOutage reported %q, want a failure containing %q", f.errs, tc.expect)
			}
		})
	}
}

// errProber fails with a plain error while the storage is down, which the plugin answers
// FAILED_PRECONDITION ("not healthy"): the wrong answer for an outage.
type errProber struct{ sw *storageSwitch }

func (p errProber) Probe(context.Context) (bool, error) {
	if p.sw.down.Load() {
		return false, errors.New("storage broken")
	}
	return true, nil
}
