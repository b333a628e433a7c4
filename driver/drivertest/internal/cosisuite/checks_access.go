package cosisuite

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
)

// The access rules.

// checkGrantIdempotent: the v1alpha2 sidecar calls grant on every reconcile, with the buckets in
// random order, and writes the answer into the user's Secret each time; account_id is immutable
// once stored. New keys on a repeat leak one key per reconcile and break the workload that read
// the previous Secret.
func checkGrantIdempotent(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	n := 1
	if s.opts.MultiBucketAccess && s.c.version() != bucket.V1Alpha1 {
		n = 3
	}
	var ids []string
	for range n {
		ids = append(ids, s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters).ID)
	}
	account := accountName()
	first := s.mustGrant(t, "the first DriverGrantBucketAccess of an account", account, shuffledIDs(ids), s.opts.AccessParameters)
	for i := 2; i <= 4; i++ {
		order := shuffledIDs(ids)
		a, problems, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess repeated with the same account, buckets and parameters"),
			account, order, s.opts.AccessParameters)
		if err != nil {
			t.Errorf("call %d of DriverGrantBucketAccess{account_name %q, buckets %q}: %s; want OK with the same account and credentials", i, account, order, cosiCode(err))
			continue
		}
		for _, p := range problems {
			t.Errorf("call %d of DriverGrantBucketAccess{account_name %q} answered what the sidecar refuses: %s", i, account, p)
		}
		if a.AccountID != first.AccountID {
			t.Errorf("call %d of DriverGrantBucketAccess{account_name %q} answered account_id %q, call 1 answered %q: account_id is immutable once stored",
				i, account, a.AccountID, first.AccountID)
		}
		if !sameCredentials(a.Credentials, first.Credentials) {
			t.Errorf("call %d of DriverGrantBucketAccess{account_name %q} answered other credentials than call 1: a repeated grant must not mint new keys (the sidecar rewrites the user's Secret with every answer)",
				i, account)
		}
	}
}

// checkGrantIncompatible: v1alpha2 reserves ALREADY_EXISTS for a repeat that conflicts; the
// v1alpha1 sidecar dereferences a nil answer on ALREADY_EXISTS and crashes.
func checkGrantIncompatible(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	first := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	other := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	account := accountName()
	s.mustGrant(t, "the first DriverGrantBucketAccess of an account", account, []string{first.ID}, s.opts.AccessParameters)
	type change struct {
		what    string
		buckets []string
		params  map[string]string
	}
	changes := []change{{"another bucket", []string{other.ID}, s.opts.AccessParameters}}
	if s.opts.IncompatibleAccessParameters != nil {
		changes = append(changes, change{"IncompatibleAccessParameters", []string{first.ID}, s.opts.IncompatibleAccessParameters})
	} else {
		t.Logf("drivertest: no COSIOptions.IncompatibleAccessParameters: only another bucket is tried as the incompatible change")
	}
	for _, c := range changes {
		what := "DriverGrantBucketAccess repeated with " + c.what
		if s.c.version() == bucket.V1Alpha1 {
			a, _, err := s.c.grant(expectCall(context.Background(), what), account, c.buckets, c.params)
			if err == nil {
				s.cleanupAccess(t, a.AccountID, c.buckets)
			}
			if status.Code(err) == codes.AlreadyExists {
				t.Errorf("v1alpha1 DriverGrantBucketAccess{name %q} repeated with %s answered ALREADY_EXISTS, on which the v1alpha1 sidecar crashes", account, c.what)
			}
			continue
		}
		_, _, err := s.c.grant(expectCall(context.Background(), what, codes.AlreadyExists), account, c.buckets, c.params)
		if status.Code(err) != codes.AlreadyExists {
			t.Errorf("DriverGrantBucketAccess{account_name %q} repeated with %s: %s; want ALREADY_EXISTS", account, c.what, cosiCode(err))
		}
	}
}

func checkMultiBucket(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	a := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	b := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	account := accountName()
	ids := []string{a.ID, b.ID}
	if !s.opts.MultiBucketAccess {
		_, _, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess of two buckets by a driver that cannot put them behind one access", codes.OutOfRange),
			account, ids, s.opts.AccessParameters)
		if status.Code(err) != codes.OutOfRange {
			t.Errorf("DriverGrantBucketAccess{account_name %q} of two buckets, with COSIOptions.MultiBucketAccess false: %s; want OUT_OF_RANGE", account, cosiCode(err))
		}
		return
	}
	s.mustGrant(t, "DriverGrantBucketAccess of two buckets by a driver that can put them behind one access", account, ids, s.opts.AccessParameters)
}

