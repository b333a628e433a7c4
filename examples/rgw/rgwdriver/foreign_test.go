package rgwdriver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/ceph/go-ceph/rgw/admin"
	"google.golang.org/grpc/codes"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
	"github.com/csikit/csikit/internal/cephtest"
)

// adminAPI is an admin ops client with the cluster's admin user, for tests to look behind the
// driver's back.
func adminAPI(t testing.TB, c *cephtest.Cluster) *admin.API {
	t.Helper()
	api, err := admin.New(c.RGW.Endpoint, c.RGW.AccessKey, string(c.RGW.SecretKey), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// TestForeignBuckets: a bucket the driver did not create (here the admin user's, made over S3)
// is never adopted, deleted, looked up as the driver's or granted, whichever wire version asks,
// and is left exactly as it was: object and policy. A user of an account's ID that the driver
// did not create is never used or deleted.
func TestForeignBuckets(t *testing.T) {
	b, c := newBackend(t)
	w1, w, _ := served(t, b)
	ctx := callCtx(t)
	adm := s3As(c.RGW.Endpoint, bucket.S3Credentials{AccessKeyID: c.RGW.AccessKey, SecretAccessKey: string(c.RGW.SecretKey)})
	const foreign = "bc-foreign"
	if _, err := adm.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(foreign)}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(foreign), Key: aws.String("keep"), Body: strings.NewReader("keep")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = adm.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(foreign), Key: aws.String("keep")})
		_, _ = adm.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(foreign)})
	})

	if _, err := w.create(ctx, foreign); code(err) != codes.AlreadyExists {
		t.Errorf("create of a foreign bucket's name: %v, want ALREADY_EXISTS", err)
	}
	if _, err := w.p.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: foreign,
		Protocols: []*cosi2.ObjectProtocol{s3Protocol}}); code(err) != codes.FailedPrecondition {
		t.Errorf("get of a foreign bucket: %v, want FAILED_PRECONDITION", err)
	}
	if _, _, err := w.grant(ctx, "ba-foreign", map[string]cosi2.AccessMode_Mode{foreign: rw}); code(err) != codes.FailedPrecondition {
		t.Errorf("v1alpha2 grant on a foreign bucket: %v, want FAILED_PRECONDITION", err)
	}
	if _, _, err := w1.grant(ctx, "ba-foreign1", foreign); code(err) != codes.FailedPrecondition {
		t.Errorf("v1alpha1 grant on a foreign bucket: %v, want FAILED_PRECONDITION", err)
	}
	if err := w.remove(ctx, foreign); code(err) != codes.FailedPrecondition {
		t.Errorf("delete of a foreign bucket: %v, want FAILED_PRECONDITION", err)
	}
	if _, err := adm.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(foreign), Key: aws.String("keep")}); err != nil {
		t.Errorf("the foreign bucket's object after the driver's calls: %v", err)
	}
	if _, err := adm.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(foreign)}); s3Code(err) != "NoSuchBucketPolicy" {
		t.Errorf("the foreign bucket's policy after the driver's calls: %q, want none", s3Code(err))
	}

	// A user with an account's user ID that someone else made.
	api := adminAPI(t, c)
	uid := rgwdriver.AccountUID("ba-squatted")
	if _, err := api.CreateUser(ctx, admin.User{ID: uid, DisplayName: "someone else's"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.RemoveUser(context.Background(), admin.User{ID: uid}) })
	own, err := w.create(ctx, "bc-squatted")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.grant(ctx, "ba-squatted", map[string]cosi2.AccessMode_Mode{own: rw}); code(err) != codes.FailedPrecondition {
		t.Errorf("grant to an account whose user ID someone else holds: %v, want FAILED_PRECONDITION", err)
	}
	if err := w.revoke(ctx, uid, own); err != nil {
		t.Errorf("revoke of a user the driver did not create: %v, want OK (nothing of the driver's there)", err)
	}
	if u, err := api.GetUser(ctx, admin.User{ID: uid}); err != nil || u.DisplayName != "someone else's" {
		t.Errorf("the other user after the driver's calls: %v", err)
	}
	if err := w.remove(ctx, own); err != nil {
		t.Fatal(err)
	}
}

// TestBucketNamesOnRGW: names that are no S3 bucket name, and names in the "cosi-" space, get
// hashed buckets that RGW takes, distinct from each other and from the names kept as they are.
func TestBucketNamesOnRGW(t *testing.T) {
	b, _ := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	hashed := rgwdriver.BucketName("cosi-x")
	names := []string{"bc-kept", "cosi-x", hashed, "a", strings.Repeat("long.", 40) + "x", "ab", "192.168.1.1"}
	seen := map[string]string{}
	for _, n := range names {
		id, err := w.create(ctx, n)
		if err != nil {
			t.Errorf("create %q: %v", n, err)
			continue
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%q and %q got the same bucket %q", n, other, id)
		}
		seen[id] = n
	}
	if len(seen) != len(names) {
		t.Errorf("%d names gave %d buckets", len(names), len(seen))
	}
	for id := range seen {
		if err := w.remove(ctx, id); err != nil {
			t.Error(err)
		}
	}
}

// TestOwnerKeyRotated: an administrator replaces the owner's key behind the driver's back. The
// next call that uses it answers FAILED_PRECONDITION (a retry, not a final answer) and the one
// after reads the new key and works, with no restart.
func TestOwnerKeyRotated(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	ctx := callCtx(t)
	id, err := w.create(ctx, "bc-rotate-1") // the driver has the owner's key now
	if err != nil {
		t.Fatal(err)
	}
	api := adminAPI(t, c)
	owner, err := api.GetUser(ctx, admin.User{ID: rgwdriver.DefaultOwnerUID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.CreateKey(ctx, admin.UserKeySpec{UID: rgwdriver.DefaultOwnerUID, KeyType: "s3", GenerateKey: new(true)}); err != nil {
		t.Fatal(err)
	}
	for _, k := range owner.Keys {
		if err := api.RemoveKey(ctx, admin.UserKeySpec{UID: rgwdriver.DefaultOwnerUID, AccessKey: k.AccessKey, KeyType: "s3"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.create(ctx, "bc-rotate-2"); code(err) != codes.FailedPrecondition {
		t.Errorf("create with the owner's old key: %v, want FAILED_PRECONDITION", err)
	}
	id2, err := w.create(ctx, "bc-rotate-2")
	if err != nil {
		t.Fatalf("create once more, with the owner's new key: %v", err)
	}
	for _, bk := range []string{id, id2} {
		if err := w.remove(ctx, bk); err != nil {
			t.Error(err)
		}
	}
}
