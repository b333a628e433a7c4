package rgwdriver_test

import (
	"strings"
	"testing"

	"github.com/ceph/go-ceph/rgw/admin"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	cosi2 "sigs.k8s.io/container-object-storage-interface/proto"

	cosiv1alpha2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
)

// TestSecretCanary runs the driver's happy and error paths with the plugin logging at debug and
// then searches every log line and every error for each secret the driver handles: the admin
// key it was configured with, the bucket owner's key, every key it granted, and a wrong admin
// secret it was given. Only the grants' own answers may carry granted keys.
func TestSecretCanary(t *testing.T) {
	b, c := newBackend(t)
	w1, w, srv := served(t, b)
	ctx := callCtx(t)
	var errs []string
	note := func(err error) {
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	secrets := map[string]string{"admin access key": c.RGW.AccessKey, "admin secret key": string(c.RGW.SecretKey)}

	bk, err := w.create(ctx, "bc-canary")
	if err != nil {
		t.Fatal(err)
	}
	id, k, err := w.grant(ctx, "ba-canary", map[string]cosiv1alpha2.AccessMode_Mode{bk: rw})
	if err != nil {
		t.Fatal(err)
	}
	secrets["granted key id"], secrets["granted secret"] = k.AccessKeyID, k.SecretAccessKey
	id1, k1, err := w1.grant(ctx, "ba-canary-v1", bk)
	if err != nil {
		t.Fatal(err)
	}
	secrets["v1alpha1 granted key id"], secrets["v1alpha1 granted secret"] = k1.AccessKeyID, k1.SecretAccessKey
	owner, err := adminAPI(t, c).GetUser(ctx, admin.User{ID: rgwdriver.DefaultOwnerUID})
	if err != nil || len(owner.Keys) == 0 {
		t.Fatalf("the owner user: %v", err)
	}
	secrets["owner key id"], secrets["owner secret"] = owner.Keys[0].AccessKey, owner.Keys[0].SecretKey

	// Error paths: an incompatible grant, a foreign bucket ID, a bucket that is not there.
	_, _, err = w.grant(ctx, "ba-canary", map[string]cosiv1alpha2.AccessMode_Mode{bk: ro})
	note(err)
	_, _, err = w1.grant(ctx, "ba-canary", bk)
	note(err)
	_, _, err = w.grant(ctx, "ba-canary-2", map[string]cosiv1alpha2.AccessMode_Mode{"bc-not-there": rw})
	note(err)
	_, err = w1.p.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "bc-params", Parameters: map[string]string{"secretKey": "x"}})
	note(err)

	// A driver given a wrong admin secret: refused credentials, said without the secret.
	const wrong = "WRONGSECRETCANARYWRONGSECRETCANARY"
	secrets["wrong admin secret"] = wrong
	bad, err := rgwdriver.New(rgwdriver.Config{Endpoint: c.RGW.Endpoint, AdminAccessKey: rgwdriver.Secret(c.RGW.AccessKey),
		AdminSecretKey: wrong, OwnerUID: "csikit-cosi-owner-canary"})
	if err != nil {
		t.Fatal(err)
	}
	badSrv := drivertest.NewServer(t, pluginConfig(bad, zap.NewNop()))
	bw := wire2{cosiv1alpha2.NewProvisionerClient(badSrv.Conn)}
	_, err = bw.create(ctx, "bc-canary-bad")
	if code(err) != codes.FailedPrecondition {
		t.Errorf("create with a wrong admin secret: %v, want FAILED_PRECONDITION", err)
	}
	note(err)
	if ready, err := bad.Probe(ctx); ready || err == nil {
		t.Errorf("Probe with a wrong admin secret: %v, %v; want an error", ready, err)
	} else {
		note(err)
	}

	note(w.revoke(ctx, id, bk))
	note(w.revoke(ctx, id1, bk))
	note(w.remove(ctx, bk))

	logs := srv.Logs() + badSrv.Logs()
	if !strings.Contains(logs, "DriverGrantBucketAccess") {
		t.Fatal("the debug log has no grant in it: the canary would search nothing")
	}
	for what, s := range secrets {
		if s == "" {
			t.Fatalf("%s is empty", what)
		}
		if strings.Contains(logs, s) {
			t.Errorf("the %s is in the debug log", what)
		}
		for _, e := range errs {
			if strings.Contains(e, s) {
				t.Errorf("the %s is in an error: %s", what, strings.ReplaceAll(e, s, "[it]"))
			}
		}
	}
}
