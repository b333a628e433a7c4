package drivertest

import (
	"fmt"
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
}

// testReporter is a *testing.T whose every message passes through scrub, so that no credential
// the suite has seen is ever printed, whatever text a driver put in its errors or logs.
type testReporter struct {
	t     *testing.T
	scrub func(string) string
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
	r.t.Error(r.scrub(fmt.Sprintf(format, args...)))
}

func (r *testReporter) Fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatal(r.scrub(fmt.Sprintf(format, args...)))
}

func (r *testReporter) Skipf(format string, args ...any) {
	r.t.Helper()
	r.t.Skip(r.scrub(fmt.Sprintf(format, args...)))
}

func (r *testReporter) Cleanup(f func()) { r.t.Cleanup(f) }

func (r *testReporter) Failed() bool { return r.t.Failed() }

func (r *testReporter) Run(name string, f func(t reporter)) bool {
	return r.t.Run(name, func(t *testing.T) { f(&testReporter{t: t, scrub: r.scrub}) })
}

// scrubbable is a reporter whose messages can be scrubbed of credentials.
type scrubbable interface {
	setScrub(func(string) string)
}
