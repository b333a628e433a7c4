package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// OutageOptions says how to take a driver's storage away and bring it back, for CSIOutage and
// COSIOutage.
type OutageOptions struct {
	// Down makes the storage unreachable for the driver (stop its daemons, close its port);
	// required. The driver process keeps running.
	Down func() error
	// Up brings the storage back; required. The driver is not restarted. It is called even
	// when a check fails while the storage is down.
	Up func() error
	// Within bounds how long the driver may take to notice either change (a Probe may look at a
	// cached connection) and to serve again once the storage is back. Zero means 60 seconds.
	Within time.Duration
	// CallTimeout is the deadline of each call, as a CO sets one. Zero means 10 seconds.
	CallTimeout time.Duration
	// ReadyzURL, when set, is the driver's /readyz (plugin.Config.HTTPEndpoint): it must answer
	// 503 while the storage is down and 200 once it is back. COSI has no Probe RPC, so this is
	// the only readiness COSIOutage can check.
	ReadyzURL string
	// Parameters go into every create: CreateVolume's parameters (a StorageClass's) and
	// DriverCreateBucket's and DriverDeleteBucket's (a BucketClass's).
	Parameters map[string]string
	// Secrets go into CreateVolume and DeleteVolume, as the provisioner's secrets of a
	// StorageClass do; COSI calls carry none.
	Secrets map[string]string
}

// retryable are the codes every CO retries without giving up on the operation: the answers a
// driver owes while its storage is away. Anything else (INTERNAL, NOT_FOUND, the codes the COSI
// sidecar takes as final, and above all OK for an operation that cannot have happened) is wrong.
var retryable = map[codes.Code]bool{codes.Unavailable: true, codes.DeadlineExceeded: true, codes.Aborted: true}

// outageT is the part of *testing.T the outage checks use, so that their own tests can run them
// against a driver that answers wrongly and read the failures.
type outageT interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

// outageCalls are the calls an outage check makes, CSI or COSI.
type outageCalls struct {
	what   string                                  // "volume" or "bucket"
	probe  func(ctx context.Context) (bool, error) // nil: no Probe RPC
	create func(ctx context.Context, name string) (id string, err error)
	remove func(ctx context.Context, id string) error
}

// CSIOutage proves that a CSI driver on networked storage turns an outage into answers the CO
// retries, and serves again by itself once the storage is back.
//
// With the storage up, it creates a volume. Then it calls Down and checks:
//
//   - Probe turns ready=false, never an error code, and /readyz (with ReadyzURL) answers 503;
//   - CreateVolume of a new name and DeleteVolume of the volume answer UNAVAILABLE,
//     DEADLINE_EXCEEDED or ABORTED. Never OK: a delete that cannot have happened, an orphan
//     later. Never a code the CO takes as final.
//
// Then it calls Up and checks, with no restart of the driver:
//
//   - Probe turns ready, and /readyz answers 200;
//   - the create retried with the same name succeeds once, and a repeat answers the same volume;
//   - both volumes delete.
func CSIOutage(t *testing.T, conn grpc.ClientConnInterface, o OutageOptions) {
	t.Helper()
	outage(t, csiOutageCalls(conn, o), o)
}

func csiOutageCalls(conn grpc.ClientConnInterface, o OutageOptions) outageCalls {
	id, ctl := csi.NewIdentityClient(conn), csi.NewControllerClient(conn)
	mount := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	return outageCalls{
		what: "volume",
		probe: func(ctx context.Context) (bool, error) {
			resp, err := id.Probe(ctx, &csi.ProbeRequest{})
			// An unset ready field means ready (the spec's default).
			return err == nil && (resp.GetReady() == nil || resp.GetReady().GetValue()), err
		},
		create: func(ctx context.Context, name string) (string, error) {
			resp, err := ctl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mount},
				Parameters: o.Parameters, Secrets: o.Secrets})
			return resp.GetVolume().GetVolumeId(), err
		},
		remove: func(ctx context.Context, volID string) error {
			_, err := ctl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: volID, Secrets: o.Secrets})
			return err
		},
	}
}

// COSIOutage is CSIOutage for a COSI driver, through v1alpha2's DriverCreateBucket and
// DriverDeleteBucket (the library serves both versions from one backend). COSI has no Probe
// RPC: set ReadyzURL to check readiness.
func COSIOutage(t *testing.T, conn grpc.ClientConnInterface, o OutageOptions) {
	t.Helper()
	prov := cosi2.NewProvisionerClient(conn)
	outage(t, outageCalls{
		what: "bucket",
		create: func(ctx context.Context, name string) (string, error) {
			resp, err := prov.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: name,
				Protocols: []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_S3}}, Parameters: o.Parameters})
			return resp.GetBucketId(), err
		},
		remove: func(ctx context.Context, bucketID string) error {
			_, err := prov.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: bucketID, Parameters: o.Parameters})
			return err
		},
	}, o)
}

// outageRun is one outage check: its calls, its options and the bounds of its waits.
type outageRun struct {
	t           outageT
	c           outageCalls
	o           OutageOptions
	within      time.Duration
	callTimeout time.Duration
}

// call makes one call, bounded by the call timeout.
func (r *outageRun) call(f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.callTimeout)
	defer cancel()
	return f(ctx)
}

