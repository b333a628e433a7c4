package cluster

import (
	"os"
	"strings"
	"testing"
)

// SkipOrFail skips with the reason, or fails when CSIKIT_E2E_REQUIRE is set (CI sets it: a
// suite that silently skips proves nothing).
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CSIKIT_E2E_REQUIRE") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// SkipOrFailBuild ends the test when the cluster could not start.
func SkipOrFailBuild(t testing.TB, err error) {
	t.Helper()
	if strings.HasPrefix(err.Error(), "build:") {
		SkipOrFail(t, "the binaries cannot be built: %v", err)
	}
	t.Fatal(err)
}
