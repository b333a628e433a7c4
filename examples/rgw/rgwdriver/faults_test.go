package rgwdriver_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
	"github.com/csikit/csikit/internal/cephtest"
)

// probe asks b's Probe with the one-second bound /healthz gives it.
func probe(t *testing.T, b *rgwdriver.Backend) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ready, err := b.Probe(ctx)
	if err != nil {
		t.Errorf("Probe: %v, want no error (not ready is not unhealthy)", err)
	}
	return ready
}

// TestRGWDown stops RGW, then every daemon, under a driver that keeps running: each call answers
// UNAVAILABLE (which the sidecars retry), never a final code, and Probe says not ready; once the
// daemons are back the same driver serves every call again and Probe says ready.
func TestRGWDown(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bk, err := w.create(ctx, "bc-faults")
	if err != nil {
		t.Fatal(err)
	}
	acct, _, err := w.grant(ctx, "ba-faults", map[string]cosi2.AccessMode_Mode{bk: rw})
	if err != nil {
		t.Fatal(err)
	}
	if !probe(t, b) {
		t.Fatal("not ready with RGW up")
	}
	for _, stop := range []struct {
		name    string
		daemons []string
	}{{"rgw", []string{cephtest.RGWDaemon}}, {"all", nil}, {"osd", []string{cephtest.OSD}}} {
		t.Run(stop.name, func(t *testing.T) {
			if err := c.StopDaemons(ctx, stop.daemons...); err != nil {
				t.Fatal(err)
			}
			restarted := false
			defer func() {
				if !restarted {
					if err := c.StartDaemons(context.Background()); err != nil {
						t.Errorf("restarting the daemons: %v", err)
					}
				}
			}()
			if probe(t, b) {
				t.Error("Probe says ready with RGW down")
			}
			calls := map[string]func(ctx context.Context) error{
				"create": func(ctx context.Context) error { _, err := w.create(ctx, "bc-faults-new"); return err },
				"get": func(ctx context.Context) error {
					_, err := w.p.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: bk,
						Protocols: []*cosi2.ObjectProtocol{s3Protocol}})
					return err
				},
				"grant": func(ctx context.Context) error {
					_, _, err := w.grant(ctx, "ba-faults-new", map[string]cosi2.AccessMode_Mode{bk: ro})
					return err
				},
				"revoke": func(ctx context.Context) error { return w.revoke(ctx, acct, bk) },
				"delete": func(ctx context.Context) error { return w.remove(ctx, bk) },
			}
			for name, call := range calls {
				// A sidecar's call has a deadline; with the OSD down RGW hangs rather than fails,
				// and the deadline (not a final code) is the answer then.
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				start := time.Now()
				err := call(cctx)
				cancel()
				// With the OSD down, the call before this one may still hold the library's lock
				// on a resource for a moment after its deadline: ABORTED, retried too.
				hung := stop.name == "osd" && (code(err) == codes.DeadlineExceeded || code(err) == codes.Aborted)
				if code(err) != codes.Unavailable && !hung {
					t.Errorf("%s with %s down: %v, want UNAVAILABLE", name, stop.name, err)
				}
				t.Logf("%s with %s down: %v after %v", name, stop.name, code(err), time.Since(start).Round(time.Millisecond))
			}
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := c.StartDaemons(sctx); err != nil {
				t.Fatal(err)
			}
			restarted = true
			if !probe(t, b) {
				t.Error("Probe says not ready with RGW back")
			}
			// The same driver, no restart: every call works, on the state from before.
			nb, err := w.create(ctx, "bc-faults-new")
			if err != nil {
				t.Fatalf("create after RGW came back: %v", err)
			}
			id, _, err := w.grant(ctx, "ba-faults-new", map[string]cosi2.AccessMode_Mode{nb: ro})
			if err != nil {
				t.Fatalf("grant after RGW came back: %v", err)
			}
			if _, _, err := w.grant(ctx, "ba-faults", map[string]cosi2.AccessMode_Mode{bk: rw}); err != nil {
				t.Errorf("repeated grant after RGW came back: %v", err)
			}
			if err := w.revoke(ctx, id, nb); err != nil {
				t.Errorf("revoke after RGW came back: %v", err)
			}
			if err := w.remove(ctx, nb); err != nil {
				t.Errorf("delete after RGW came back: %v", err)
			}
		})
	}
	if err := w.revoke(ctx, acct, bk); err != nil {
		t.Error(err)
	}
	if err := w.remove(ctx, bk); err != nil {
		t.Error(err)
	}
}
