package cosisuite

import (
	"context"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
)

// The credential canary. COSI's protos mark no credential field secret, so a generic sanitizer
// prints access keys in clear; this check is what notices. The values searched for are every
// credential any grant of the version answered (the recorder collects them), so no call path is
// forgotten: concurrent grants, repeats and the panic below included.

// cosiMinSearched is the shortest value searched for: shorter ones would match by chance.
const cosiMinSearched = 8

// cosiMaxReports bounds the reports per value and place, so one leak per log line does not drown
// the run.
const cosiMaxReports = 5

func checkCanary(t reporter, s *cosiSuite) {
	if s.canGrant {
		s.panicOnce(t)
	}
	secrets := s.rec.secretsOf(s.c.version())
	if len(secrets) == 0 {
		t.Skipf("drivertest: no grant of this version answered credentials, so there is nothing to search for")
	}
	var searched []secretValue
	for _, v := range secrets {
		if len(v.value) < cosiMinSearched {
			t.Logf("drivertest: %s has %d characters, too short to search for without false matches", v.label, len(v.value))
			continue
		}
		searched = append(searched, v)
	}
	// Errors of every version: a v1alpha2 error may carry a key granted through v1alpha1 too.
	for _, v := range searched {
		n := 0
		for _, version := range []bucket.Version{bucket.V1Alpha1, bucket.V1Alpha2} {
			for _, r := range s.rec.recordsOf(version) {
				if !strings.Contains(r.text, v.value) {
					continue
				}
				if n++; n > cosiMaxReports {
					continue
				}
				where := "answer"
				if r.isErr {
					where = "error message"
				}
				t.Errorf("%s appears in the %s of %s (%s %s)", v.label, where, r.method, version, r.what)
			}
		}
	}
	s.searchLogs(t, searched)
}

// panicOnce makes the backend panic after it minted credentials, when the options say how, so
// the panic report is searched too.
func (s *cosiSuite) panicOnce(t reporter) {
	if s.opts.ArmPanic == nil {
		t.Logf("drivertest: no COSIOptions.ArmPanic: a panic report was not searched for credentials")
		return
	}
	bucket, _, err := s.c.create(expectCall(context.Background(), "DriverCreateBucket for the panic"), bucketName(), s.opts.BucketParameters)
	if err != nil {
		t.Errorf("DriverCreateBucket for the panic: %s", cosiCode(err))
		return
	}
	s.cleanupBucket(t, bucket.ID)
	account := accountName()
	s.opts.ArmPanic()
	_, _, err = s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess while the backend is armed to panic"), account, []string{bucket.ID}, s.opts.AccessParameters)
	switch code := status.Code(err); code {
	case codes.OK:
		t.Errorf("DriverGrantBucketAccess{account_name %q} after COSIOptions.ArmPanic answered OK: the backend did not panic, so no panic report was searched", account)
	case codes.Internal, codes.Unknown:
	default:
		t.Errorf("DriverGrantBucketAccess{account_name %q} whose backend panicked answered %s; want INTERNAL (a panic is no answer the sidecar may give up on)", account, cosiCode(err))
	}
	// The repeat answers the credentials minted before the panic (the backend stored them), so
	// the recorder knows what to search the panic report for.
	a, _, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess repeated after the panic"), account, []string{bucket.ID}, s.opts.AccessParameters)
	if err != nil {
		t.Errorf("DriverGrantBucketAccess{account_name %q} repeated after the backend panicked: %s; want OK", account, cosiCode(err))
		return
	}
	s.cleanupAccess(t, a.AccountID, []string{bucket.ID})
	if logs := s.opts.Logs; logs != nil && !strings.Contains(strings.ToLower(logs()), "panic") {
		t.Logf("drivertest: no log line mentions the panic, so there was no panic report to search")
	}
}

// searchLogs reports every log line holding a value, by line number; the line is printed with
// every credential masked (the reporter scrubs), never the value.
func (s *cosiSuite) searchLogs(t reporter, values []secretValue) {
	if s.opts.Logs == nil {
		t.Logf("drivertest: no COSIOptions.Logs: the driver's log lines were not searched for credentials")
		return
	}
	logs := s.opts.Logs()
	if strings.TrimSpace(logs) == "" {
		t.Errorf("the driver logged nothing, so the canary cannot search its logs; give its debug-level logs as COSIOptions.Logs")
		return
	}
	lines := strings.Split(logs, "\n")
	for _, v := range values {
		n := 0
		for i, line := range lines {
			if !strings.Contains(line, v.value) {
				continue
			}
			if n++; n <= cosiMaxReports {
				// Masked before it is cut, so no half of a value escapes the mask.
				t.Errorf("%s appears in log line %d: %s", v.label, i+1, cosiTruncate(s.rec.scrub(line), 400))
			}
		}
		if n > cosiMaxReports {
			t.Errorf("%s appears in %d log lines in all", v.label, n)
		}
	}
}

func cosiTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// checkTerminalCodes reports every call of the version that answered a terminal code where the
// table does not put one; the calls are the ones of every check before it.
func checkTerminalCodes(t reporter, s *cosiSuite) {
	for _, v := range s.rec.takeViolations(s.c.version()) {
		t.Errorf("%s", v)
	}
}
