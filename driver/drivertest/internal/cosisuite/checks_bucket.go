package cosisuite

import (
	"context"
	"reflect"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
)

// The identity and bucket rules.

func checkDriverName(t reporter, s *cosiSuite) {
	if p := driverNameProblem(s.name); p != "" {
		t.Errorf("DriverGetInfo answered the name %q, which %s; the sidecar refuses it", s.name, p)
	}
}

func checkProtocols(t reporter, s *cosiSuite) {
	if len(s.protocols) == 0 {
		t.Errorf("DriverGetInfo lists no supported protocol; the v1alpha2 sidecar refuses a driver without one")
	}
	for i, p := range s.protocols {
		if p < bucket.S3 || p > bucket.GCS {
			t.Errorf("DriverGetInfo supported_protocols[%d] is %d, which is UNKNOWN or no protocol of v1alpha2", i, int(p))
		}
		if slices.Contains(s.protocols[:i], p) {
			t.Errorf("DriverGetInfo supported_protocols[%d] lists %v a second time", i, p)
		}
	}
}

// checkCreateIdempotent: the sidecar calls create on every reconcile and stores the first
// bucket_id for good, so every answer must name the same bucket.
func checkCreateIdempotent(t reporter, s *cosiSuite) {
	name := bucketName()
	first := s.mustCreate(t, "the first DriverCreateBucket of a name", name, s.opts.BucketParameters)
	for i := 2; i <= 3; i++ {
		b, problems, err := s.c.create(expectCall(context.Background(), "DriverCreateBucket repeated with the same name and parameters"), name, s.opts.BucketParameters)
		if err != nil {
			t.Errorf("call %d of DriverCreateBucket{name %q}, same parameters: %s; want OK with the same bucket", i, name, cosiCode(err))
			continue
		}
		for _, p := range problems {
			t.Errorf("call %d of DriverCreateBucket{name %q} answered what the sidecar refuses: %s", i, name, p)
		}
		switch {
		case b.ID != first.ID:
			t.Errorf("call %d of DriverCreateBucket{name %q} answered bucket_id %q, call 1 answered %q: one name must always give one bucket",
				i, name, b.ID, first.ID)
		case !reflect.DeepEqual(b, first):
			t.Errorf("call %d of DriverCreateBucket{name %q} answered other bucket info than call 1 for bucket %q", i, name, b.ID)
		}
	}
}

func checkCreateIncompatible(t reporter, s *cosiSuite) {
	if s.opts.IncompatibleBucketParameters == nil {
		t.Skipf("drivertest: set COSIOptions.IncompatibleBucketParameters to parameters the driver accepts but that conflict with BucketParameters")
	}
	name := bucketName()
	s.mustCreate(t, "DriverCreateBucket of a fresh name", name, s.opts.BucketParameters)
	_, _, err := s.c.create(expectCall(context.Background(), "DriverCreateBucket of an existing name with incompatible parameters", codes.AlreadyExists),
		name, s.opts.IncompatibleBucketParameters)
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("DriverCreateBucket{name %q} again with IncompatibleBucketParameters: %s; want ALREADY_EXISTS", name, cosiCode(err))
	}
}

func checkGetBucket(t reporter, s *cosiSuite) {
	unknown := "csikit-no-such-bucket-" + cosiUID()
	_, _, err := s.c.get(expectCall(context.Background(), "DriverGetExistingBucket of an unknown bucket", codes.Unimplemented), unknown)
	switch status.Code(err) {
	case codes.Unimplemented:
		t.Skipf("drivertest: the driver does not serve DriverGetExistingBucket (UNIMPLEMENTED)")
	case codes.NotFound:
	default:
		t.Errorf("DriverGetExistingBucket{existing_bucket_id %q} of a bucket that does not exist: %s; want NOT_FOUND", unknown, cosiCode(err))
	}
	b := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	got, problems, err := s.c.get(expectCall(context.Background(), "DriverGetExistingBucket of a bucket the driver created"), b.ID)
	if err != nil {
		t.Fatalf("DriverGetExistingBucket{existing_bucket_id %q} of a bucket the driver created: %s; want OK", b.ID, cosiCode(err))
	}
	for _, p := range problems {
		t.Errorf("DriverGetExistingBucket{existing_bucket_id %q} answered what the sidecar refuses: %s", b.ID, p)
	}
	if got.ID != b.ID {
		t.Errorf("DriverGetExistingBucket{existing_bucket_id %q} answered bucket_id %q", b.ID, got.ID)
	}
}

