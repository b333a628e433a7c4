package cosisuite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/drivertest/internal/serve"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// The suite must fail on a bad driver. It runs here against a recorder instead of the real
// *testing.T, so each planted bug can be matched to the rule that must catch it, and the test
// itself passes.

// fakeT records what the suite reports. Fatalf and Skipf end the (sub)test's goroutine, as
// testing.T's do.
type fakeT struct {
	name     string
	parent   *fakeT
	root     *fakeRoot
	failed   atomic.Bool
	cleanups []func()
	scrub    func(string) string
	note     *specNote
}

type fakeRoot struct {
	mu     sync.Mutex
	events []fakeEvent
	ran    []string // every (sub)test started, by full name
}

type fakeEvent struct{ test, kind, msg string }

func newFakeT() *fakeT {
	return &fakeT{root: &fakeRoot{}, scrub: func(s string) string { return s }}
}

// record keeps the event and returns its message.
func (f *fakeT) record(kind, format string, args ...any) string {
	msg := f.scrub(fmt.Sprintf(format, args...))
	f.root.mu.Lock()
	defer f.root.mu.Unlock()
	f.root.events = append(f.root.events, fakeEvent{test: f.name, kind: kind, msg: msg})
	return msg
}

func (f *fakeT) fail() {
	for t := f; t != nil; t = t.parent {
		t.failed.Store(true)
	}
}

func (f *fakeT) setScrub(s func(string) string)  { f.scrub = s }
func (f *fakeT) setNote(n *specNote)             { f.note = n }
func (f *fakeT) Logf(format string, args ...any) { f.record("log", format, args...) }
func (f *fakeT) Errorf(format string, args ...any) {
	f.note.fail(f.record("error", format, args...))
	f.fail()
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.note.fail(f.record("fatal", format, args...))
	f.fail()
	runtime.Goexit()
}

func (f *fakeT) Skipf(format string, args ...any) {
	f.note.skipWith(f.record("skip", format, args...))
	runtime.Goexit()
}

func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Failed() bool      { return f.failed.Load() }

func (f *fakeT) Run(name string, fn func(t reporter)) bool {
	child := &fakeT{name: strings.TrimPrefix(f.name+"/"+name, "/"), parent: f, root: f.root, scrub: f.scrub, note: f.note}
	f.root.mu.Lock()
	f.root.ran = append(f.root.ran, child.name)
	f.root.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for i := len(child.cleanups) - 1; i >= 0; i-- {
				child.cleanups[i]()
			}
		}()
		fn(child)
	}()
	<-done
	return !child.Failed()
}

// ranTest reports whether a (sub)test of that full name was started.
func (f *fakeT) ranTest(name string) bool {
	f.root.mu.Lock()
	defer f.root.mu.Unlock()
	return slices.Contains(f.root.ran, name)
}

// failures returns the tests that reported an error or a fatal, with their messages.
func (f *fakeT) failures() map[string][]string {
	f.root.mu.Lock()
	defer f.root.mu.Unlock()
	out := map[string][]string{}
	for _, e := range f.root.events {
		if e.kind == "error" || e.kind == "fatal" {
			out[e.test] = append(out[e.test], e.msg)
		}
	}
	return out
}

func (f *fakeT) allMessages() []string {
	f.root.mu.Lock()
	defer f.root.mu.Unlock()
	var out []string
	for _, e := range f.root.events {
		out = append(out, e.msg)
	}
	return out
}

// serveCOSI serves cfg on a fresh socket until the test ends and returns its endpoint and the
// plugin's captured log, as drivertest.COSI does.
func serveCOSI(t *testing.T, cfg plugin.Config) (endpoint string, logs func() string) {
	t.Helper()
	if cfg.COSI == nil {
		t.Fatal("drivertest: COSI needs a plugin.Config with COSI set")
	}
	srv := serve.New(t, cfg)
	return srv.Endpoint, srv.Logs
}

// runFake runs the suite against cfg with a recorder and returns it and the suite's Result.
func runFake(t *testing.T, cfg plugin.Config, opts Options) (*fakeT, Result) {
	t.Helper()
	endpoint, logs := serveCOSI(t, cfg)
	opts.Logs = logs
	f := newFakeT()
	var res Result
	f.Run("COSI", func(r reporter) { res = runCOSI(r, endpoint, opts) })
	return f, res
}

