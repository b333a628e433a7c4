package cosisuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
)

// runCOSI is the suite behind COSI and COSIEndpoint: one subtest per wire version, each with one
// subtest per rule (cosiChecks), in order. It returns the counts (see Result): each rule of each
// version is a spec, "<version>/<rule>"; a version's own set-up is one only when it fails.
func runCOSI(t reporter, endpoint string, opts Options) Result {
	rec := newCOSIRecorder(opts.callTimeout())
	if s, ok := t.(scrubbable); ok {
		s.setScrub(rec.scrub)
	}
	conn, err := dialCOSI(endpoint, rec)
	if err != nil {
		t.Fatalf("drivertest: connecting to %s: %v", endpoint, err)
	}
	defer conn.Close()
	res := Result{Skips: map[string]string{}, Failures: map[string]string{}}
	served := 0
	for _, c := range []cosiClient{newCOSIV1Alpha1(conn), newCOSIV1Alpha2(conn)} {
		version := string(c.version())
		var checks []cosiCheck
		for _, chk := range cosiChecks {
			if chk.only == "" || chk.only == c.version() {
				checks = append(checks, chk)
			}
		}
		setUp, notes := &specNote{}, make([]*specNote, len(checks))
		t.Run(version, func(t reporter) {
			t.setNote(setUp)
			s := &cosiSuite{c: c, conn: conn, opts: opts, rec: rec}
			if !s.start(t) {
				return
			}
			served++
			for i, chk := range checks {
				notes[i] = &specNote{}
				t.Run(chk.name, func(t reporter) {
					t.setNote(notes[i])
					chk.run(t, s)
				})
			}
		})
		// The version's own messages: its set-up (DriverGetInfo, the first bucket and grant) and
		// its clean-up.
		failed, msg, skipped, reason := setUp.outcome()
		if failed {
			res.count(version, true, msg)
			reason = "not run: the " + version + " set-up failed"
		} else if !skipped {
			reason = "not run"
		}
		for i, chk := range checks {
			name := version + "/" + chk.name
			if notes[i] == nil {
				res.skip(name, reason)
				continue
			}
			failed, msg, skipped, why := notes[i].outcome()
			if skipped && !failed {
				res.skip(name, why)
				continue
			}
			res.count(name, failed, msg)
		}
	}
	if served == 0 && !t.Failed() {
		msg := fmt.Sprintf("drivertest: the driver at %s serves neither COSI v1alpha1 nor v1alpha2", endpoint)
		t.Errorf("%s", msg)
		res.count("COSI", true, msg)
	}
	return res
}

// count adds a spec that ran.
func (r *Result) count(name string, failed bool, msg string) {
	r.Ran++
	if failed {
		r.Failed++
		r.Failures[name] = msg
		return
	}
	r.Passed++
}

// skip adds a spec that did not run.
func (r *Result) skip(name, reason string) {
	r.Skipped++
	r.Skips[name] = reason
}

// cosiSuite is the state of one wire version's run.
type cosiSuite struct {
	c    cosiClient
	conn *grpc.ClientConn
	opts Options
	rec  *cosiRecorder

	name      string
	protocols []bucket.Protocol // v1alpha2 only
	// canGrant is false when DriverGrantBucketAccess answers UNIMPLEMENTED: the grant checks
	// are skipped, saying so.
	canGrant bool
}