// checkGoneIsDone: the sidecar retries deletes and revokes until OK, so "already gone" must be
// OK, or a claim can never be deleted.
func checkGoneIsDone(t reporter, s *cosiSuite) {
	for i := 1; i <= 2; i++ {
		id := "csikit-no-such-bucket-" + cosiUID()
		if err := s.c.remove(expectCall(context.Background(), "DriverDeleteBucket of a bucket that never existed"), id); err != nil {
			t.Errorf("DriverDeleteBucket{bucket_id %q} of a bucket that never existed (call %d): %s; want OK", id, i, cosiCode(err))
		}
	}
	b, _, err := s.c.create(expectCall(context.Background(), "DriverCreateBucket of a fresh name"), bucketName(), s.opts.BucketParameters)
	if err != nil {
		t.Fatalf("DriverCreateBucket of a fresh name: %s", cosiCode(err))
	}
	for i := 1; i <= 3; i++ {
		if err := s.c.remove(expectCall(context.Background(), "DriverDeleteBucket of a bucket, then again"), b.ID); err != nil {
			t.Errorf("DriverDeleteBucket{bucket_id %q}, call %d (calls after the first delete what is gone): %s; want OK", b.ID, i, cosiCode(err))
		}
	}
	if !s.canGrant {
		return
	}
	bucket := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	for i := 1; i <= 2; i++ {
		id := "csikit-no-such-account-" + cosiUID()
		if err := s.c.revoke(expectCall(context.Background(), "DriverRevokeBucketAccess of an account that never existed"), id, []string{bucket.ID}); err != nil {
			t.Errorf("DriverRevokeBucketAccess{account_id %q} of an account that never existed (call %d): %s; want OK", id, i, cosiCode(err))
		}
	}
	a, _, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess of a fresh account"), accountName(), []string{bucket.ID}, s.opts.AccessParameters)
	if err != nil {
		t.Fatalf("DriverGrantBucketAccess of a fresh account: %s", cosiCode(err))
	}
	for i := 1; i <= 3; i++ {
		if err := s.c.revoke(expectCall(context.Background(), "DriverRevokeBucketAccess of an access, then again"), a.AccountID, []string{bucket.ID}); err != nil {
			t.Errorf("DriverRevokeBucketAccess{account_id %q}, call %d (calls after the first revoke what is gone): %s; want OK", a.AccountID, i, cosiCode(err))
		}
	}
}

// checkConcurrentCreate: the sidecar may send a create again while the first still runs (after a
// timeout, or from a second replica). Each must answer the one bucket or ABORTED; two different
// buckets for one claim leak one of them.
func checkConcurrentCreate(t reporter, s *cosiSuite) {
	const n = 8
	name := bucketName()
	buckets, errs := cosiAtOnce(n, func() (*bucket.Bucket, error) {
		b, _, err := s.c.create(expectCall(context.Background(), "concurrent identical DriverCreateBucket"), name, s.opts.BucketParameters)
		return b, err
	})
	var first *bucket.Bucket
	aborted := 0
	for i, err := range errs {
		switch {
		case status.Code(err) == codes.Aborted:
			aborted++
		case err != nil:
			t.Errorf("concurrent DriverCreateBucket{name %q} #%d: %s; want OK or ABORTED", name, i+1, cosiCode(err))
		case first == nil:
			first = buckets[i]
			s.cleanupBucket(t, first.ID)
		case buckets[i].ID != first.ID:
			s.cleanupBucket(t, buckets[i].ID)
			t.Errorf("concurrent DriverCreateBucket{name %q} answered two buckets, %q and %q: one name must give one bucket", name, first.ID, buckets[i].ID)
		case !reflect.DeepEqual(buckets[i], first):
			t.Errorf("concurrent DriverCreateBucket{name %q} answered bucket %q with different bucket info", name, first.ID)
		}
	}
	t.Logf("%d identical creates at once: %d OK, %d ABORTED", n, n-aborted, aborted)
	if first == nil {
		// All aborted is allowed once; the retry must then succeed.
		b, _, err := s.c.create(expectCall(context.Background(), "DriverCreateBucket after concurrent calls"), name, s.opts.BucketParameters)
		if err != nil {
			t.Fatalf("DriverCreateBucket{name %q} after %d concurrent calls all ended: %s; want OK", name, n, cosiCode(err))
		}
		s.cleanupBucket(t, b.ID)
		return
	}
	b, _, err := s.c.create(expectCall(context.Background(), "DriverCreateBucket after concurrent calls"), name, s.opts.BucketParameters)
	switch {
	case err != nil:
		t.Errorf("DriverCreateBucket{name %q} after the concurrent calls ended: %s; want OK", name, cosiCode(err))
	case b.ID != first.ID:
		t.Errorf("DriverCreateBucket{name %q} after the concurrent calls answered bucket %q, they answered %q", name, b.ID, first.ID)
	}
}