// spy is memdriver's bucket backend, recording every credential it answers so the test can
// prove no failure message printed one.
type spy struct {
	*memdriver.Buckets
	mu     sync.Mutex
	values []string
	armed  atomic.Bool
}

func (s *spy) note(a *bucket.Access) {
	if a == nil || a.Credentials.S3 == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = append(s.values, a.Credentials.S3.AccessKeyID, a.Credentials.S3.SecretAccessKey)
}

func (s *spy) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	a, err := s.Buckets.GrantBucketAccess(ctx, req)
	s.note(a)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		panic(a) // the answer, keys and all: the library must not print them
	}
	return a, err
}

func (s *spy) secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.values...)
}

func newSpy() *spy { return &spy{Buckets: memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")} }

func randomText(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The planted bugs, one per type; each embeds the spy so its credentials are known.

// mintsKeys answers new keys on every grant: the leak of ~50 keys in 22 hours.
type mintsKeys struct{ *spy }

func (m mintsKeys) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	a, err := m.spy.GrantBucketAccess(ctx, req) // panics when armed
	if err == nil {
		a.Credentials.S3 = &bucket.S3Credentials{AccessKeyID: "MINT" + randomText(8), SecretAccessKey: randomText(20)}
	}
	m.note(a)
	return a, err
}

// randomBucketID answers a fresh bucket ID on every create of a name.
type randomBucketID struct{ *spy }

func (r randomBucketID) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	b, err := r.Buckets.CreateBucket(ctx, req)
	if err == nil {
		b.ID = "bucket-" + randomText(6)
	}
	return b, err
}

// sharedKey gives every account the same key pair.
type sharedKey struct{ *spy }

var theSharedKey = &bucket.S3Credentials{AccessKeyID: "SHARED" + randomText(8), SecretAccessKey: randomText(20)}

func (k sharedKey) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	a, err := k.spy.GrantBucketAccess(ctx, req) // panics when armed
	if err == nil {
		a.Credentials.S3 = theSharedKey
	}
	k.note(a)
	return a, err
}

// revokeKeepsKeys answers OK to a revoke and keeps the keys working.
type revokeKeepsKeys struct{ *spy }

func (revokeKeepsKeys) RevokeBucketAccess(context.Context, *bucket.RevokeBucketAccessRequest) error {
	return nil
}

// panicsWithKey panics, once armed, with a message of its own holding the key: no library can
// redact that.
type panicsWithKey struct{ *spy }

func (p panicsWithKey) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	a, err := p.Buckets.GrantBucketAccess(ctx, req)
	p.note(a)
	if err == nil && p.armed.CompareAndSwap(true, false) {
		panic("granted " + a.Credentials.S3.AccessKeyID + ":" + a.Credentials.S3.SecretAccessKey)
	}
	return a, err
}

// goneIsInvalid answers a delete of a missing bucket INVALID_ARGUMENT, a terminal code.
type goneIsInvalid struct{ *spy }

func (g goneIsInvalid) DeleteBucket(ctx context.Context, req *bucket.DeleteBucketRequest) error {
	if _, err := g.Buckets.GetBucket(ctx, &bucket.GetBucketRequest{ID: req.ID}); err != nil {
		return fmt.Errorf("bucket %q: %w", req.ID, driver.ErrInvalidArgument)
	}
	return g.Buckets.DeleteBucket(ctx, req)
}

func spyOptions(s *spy) Options {
	return Options{
		BucketParameters:             map[string]string{"tier": "gold"},
		IncompatibleBucketParameters: map[string]string{"tier": "lead"},
		CheckCredentials: func(_ context.Context, _ bucket.Protocol, _ bucket.Bucket, c bucket.Credentials) error {
			if c.S3 == nil || !s.KeyLive(c.S3.AccessKeyID) {
				return fmt.Errorf("the key is not live")
			}
			return nil
		},
		ArmPanic: func() { s.armed.Store(true) },
	}
}

func bucketCfg(b bucket.Provisioner) plugin.Config {
	return plugin.Config{Name: "bad-s3.csikit.dev", VendorVersion: "1", COSI: &plugin.COSIConfig{Provisioner: b, Protocols: []bucket.Protocol{bucket.S3}}}
}

