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

// TestSystemGate runs a child system test under each setting of CSIKIT_SYSTEM and CSIKIT_CI:
// without CSIKIT_SYSTEM=1 it skips saying how to run it, under CI too (CI runs the system tier
// in stages of its own); with it the test logs SystemMarker and goes on to its tool checks,
// where a missing tool skips outside CI and fails under it.
func TestSystemGate(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		System(t, "starts a pretend engine")
		Tool(t, "csikit-no-such-tool", "no-such-package")
		return
	}
	for _, tc := range []struct {
		name, system, ci string
		// want must all appear in the child's output, and none of wantNot.
		want, wantNot []string
	}{
		{"unit tier", "", "", []string{"--- SKIP", "starts a pretend engine", SystemEnv + "=1"}, []string{SystemMarker}},
		{"unit tier under CI skips too", "", "1", []string{"--- SKIP", SystemEnv + "=1"}, []string{SystemMarker, "--- FAIL"}},
		{"only 1 opts in", "yes", "1", []string{"--- SKIP", SystemEnv + "=1"}, []string{SystemMarker, "--- FAIL"}},
		{"system tier, missing tool", "1", "", []string{SystemMarker, "--- SKIP", "no-such-package"}, []string{"--- FAIL"}},
		{"system tier under CI, missing tool fails", "1", "1", []string{SystemMarker, "--- FAIL", "no-such-package"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestSystemGate$", "-test.v")
			cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", CIEnv+"="+tc.ci, SystemEnv+"="+tc.system)
			out, _ := cmd.CombinedOutput()
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s=%q %s=%q: want %q in the output:\n%s", SystemEnv, tc.system, CIEnv, tc.ci, w, out)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(string(out), w) {
					t.Errorf("%s=%q %s=%q: want no %q in the output:\n%s", SystemEnv, tc.system, CIEnv, tc.ci, w, out)
				}
			}
		})
	}
}
