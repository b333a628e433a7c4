// Package testenv says what a test needs from the machine it runs on. Outside CI a missing
// privilege or tool skips the test, saying why and what to install; under CI (CSIKIT_CI=1,
// which .ci/run sets after installing every tool the tests use) it fails the test instead,
// because a skip there would hide a test that never ran behind a green run.
//
// Tests come in two tiers. The unit tier is `go test -race work`: it runs on any machine and
// never starts a cluster or an engine. The system tier is the tests that do (a one-node Ceph,
// say): they run only when CSIKIT_SYSTEM=1 asks for them (System), so that installing a
// package never turns the unit tier into a half-hour run.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CIEnv is the variable .ci/run sets: every test must then run.
const CIEnv = "CSIKIT_CI"

// SystemEnv is the variable that opts into the system tier: set to 1, tests that start
// clusters or engines run (System); unset, they skip.
const SystemEnv = "CSIKIT_SYSTEM"

// SystemMarker begins the line System logs in a system test that runs: CI's summary
// (internal/testsummary -system) counts the tests that printed it to prove that the system
// tier ran, and did not skip.
const SystemMarker = "testenv: system test:"

// InCI reports whether the tests run under CI, where nothing may be skipped for want of a
// tool or privilege.
func InCI() bool { return os.Getenv(CIEnv) != "" }

// Skip skips t with the reason, or fails it under CI.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (%s is set: CI must run every test)", reason, CIEnv)
	}
	t.Skip(reason)
}

// Root skips (or fails, under CI) a test that needs to run as root, saying what for.
func Root(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root: %s", what)
	}
}

// Tool returns the path of the command name, or skips (fails, under CI) naming the Debian
// package that provides it.
func Tool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Skip(t, "needs %s: install the Debian package %s (%v)", name, debianPackage, err)
	}
	return path
}

// InSystem reports whether the system tier was asked for (CSIKIT_SYSTEM=1).
func InSystem() bool { return os.Getenv(SystemEnv) == "1" }

// System marks t as a system test: one that starts a cluster or an engine, which what says
// (such as "starts a one-node Ceph"). Unless CSIKIT_SYSTEM=1 it skips t, saying how to run it.
// That skip is plain under CI too: CI runs the system tier in stages of its own, with
// CSIKIT_SYSTEM=1, where a missing tool fails the test as Skip does. Call it before any other
// check, so that the unit tier skips the test for being a system test and for nothing else.
func System(t testing.TB, what string) {
	t.Helper()
	if !InSystem() {
		t.Skipf("system tier (%s): runs with %s=1, as root with the packages .ci/run installs: "+
			"sudo %s=1 go test -race work (examples/cephfs: ./... in its directory)", what, SystemEnv, SystemEnv)
	}
	t.Logf("%s %s", SystemMarker, what)
}