func TestCOSISuiteFailsBadDrivers(t *testing.T) {
	const (
		createSame   = "DriverCreateBucket of one name three times answers the same valid bucket"
		grantSame    = "DriverGrantBucketAccess repeated under one account name answers the same account and credentials"
		grantAtOnce  = "concurrent identical DriverGrantBucketAccess calls answer one account and credentials or ABORTED"
		distinct     = "two accounts granted one bucket get different credentials"
		revokeWorks  = "granted credentials work and stop working at revoke"
		canary       = "no credential appears in a log line, an error, another answer or a panic report"
		goneIsDone   = "DriverDeleteBucket and DriverRevokeBucketAccess of what is gone answer OK twice"
		terminalOnly = "terminal codes appear only where the COSI error table puts them"
	)
	for _, tc := range []struct {
		name    string
		backend func(s *spy) bucket.Provisioner
		// mustFail are checks that must fail in both versions, with a word of their message.
		mustFail map[string]string
	}{
		{"a backend that mints new keys on every grant", func(s *spy) bucket.Provisioner { return mintsKeys{s} },
			// "different credentials": between the concurrent calls if two of them got through,
			// else between the one that did and the grant after them (under load all but one
			// may be ABORTED).
			map[string]string{grantSame: "must not mint new keys", grantAtOnce: "different credentials"}},
		{"a backend that answers a new bucket ID on every create", func(s *spy) bucket.Provisioner { return randomBucketID{s} },
			map[string]string{createSame: "one name must always give one bucket"}},
		{"a backend that gives every account the same key", func(s *spy) bucket.Provisioner { return sharedKey{s} },
			map[string]string{distinct: "the same S3 access key ID"}},
		{"a backend whose revoke leaves the keys working", func(s *spy) bucket.Provisioner { return revokeKeepsKeys{s} },
			map[string]string{revokeWorks: "still work"}},
		{"a backend that panics with the key in its message", func(s *spy) bucket.Provisioner { return panicsWithKey{s} },
			map[string]string{canary: "appears in log line"}},
		{"a backend that answers INVALID_ARGUMENT to a delete of a missing bucket", func(s *spy) bucket.Provisioner { return goneIsInvalid{s} },
			map[string]string{goneIsDone: "want OK", terminalOnly: "treats as final"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpy()
			f, res := runFake(t, bucketCfg(tc.backend(s)), spyOptions(s))
			failures := f.failures()
			if testing.Verbose() { // what a vendor would read
				for test, msgs := range failures {
					t.Logf("%s:\n\t%s", test, strings.Join(msgs, "\n\t"))
				}
			}
			for _, v := range []string{"v1alpha1", "v1alpha2"} {
				for check, word := range tc.mustFail {
					msgs, ok := failures["COSI/"+v+"/"+check]
					switch {
					case !ok:
						t.Errorf("%s: the suite passed %q", v, check)
					case !strings.Contains(strings.Join(msgs, "\n"), word):
						t.Errorf("%s: %q failed with %q, want a message containing %q", v, check, msgs, word)
					}
					// The Result says the same.
					if msg, ok := res.Failures[v+"/"+check]; !ok || !strings.Contains(msg, word) {
						t.Errorf("Result.Failures[%q] = %q, %t; want a message containing %q", v+"/"+check, msg, ok, word)
					}
				}
			}
			checkCounts(t, res)
			for name, msg := range res.Failures {
				for _, v := range s.secrets() {
					if strings.Contains(msg, v) {
						t.Errorf("Result.Failures[%q] holds a credential: %q", name, strings.ReplaceAll(msg, v, "<leaked>"))
					}
				}
			}
			// No failure or log message prints a credential the driver answered.
			for _, msg := range f.allMessages() {
				for _, v := range s.secrets() {
					if strings.Contains(msg, v) {
						t.Errorf("the suite printed a credential in %q", strings.ReplaceAll(msg, v, "<leaked>"))
					}
				}
			}
		})
	}
}

