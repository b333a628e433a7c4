// Package testenv says what a test needs from the machine it runs on. Outside CI a missing
// privilege or tool skips the test, saying why and what to install; under CI (CSIKIT_CI=1,
// which .ci/run sets after installing every tool the tests use) it fails the test instead,
// because a skip there would hide a test that never ran behind a green run.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CIEnv is the variable .ci/run sets: every test must then run.
const CIEnv = "CSIKIT_CI"

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
