package s3server

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestSpoolIsChargedWhatItHolds: a spool takes chunks as the bytes arrive, none larger than
// what the body may still carry, and is charged their sizes: spoolCharge(n), less than 512 KiB
// over n, and n exactly for a power of two from 64 KiB. A body that ends where it must takes
// no chunk more to find its end, a byte more is errTooLong, the bytes copied out are the
// body's, and releasing the spool gives every chunk back.
func TestSpoolIsChargedWhatItHolds(t *testing.T) {
	for _, n := range []int64{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20, 1<<20 + 1, 3<<20 + 5, 16 << 20} {
		b := &budget{limit: 1 << 30}
		sp := spool{budget: b}
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7 / 3)
		}
		if err := sp.fill(bytes.NewReader(body), n); err != nil {
			t.Fatalf("a body of %d bytes: %v", n, err)
		}
		if sp.charged != spoolCharge(n) || b.used.Load() != sp.charged {
			t.Errorf("a body of %d bytes is charged %d (budget %d), spoolCharge says %d", n, sp.charged, b.used.Load(), spoolCharge(n))
		}
		if over := sp.charged - n; over < 0 || over >= 512<<10 {
			t.Errorf("a body of %d bytes is charged %d", n, sp.charged)
		}
		if n >= 64<<10 && n&(n-1) == 0 && sp.charged != n {
			t.Errorf("a body of %d bytes (a power of two) is charged %d", n, sp.charged)
		}
		got := make([]byte, n)
		sp.copyTo(got)
		if !bytes.Equal(got, body) {
			t.Fatalf("a body of %d bytes copied out of the spool differs", n)
		}
		sp.release()
		if used := b.used.Load(); used != 0 {
			t.Errorf("a released body of %d bytes still holds %d of the budget", n, used)
		}

		long := spool{budget: b}
		if err := long.fill(bytes.NewReader(make([]byte, n+1)), n); !errors.Is(err, errTooLong) {
			t.Errorf("a body of %d bytes with a limit of %d: %v, want errTooLong", n+1, n, err)
		}
		if long.charged != spoolCharge(n) {
			t.Errorf("a body one byte over %d took %d of the budget, want %d", n, long.charged, spoolCharge(n))
		}
		long.release()
		if used := b.used.Load(); used != 0 {
			t.Errorf("%d bytes of the budget still held after release", used)
		}
	}
}

// TestLimitsDefaultsAndBounds: zero fields take their defaults, the shares of one tenant and
// one bucket derive from the server-wide bounds (never below what one body or one object of
// the largest size needs), and limits that could not serve such a body are refused.
func TestLimitsDefaultsAndBounds(t *testing.T) {
	const mib = 1 << 20
	d, err := Limits{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if d.MaxBufferedBytesPerTenant != DefaultMaxObjectSize+16*mib || d.MaxPartBytesPerBucket != DefaultMaxObjectSize+mib ||
		d.MaxPartBytesPerTenant != DefaultMaxObjectSize+mib || d.MaxUploadsPerTenant != DefaultMaxUploadsPerTenant ||
		d.MaxRequestsPerTenant != DefaultMaxConnections/4 || d.MinBodyRate != DefaultMinBodyRate || d.UploadIdleTimeout != time.Hour ||
		d.MaxObjectsPerBucket != DefaultMaxObjectsPerBucket || d.MaxKeyLength != 1024 || d.BodyRateInterval != DefaultBodyRateInterval {
		t.Errorf("defaults: %+v", d)
	}
	for _, tc := range []struct {
		rule string
		in   Limits
		ok   bool
		want func(Limits) bool
	}{
		// A tenant alone holds about half the budget (fair), which must hold one body of the
		// largest size with its chunk buffer (2 MiB here) to its last 64 KiB step.
		{"a budget whose half holds one body of the largest size and its chunk buffer", Limits{MaxObjectSize: mib, MaxBufferedBytes: 3*mib + 64<<10}, true,
			func(l Limits) bool { return l.MaxBufferedBytesPerTenant == 2*mib }},
		{"a budget one byte short of that", Limits{MaxObjectSize: mib, MaxBufferedBytes: 3*mib + 64<<10 - 1}, false, nil},
		{"a budget whose half holds a listing page, with small objects", Limits{MaxObjectSize: 100 << 10, MaxBufferedBytes: 2*maxPageCharge + 64<<10 - byteFloor}, true,
			func(l Limits) bool { return l.MaxBufferedBytesPerTenant == maxPageCharge }},
		{"a budget one byte short of that", Limits{MaxObjectSize: 100 << 10, MaxBufferedBytes: 2*maxPageCharge + 64<<10 - byteFloor - 1}, false, nil},
		{"a tenant's share of a quarter of a large budget", Limits{MaxObjectSize: mib, MaxBufferedBytes: 64 * mib}, true,
			func(l Limits) bool { return l.MaxBufferedBytesPerTenant == 16*mib }},
		{"a tenant's share below one body and its chunk buffer", Limits{MaxObjectSize: mib, MaxBufferedBytes: 64 * mib, MaxBufferedBytesPerTenant: 2*mib - 1}, false, nil},
		{"a tenant's share above the budget", Limits{MaxObjectSize: mib, MaxBufferedBytes: 64 * mib, MaxBufferedBytesPerTenant: 64*mib + 1}, false, nil},
		{"a bucket's and a tenant's share of a small pool is the pool", Limits{MaxPartBytes: mib}, true,
			func(l Limits) bool { return l.MaxPartBytesPerBucket == mib && l.MaxPartBytesPerTenant == mib }},
		{"a bucket's share above the pool", Limits{MaxPartBytes: mib, MaxPartBytesPerBucket: mib + 1}, false, nil},
		{"a tenant's share above the pool", Limits{MaxPartBytes: mib, MaxPartBytesPerTenant: mib + 1}, false, nil},
		{"a tenant's requests: a quarter of the connections, at least one", Limits{MaxConnections: 3}, true,
			func(l Limits) bool { return l.MaxRequestsPerTenant == 1 }},
		{"the uploads of a bucket and a tenant no more than the server's", Limits{MaxUploads: 12}, true,
			func(l Limits) bool { return l.MaxUploadsPerBucket == 12 && l.MaxUploadsPerTenant == 12 }},
		{"a key length within S3's", Limits{MaxKeyLength: 1024}, true, nil},
		{"a rate interval of an idle timeout shorter than the default", Limits{IdleTimeout: time.Second}, true,
			func(l Limits) bool { return l.BodyRateInterval == time.Second }},
		{"a rate interval longer than the idle timeout", Limits{IdleTimeout: time.Second, BodyRateInterval: 2 * time.Second}, false, nil},
		{"a key length above S3's", Limits{MaxKeyLength: 1025}, false, nil},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			got, err := tc.in.withDefaults()
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && !errors.Is(err, ErrInvalidArgument):
				t.Fatalf("accepted (%v) as %+v", err, got)
			case tc.want != nil && !tc.want(got):
				t.Fatalf("got %+v", got)
			}
		})
	}
}