// memdriver passes every rule, and an unserved version is skipped with its reason.
func TestCOSISuitePassesMemdriver(t *testing.T) {
	s := newSpy()
	cfg := bucketCfg(s)
	cfg.COSI.Versions = []bucket.Version{bucket.V1Alpha2}
	f, res := runFake(t, cfg, spyOptions(s))
	if fs := f.failures(); len(fs) > 0 {
		t.Errorf("failures: %v", fs)
	}
	// The Result: every v1alpha2 rule ran and passed; every v1alpha1 rule is skipped with the
	// version's reason.
	checkCounts(t, res)
	if res.Failed != 0 || res.Ran != res.Passed {
		t.Errorf("Result: %d ran, %d passed, %d failed: %v", res.Ran, res.Passed, res.Failed, res.Failures)
	}
	for _, chk := range cosiChecks {
		if chk.only == bucket.V1Alpha2 {
			continue
		}
		name := "v1alpha1/" + chk.name
		if r := res.Skips[name]; !strings.Contains(r, "does not serve COSI v1alpha1: DriverGetInfo answered UNIMPLEMENTED") {
			t.Errorf("Result.Skips[%q] = %q, want the version's reason", name, r)
		}
	}
	if want := len(checksOf(bucket.V1Alpha2)); res.Ran != want || res.Skipped != len(checksOf(bucket.V1Alpha1)) {
		t.Errorf("Result: %d ran, %d skipped; want the %d v1alpha2 rules run and the v1alpha1 ones skipped: %v", res.Ran, res.Skipped, want, res.Skips)
	}
	skipped := false
	f.root.mu.Lock()
	for _, e := range f.root.events {
		if e.test == "COSI/v1alpha1" && e.kind == "skip" && strings.Contains(e.msg, "does not serve COSI v1alpha1: DriverGetInfo answered UNIMPLEMENTED") {
			skipped = true
		}
	}
	f.root.mu.Unlock()
	if !skipped {
		t.Errorf("v1alpha1, not served, was not skipped with its reason")
	}
}

// checksOf are the rules of one version.
func checksOf(v bucket.Version) []cosiCheck {
	var out []cosiCheck
	for _, c := range cosiChecks {
		if c.only == "" || c.only == v {
			out = append(out, c)
		}
	}
	return out
}

// checkCounts checks what holds of every Result of a run that reached every version: each rule
// of each version is counted once, as run or skipped with a reason, and the only other specs are
// failed versions (their set-up or clean-up).
func checkCounts(t *testing.T, res Result) {
	t.Helper()
	rules := len(checksOf(bucket.V1Alpha1)) + len(checksOf(bucket.V1Alpha2))
	versions := 0
	for name := range res.Failures {
		switch {
		case name == "v1alpha1" || name == "v1alpha2":
			versions++
			t.Logf("version failure %s: %s", name, res.Failures[name])
		case !strings.HasPrefix(name, "v1alpha1/") && !strings.HasPrefix(name, "v1alpha2/"):
			t.Errorf("Result.Failures[%q]: not a rule of a version, nor a version", name)
		}
	}
	if res.Ran != res.Passed+res.Failed || res.Ran-versions+res.Skipped != rules || len(res.Skips) != res.Skipped || len(res.Failures) != res.Failed {
		t.Errorf("Result: %d ran = %d passed + %d failed (%d of them versions), %d skipped (%d reasons), %d failures; want every one of the %d rules once",
			res.Ran, res.Passed, res.Failed, versions, res.Skipped, len(res.Skips), len(res.Failures), rules)
	}
	for name, reason := range res.Skips {
		if reason == "" {
			t.Errorf("Result.Skips[%q] has no reason", name)
		}
	}
}

func TestCOSINameAndIDRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"mem-s3.csikit.dev", true},
		{"a", true},
		{"", false},
		{"9lives.example.com", false},
		{"Upper.example.com", false},
		{"trailing-.example.com", false},
		{"a..b", false},
		{"under_score.example.com", false},
		{strings.Repeat("a", 63), true},
		{strings.Repeat("a", 64), false},
	} {
		if got := driverNameProblem(tc.name) == ""; got != tc.ok {
			t.Errorf("driverNameProblem(%q) ok = %v, want %v", tc.name, got, tc.ok)
		}
	}
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"bc-1", true},
		{"A.b_c/d-e", true},
		{strings.Repeat("x", 2048), true},
		{strings.Repeat("x", 2049), false},
		{"", false},
		{"a b", false},
		{"a:b", false},
	} {
		if got := objectIDProblem(tc.id) == ""; got != tc.ok {
			t.Errorf("objectIDProblem(%.20q) ok = %v, want %v", tc.id, got, tc.ok)
		}
	}
	if u := cosiUID(); len(u) != 36 || driverNameProblem("a"+u) != "" {
		t.Errorf("cosiUID() = %q, want a lowercase UUID", u)
	}
}
