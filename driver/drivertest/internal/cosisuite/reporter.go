package cosisuite

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// reporter is the part of *testing.T the COSI suite uses. The suite runs on this interface
// rather than on *testing.T so that its own tests can run it against a planted-bug driver and
// read which rules failed, without failing themselves.
type reporter interface {
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
	Failed() bool
	Run(name string, f func(t reporter)) bool
	// setNote makes the reporter, and the subtests it starts from then on, also write what they
	// report into n, for the Result. Call it before anything is reported.
	setNote(n *specNote)
}

// specNote is what one spec of the Result reported: its failure messages and its skip reason,
// already scrubbed of credentials. Checks may report from several goroutines.
type specNote struct {
	mu       sync.Mutex
	failures []string
	skip     string
	skipped  bool
}

func (n *specNote) fail(msg string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failures = append(n.failures, msg)
}

func (n *specNote) skipWith(reason string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.skipped, n.skip = true, reason
}

// outcome is the spec's state once it has ended: failed (with its messages joined), skipped
// (with the reason), or passed.
func (n *specNote) outcome() (failed bool, msg string, skipped bool, reason string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.failures) > 0, strings.Join(n.failures, "\n"), n.skipped, n.skip
}

// testReporter is a *testing.T whose every message passes through scrub, so that no credential
// the suite has seen is ever printed, whatever text a driver put in its errors or logs.
type testReporter struct {
	t     *testing.T
	scrub func(string) string
	note  *specNote
}

func newTestReporter(t *testing.T) *testReporter {
	return &testReporter{t: t, scrub: func(s string) string { return s }}
}

// setScrub replaces the scrubber; the recorder installs its own once it exists.
func (r *testReporter) setScrub(f func(string) string) { r.scrub = f }

func (r *testReporter) Logf(format string, args ...any) {
	r.t.Helper()
	r.t.Log(r.scrub(fmt.Sprintf(format, args...)))
}

func (r *testReporter) Errorf(format string, args ...any) {
	r.t.Helper()
	msg := r.scrub(fmt.Sprintf(format, args...))
	r.note.fail(msg)
	r.t.Error(msg)
}

func (r *testReporter) Fatalf(format string, args ...any) {
	r.t.Helper()
	msg := r.scrub(fmt.Sprintf(format, args...))
	r.note.fail(msg)
	r.t.Fatal(msg)
}

func (r *testReporter) Skipf(format string, args ...any) {
	r.t.Helper()
	msg := r.scrub(fmt.Sprintf(format, args...))
	r.note.skipWith(msg)
	r.t.Skip(msg)
}

func (r *testReporter) setNote(n *specNote) { r.note = n }

func (r *testReporter) Cleanup(f func()) { r.t.Cleanup(f) }

func (r *testReporter) Failed() bool { return r.t.Failed() }

func (r *testReporter) Run(name string, f func(t reporter)) bool {
	return r.t.Run(name, func(t *testing.T) { f(&testReporter{t: t, scrub: r.scrub, note: r.note}) })
}

// scrubbable is a reporter whose messages can be scrubbed of credentials.
type scrubbable interface {
	setScrub(func(string) string)
}