// checkDistinctAccounts: a key shared between accounts means one revoke, or one rotation, takes
// another workload's access with it.
func checkDistinctAccounts(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	bucket := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters).ID
	one, two := accountName(), accountName()
	a := s.mustGrant(t, "DriverGrantBucketAccess of a first account", one, []string{bucket}, s.opts.AccessParameters)
	b := s.mustGrant(t, "DriverGrantBucketAccess of a second account", two, []string{bucket}, s.opts.AccessParameters)
	if a.AccountID == b.AccountID {
		t.Errorf("accounts %q and %q were both answered account_id %q", one, two, a.AccountID)
	}
	fa, fb := credentialFields(a.Credentials), credentialFields(b.Credentials)
	for i, kind := range []string{"S3 access key ID", "S3 secret", "Azure access token", "", "GCS access ID", "GCS secret", "", ""} {
		if kind != "" && fa[i] != "" && fa[i] == fb[i] {
			t.Errorf("accounts %q and %q were granted the same %s", one, two, kind)
		}
	}
	// Revoking one must leave the other's credentials as they were.
	if err := s.c.revoke(expectCall(context.Background(), "DriverRevokeBucketAccess of the first account"), a.AccountID, []string{bucket}); err != nil {
		t.Fatalf("DriverRevokeBucketAccess{account_id %q}: %s", a.AccountID, cosiCode(err))
	}
	again, _, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess of the second account, repeated"), two, []string{bucket}, s.opts.AccessParameters)
	switch {
	case err != nil:
		t.Errorf("DriverGrantBucketAccess{account_name %q} repeated after another account's revoke: %s; want OK", two, cosiCode(err))
	case !sameCredentials(again.Credentials, b.Credentials):
		t.Errorf("DriverGrantBucketAccess{account_name %q} repeated after another account's revoke answered other credentials", two)
	}
	if check := s.opts.CheckCredentials; check != nil {
		if err := check(context.Background(), s.protocol(), b.Buckets[0], b.Credentials); err != nil {
			t.Errorf("the credentials of account %q stopped working when another account of the same bucket was revoked: %v", two, err)
		}
	}
}

func checkCredentialsWork(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	check := s.opts.CheckCredentials
	if check == nil {
		t.Skipf("drivertest: set COSIOptions.CheckCredentials to prove that granted credentials work and revoked ones fail")
	}
	bucket := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters).ID
	account := accountName()
	a := s.mustGrant(t, "DriverGrantBucketAccess of a fresh account", account, []string{bucket}, s.opts.AccessParameters)
	if len(a.Buckets) == 0 {
		t.Fatalf("DriverGrantBucketAccess{account_name %q} answered no bucket", account)
	}
	ctx := context.Background()
	if err := check(ctx, s.protocol(), a.Buckets[0], a.Credentials); err != nil {
		t.Errorf("the credentials granted to account %q do not work on bucket %q: %v", account, bucket, err)
	}
	if err := s.c.revoke(expectCall(ctx, "DriverRevokeBucketAccess of a fresh account"), a.AccountID, []string{bucket}); err != nil {
		t.Fatalf("DriverRevokeBucketAccess{account_id %q}: %s", a.AccountID, cosiCode(err))
	}
	if err := check(ctx, s.protocol(), a.Buckets[0], a.Credentials); err == nil {
		t.Errorf("the credentials of account %q still work on bucket %q after DriverRevokeBucketAccess answered OK", account, bucket)
	}
}

// checkConcurrentGrant: two grants of one account at once must not mint two keys, or the
// Secret holds one and the backend keeps an orphan.
func checkConcurrentGrant(t reporter, s *cosiSuite) {
	s.requireGrant(t)
	const n = 8
	bucket := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters).ID
	account := accountName()
	answers, errs := cosiAtOnce(n, func() (*cosiAccess, error) {
		a, _, err := s.c.grant(expectCall(context.Background(), "concurrent identical DriverGrantBucketAccess"), account, []string{bucket}, s.opts.AccessParameters)
		return a, err
	})
	var first *cosiAccess
	aborted := 0
	for i, err := range errs {
		switch {
		case status.Code(err) == codes.Aborted:
			aborted++
		case err != nil:
			t.Errorf("concurrent DriverGrantBucketAccess{account_name %q} #%d: %s; want OK or ABORTED", account, i+1, cosiCode(err))
		case first == nil:
			first = answers[i]
			s.cleanupAccess(t, first.AccountID, []string{bucket})
		case answers[i].AccountID != first.AccountID:
			s.cleanupAccess(t, answers[i].AccountID, []string{bucket})
			t.Errorf("concurrent DriverGrantBucketAccess{account_name %q} answered two accounts, %q and %q", account, first.AccountID, answers[i].AccountID)
		case !sameCredentials(answers[i].Credentials, first.Credentials):
			t.Errorf("concurrent DriverGrantBucketAccess{account_name %q} answered two different credentials for account %q", account, first.AccountID)
		}
	}
	t.Logf("%d identical grants at once: %d OK, %d ABORTED", n, n-aborted, aborted)
	a, _, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess after concurrent calls"), account, []string{bucket}, s.opts.AccessParameters)
	switch {
	case err != nil:
		t.Errorf("DriverGrantBucketAccess{account_name %q} after the concurrent calls ended: %s; want OK", account, cosiCode(err))
	case first == nil:
		s.cleanupAccess(t, a.AccountID, []string{bucket})
	case a.AccountID != first.AccountID || !sameCredentials(a.Credentials, first.Credentials):
		t.Errorf("DriverGrantBucketAccess{account_name %q} after the concurrent calls answered another account, or different credentials than a concurrent call did", account)
	}
}