// start detects the version, learns the driver's identity and protocol, and finds out whether it
// grants access. It reports false when the version is skipped or cannot be checked at all.
func (s *cosiSuite) start(t reporter) bool {
	ctx := expectCall(context.Background(), "DriverGetInfo, to find out whether the version is served", codes.Unimplemented)
	name, protocols, err := s.c.info(ctx)
	if status.Code(err) == codes.Unimplemented {
		t.Skipf("drivertest: the driver does not serve COSI %s: DriverGetInfo answered UNIMPLEMENTED", s.c.version())
		return false
	}
	if err != nil {
		t.Fatalf("drivertest: COSI %s DriverGetInfo: %v", s.c.version(), err)
		return false
	}
	s.name, s.protocols = name, protocols
	if v2, ok := s.c.(*cosiV1Alpha2); ok && len(protocols) > 0 && protocols[0] >= bucket.S3 && protocols[0] <= bucket.GCS {
		v2.protocol = protocols[0]
	}
	// A first bucket and grant: the v1alpha1 client learns the protocol from the bucket, and
	// the suite learns whether grants are served.
	b := s.mustCreate(t, "the first DriverCreateBucket of the run", bucketName(), s.opts.BucketParameters)
	if v1, ok := s.c.(*cosiV1Alpha1); ok {
		switch {
		case b.S3 != nil:
			v1.protocol = bucket.S3
		case b.Azure != nil:
			v1.protocol = bucket.Azure
		case b.GCS != nil:
			v1.protocol = bucket.GCS
		}
	}
	a, _, err := s.c.grant(expectCall(context.Background(), "the first DriverGrantBucketAccess of the run", codes.Unimplemented),
		accountName(), []string{b.ID}, s.opts.AccessParameters)
	switch {
	case status.Code(err) == codes.Unimplemented:
		t.Logf("drivertest: DriverGrantBucketAccess answered UNIMPLEMENTED: the grant checks are skipped")
	case err != nil:
		t.Errorf("drivertest: the first DriverGrantBucketAccess of the run (one bucket, key authentication): %v", err)
		s.canGrant = true
	default:
		s.canGrant = true
		// Revoked when the version ends, before its bucket is deleted (cleanups run last
		// first); until then the canary can find its credentials wherever they leaked.
		s.cleanupAccess(t, a.AccountID, []string{b.ID})
	}
	return true
}

// cosiCheck is one rule; its name says what the driver must do.
type cosiCheck struct {
	name string
	only bucket.Version // "" for both versions
	run  func(t reporter, s *cosiSuite)
}

// cosiChecks are the rules, in the order they run; the canary and the terminal-code table come
// last, since they judge every call before them.
var cosiChecks = []cosiCheck{
	{"DriverGetInfo names the driver in at most 63 characters of DNS-1035 labels", "", checkDriverName},
	{"DriverGetInfo lists at least one protocol, none UNKNOWN, none twice", bucket.V1Alpha2, checkProtocols},
	{"DriverCreateBucket of one name three times answers the same valid bucket", "", checkCreateIdempotent},
	{"DriverCreateBucket of an existing name with incompatible parameters is ALREADY_EXISTS", "", checkCreateIncompatible},
	{"DriverGetExistingBucket of an unknown bucket is NOT_FOUND and of a created one answers it", bucket.V1Alpha2, checkGetBucket},
	{"bucket calls with bad input are INVALID_ARGUMENT", "", checkBucketBadInput},
	{"DriverDeleteBucket and DriverRevokeBucketAccess of what is gone answer OK twice", "", checkGoneIsDone},
	{"DriverGrantBucketAccess repeated under one account name answers the same account and credentials", "", checkGrantIdempotent},
	{"DriverGrantBucketAccess repeated with incompatible buckets or parameters is ALREADY_EXISTS in v1alpha2 and never in v1alpha1", "", checkGrantIncompatible},
	{"DriverGrantBucketAccess of several buckets is OUT_OF_RANGE if and only if the driver cannot put them behind one access", bucket.V1Alpha2, checkMultiBucket},
	{"access calls with bad input are INVALID_ARGUMENT", "", checkAccessBadInput},
	{"two accounts granted one bucket get different credentials", "", checkDistinctAccounts},
	{"granted credentials work and stop working at revoke", "", checkCredentialsWork},
	{"concurrent identical DriverCreateBucket calls answer one bucket or ABORTED", "", checkConcurrentCreate},
	{"concurrent identical DriverGrantBucketAccess calls answer one account and credentials or ABORTED", "", checkConcurrentGrant},
	{"IDs shaped like paths are NOT_FOUND or INVALID_ARGUMENT and change nothing outside the driver", "", checkHostileIDs},
	{"no credential appears in a log line, an error, another answer or a panic report", "", checkCanary},
	{"terminal codes appear only where the COSI error table puts them", "", checkTerminalCodes},
}