func outage(t outageT, c outageCalls, o OutageOptions) {
	t.Helper()
	if o.Down == nil || o.Up == nil {
		t.Errorf("drivertest: OutageOptions.Down and Up are required")
		return
	}
	r := &outageRun{t: t, c: c, o: o, within: o.Within, callTimeout: o.CallTimeout}
	if r.within <= 0 {
		r.within = 60 * time.Second
	}
	if r.callTimeout <= 0 {
		r.callTimeout = 10 * time.Second
	}
	within := r.within
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	before, during := "outage-before-"+hex.EncodeToString(suffix), "outage-during-"+hex.EncodeToString(suffix)

	var kept string
	if err := r.call(func(ctx context.Context) (err error) { kept, err = c.create(ctx, before); return err }); err != nil {
		t.Errorf("Create%s %q with the storage up: %v", title(c.what), before, err)
		return
	}
	if c.probe != nil && !eventually(within, func() bool { ok, _ := c.probe(context.Background()); return ok }) {
		t.Errorf("Probe is not ready with the storage up")
		return
	}

	if err := o.Down(); err != nil {
		t.Errorf("OutageOptions.Down: %v", err)
		return
	}
	upAgain := false
	defer func() {
		if !upAgain {
			if err := o.Up(); err != nil {
				t.Errorf("OutageOptions.Up: %v", err)
			}
		}
	}()
	r.whileDown(kept, during)

	upAgain = true
	if err := o.Up(); err != nil {
		t.Errorf("OutageOptions.Up: %v", err)
		return
	}
	r.afterUp(kept, during)
}

// whileDown checks the answers while the storage is down: Probe, /readyz, a create of the new
// name during and a delete of the existing kept.
func (r *outageRun) whileDown(kept, during string) {
	t, c, o, within := r.t, r.c, r.o, r.within
	t.Helper()
	if c.probe != nil {
		var lastErr error
		if !eventually(within, func() bool {
			var ready bool
			_ = r.call(func(ctx context.Context) error { ready, lastErr = c.probe(ctx); return nil })
			return !ready || lastErr != nil
		}) {
			t.Errorf("Probe still answers ready %v after the storage went down", within)
		} else if lastErr != nil {
			t.Errorf("Probe with the storage down: %v; want ready=false, not an error code (a liveness probe restarts the driver on errors, which brings no storage back)", lastErr)
		}
	}
	if o.ReadyzURL != "" && !eventually(within, func() bool { return httpCode(o.ReadyzURL) == http.StatusServiceUnavailable }) {
		t.Errorf("%s still answers %d %v after the storage went down, want 503", o.ReadyzURL, httpCode(o.ReadyzURL), within)
	}
	err := r.call(func(ctx context.Context) (err error) { _, err = c.create(ctx, during); return err })
	if !retryable[status.Code(err)] {
		t.Errorf("Create%s %q with the storage down: %v; want UNAVAILABLE, DEADLINE_EXCEEDED or ABORTED", title(c.what), during, codeOrOK(err))
	}
	err = r.call(func(ctx context.Context) error { return c.remove(ctx, kept) })
	if !retryable[status.Code(err)] {
		t.Errorf("Delete%s %q with the storage down: %v; want UNAVAILABLE, DEADLINE_EXCEEDED or ABORTED (OK would report a deletion that did not happen)", title(c.what), kept, codeOrOK(err))
	}
}

// afterUp checks, with no restart of the driver, that it is ready and serves again once the
// storage is back: the retried create succeeds once, a repeat answers the same, and both delete.
func (r *outageRun) afterUp(kept, during string) {
	t, c, o, within := r.t, r.c, r.o, r.within
	t.Helper()
	if c.probe != nil && !eventually(within, func() bool { ok, _ := c.probe(context.Background()); return ok }) {
		t.Errorf("Probe is not ready %v after the storage came back", within)
	}
	if o.ReadyzURL != "" && !eventually(within, func() bool { return httpCode(o.ReadyzURL) == http.StatusOK }) {
		t.Errorf("%s answers %d %v after the storage came back, want 200", o.ReadyzURL, httpCode(o.ReadyzURL), within)
	}
	var made string
	if !eventually(within, func() bool {
		return r.call(func(ctx context.Context) (err error) { made, err = c.create(ctx, during); return err }) == nil
	}) {
		t.Errorf("Create%s %q still fails %v after the storage came back", title(c.what), during, within)
		return
	}
	var again string
	if err := r.call(func(ctx context.Context) (err error) { again, err = c.create(ctx, during); return err }); err != nil || again != made {
		t.Errorf("Create%s %q repeated after the outage: %q, %v; want %q", title(c.what), during, again, err, made)
	}
	for _, id := range []string{kept, made} {
		if err := r.call(func(ctx context.Context) error { return c.remove(ctx, id) }); err != nil {
			t.Errorf("Delete%s %q after the outage: %v", title(c.what), id, err)
		}
	}
	t.Logf("outage: checked Probe, readiness, create and delete through the outage and after it")
}

// eventually polls cond, backing off from 10 ms to 1 s, until it holds or within has passed.
// It waits on a storage system outside the test's control, so there is nothing to synchronise on.
func eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	gap := 10 * time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(gap)
		gap = min(2*gap, time.Second)
	}
}

func httpCode(url string) int {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func codeOrOK(err error) string {
	if err == nil {
		return "OK"
	}
	return status.Code(err).String() + ": " + status.Convert(err).Message()
}

func title(what string) string {
	if what == "" {
		return ""
	}
	return string(what[0]-'a'+'A') + what[1:]
}
