package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSkipFailsUnderCI runs a child test with and without CSIKIT_CI and checks the outcome: a
// skip outside CI, a failure inside it.
func TestSkipFailsUnderCI(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		Tool(t, "csikit-no-such-tool", "no-such-package")
		return
	}
	for _, tc := range []struct {
		ci   bool
		want string
	}{{false, "--- SKIP"}, {true, "--- FAIL"}} {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestSkipFailsUnderCI$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", CIEnv+"=")
		if tc.ci {
			cmd.Env = append(cmd.Env, CIEnv+"=1")
		}
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "no-such-package") {
			t.Errorf("CSIKIT_CI=%v: want %q naming the package, got:\n%s", tc.ci, tc.want, out)
		}
	}
}