// mustCreate creates a bucket, reports what the sidecar would refuse in the answer, and deletes
// the bucket when the test ends.
func (s *cosiSuite) mustCreate(t reporter, what, name string, params map[string]string) *bucket.Bucket {
	b, problems, err := s.c.create(expectCall(context.Background(), what), name, params)
	if err != nil {
		t.Fatalf("%s: DriverCreateBucket{name %q}: %v", what, name, err)
	}
	s.cleanupBucket(t, b.ID)
	for _, p := range problems {
		t.Errorf("%s: DriverCreateBucket{name %q} answered what the sidecar refuses: %s", what, name, p)
	}
	return b
}

func (s *cosiSuite) cleanupBucket(t reporter, id string) {
	t.Cleanup(func() {
		if err := s.c.remove(expectCall(context.Background(), "cleanup: delete a bucket the suite created"), id); err != nil {
			t.Errorf("drivertest: cleanup: DriverDeleteBucket{bucket_id %q}: %v", id, err)
		}
	})
}

// mustGrant grants account access to buckets, reports what the sidecar would refuse in the
// answer, and revokes it when the test ends. It skips the test when the driver does not grant.
func (s *cosiSuite) mustGrant(t reporter, what, account string, buckets []string, params map[string]string) *cosiAccess {
	s.requireGrant(t)
	a, problems, err := s.c.grant(expectCall(context.Background(), what), account, buckets, params)
	if err != nil {
		t.Fatalf("%s: DriverGrantBucketAccess{account_name %q, buckets %q}: %v", what, account, buckets, err)
	}
	s.cleanupAccess(t, a.AccountID, buckets)
	for _, p := range problems {
		t.Errorf("%s: DriverGrantBucketAccess{account_name %q} answered what the sidecar refuses: %s", what, account, p)
	}
	return a
}

func (s *cosiSuite) cleanupAccess(t reporter, accountID string, buckets []string) {
	t.Cleanup(func() {
		if err := s.c.revoke(expectCall(context.Background(), "cleanup: revoke an access the suite granted"), accountID, buckets); err != nil {
			t.Errorf("drivertest: cleanup: DriverRevokeBucketAccess{account_id %q}: %v", accountID, err)
		}
	})
}

func (s *cosiSuite) requireGrant(t reporter) {
	if !s.canGrant {
		t.Skipf("drivertest: the driver does not grant access (DriverGrantBucketAccess answered UNIMPLEMENTED)")
	}
}

// protocol is the protocol the suite asks for in this version.
func (s *cosiSuite) protocol() bucket.Protocol {
	switch c := s.c.(type) {
	case *cosiV1Alpha1:
		return c.protocol
	case *cosiV1Alpha2:
		return c.protocol
	}
	return bucket.S3
}

// shuffled returns ids in a random order, as the v1alpha2 sidecar sends a grant's buckets.
func shuffledIDs(ids []string) []string {
	out := slices.Clone(ids)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// cosiAtOnce makes n identical calls at once: every goroutine waits at one barrier, released
// together, and all have returned when it does.
func cosiAtOnce[T any](n int, call func() (T, error)) ([]T, []error) {
	start := make(chan struct{})
	out, errs := make([]T, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = call()
		}()
	}
	close(start)
	wg.Wait()
	return out, errs
}

// cosiCode names an error's gRPC code for messages.
func cosiCode(err error) string {
	if err == nil {
		return "OK"
	}
	return fmt.Sprintf("%s (%s)", status.Code(err), status.Convert(err).Message())
}
