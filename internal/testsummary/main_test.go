package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/internal/testenv"
)

// ev builds one `go test -json` line.
func ev(action, pkg, test, output string) string {
	b, err := json.Marshal(event{Action: action, Package: pkg, Test: test, Output: output, Elapsed: 1.5})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// systemPass is a system test that ran and passed.
func systemPass(pkg, test string) []string {
	return []string{
		ev("run", pkg, test, ""),
		ev("output", pkg, test, "    x_test.go:9: "+testenv.SystemMarker+" starts a one-node Ceph\n"),
		ev("pass", pkg, test, ""),
	}
}

func TestRun(t *testing.T) {
	const pkg = "github.com/csikit/csikit/internal/cephtest"
	gateSkipped := []string{
		ev("run", pkg, "TestBringUp", ""),
		ev("output", pkg, "TestBringUp", "    cephtest.go:1: system tier (starts a one-node Ceph): runs with CSIKIT_SYSTEM=1, as root\n"),
		ev("skip", pkg, "TestBringUp", ""),
	}
	for _, tc := range []struct {
		name            string
		system, verbose bool
		lines           []string
		ok              bool
		// want must all appear in the output, and none of wantNot.
		want, wantNot []string
	}{
		{"passing tests print their package and the closing counts", false, false, []string{
			ev("start", pkg, "", ""), ev("run", pkg, "TestA", ""), ev("output", pkg, "TestA", "noise\n"),
			ev("pass", pkg, "TestA", ""), ev("pass", pkg, "", ""),
		}, true, []string{"ok   " + pkg, "1 passed, 0 failed, 0 skipped", "slowest packages:"}, []string{"noise"}},
		{"a failing test prints its output", false, false, []string{
			ev("run", pkg, "TestA", ""), ev("output", pkg, "TestA", "    a_test.go:3: wanted interrupted\n"),
			ev("fail", pkg, "TestA", ""), ev("fail", pkg, "", ""),
		}, false, []string{"--- FAIL: " + pkg + " TestA", "wanted interrupted", "FAIL " + pkg, "0 passed, 1 failed"}, nil},
		{"a package failing outside any test fails the run", false, false, []string{
			ev("output", pkg, "", "panic: boom\n"), ev("fail", pkg, "", ""),
		}, false, []string{"panic: boom", "PROBLEM: package " + pkg + " failed"}, nil},
		{"a test the binary's death interrupted is reported with its output", false, false, []string{
			ev("run", pkg, "TestLong", ""), ev("run", pkg, "TestLong/sub", ""),
			ev("output", pkg, "TestLong/sub", "panic: test timed out after 10m0s\n"), ev("fail", pkg, "", ""),
		}, false, []string{"--- UNFINISHED: " + pkg + " TestLong/sub", "panic: test timed out", "--- UNFINISHED: " + pkg + " TestLong ", "0 passed, 2 failed"}, nil},
		{"a build error is printed and fails the run", false, false, []string{
			`{"ImportPath":"example.com/x","Action":"build-output","Output":"x.go:1: syntax error\n"}`,
			`{"ImportPath":"example.com/x","Action":"build-fail"}`,
		}, false, []string{"x.go:1: syntax error", "PROBLEM: build of example.com/x failed"}, nil},
		{"lines that are not JSON pass through", false, false, []string{"go: downloading example.com/x v1.0.0"},
			true, []string{"go: downloading example.com/x v1.0.0"}, nil},
		{"unit tier: a gated system test skips quietly", false, false, gateSkipped,
			true, []string{"0 passed, 0 failed, 1 skipped"}, []string{"PROBLEM"}},
		{"system tier: a system test ran", true, false, systemPass(pkg, "TestBringUp"),
			true, []string{"system tests passed: 1", "1 passed, 0 failed, 0 skipped"}, []string{"PROBLEM"}},
		{"system tier: nothing ran", true, false, []string{ev("run", pkg, "TestA", ""), ev("pass", pkg, "TestA", "")},
			false, []string{"PROBLEM: no system test ran"}, nil},
		{"system tier: a gated skip is a problem", true, false, append(systemPass(pkg, "TestS3"), gateSkipped...),
			false, []string{"PROBLEM: system test " + pkg + " TestBringUp skipped: ", "CSIKIT_SYSTEM=1"}, nil},
		{"system tier: a skip after the gate is a problem", true, false, []string{
			ev("run", pkg, "TestFuse", ""),
			ev("output", pkg, "TestFuse", "    x_test.go:9: "+testenv.SystemMarker+" starts a one-node Ceph\n"),
			ev("output", pkg, "TestFuse", "    x_test.go:10: needs root: ceph-fuse mounts\n"),
			ev("skip", pkg, "TestFuse", ""),
		}, false, []string{"PROBLEM: system test " + pkg + " TestFuse skipped: ", "needs root"}, nil},
		{"system tier: other skips are no problem", true, false, append(systemPass(pkg, "TestS3"),
			ev("run", pkg, "TestChild", ""), ev("output", pkg, "TestChild", "runs only as a child\n"), ev("skip", pkg, "TestChild", "")),
			true, []string{"1 passed, 0 failed, 1 skipped"}, []string{"PROBLEM"}},
		{"verbose: output as it comes, printed once", false, true, []string{
			ev("run", pkg, "TestA", ""), ev("output", pkg, "TestA", "    a_test.go:3: step one\n"),
			ev("fail", pkg, "TestA", ""), ev("fail", pkg, "", ""),
		}, false, []string{"step one", "--- FAIL: " + pkg + " TestA"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			ok, err := run(strings.NewReader(strings.Join(tc.lines, "\n")+"\n"), &out, tc.system, tc.verbose, time.Hour, 5)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok {
				t.Errorf("green %v, want %v", ok, tc.ok)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in the output:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out.String(), w) {
					t.Errorf("want no %q in the output:\n%s", w, out.String())
				}
			}
			for _, line := range tc.lines {
				var e event
				if json.Unmarshal([]byte(line), &e) == nil && e.Action == "output" && strings.Count(out.String(), e.Output) > 1 {
					t.Errorf("output %q printed more than once:\n%s", e.Output, out.String())
				}
			}
		})
	}
}

// TestHeartbeat: after a silence as long as every, tick names what runs (top-level tests, or
// the packages when no test has started, or the build); before it, and right after a line,
// tick says nothing.
func TestHeartbeat(t *testing.T) {
	const every = 30 * time.Second
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		events []event
		// after is how long after the last line tick runs.
		after time.Duration
		want  string
	}{
		{"nothing yet", nil, every, "... compiling\n"},
		{"a silence shorter than every", []event{{Action: "start", Package: "p"}}, every - time.Second, ""},
		{"packages started", []event{{Action: "start", Package: "p"}, {Action: "start", Package: "q"}},
			every, "... packages started, no test running: p (30s), q (30s)\n"},
		{"tests running, subtests through their parents", []event{
			{Action: "start", Package: "p"}, {Action: "run", Package: "p", Test: "TestLong"},
			{Action: "run", Package: "p", Test: "TestLong/case"}, {Action: "run", Package: "q", Test: "TestB"},
		}, every, "... still running: p TestLong (30s), q TestB (30s)\n"},
		{"a line resets the silence", []event{{Action: "run", Package: "p", Test: "TestA"}, {Action: "fail", Package: "p", Test: "TestA"}},
			every - time.Second, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			s := newSummary(&out, false, false, start)
			for _, e := range tc.events {
				s.event(e, start)
			}
			out.Reset()
			s.tick(start.Add(tc.after), every)
			if out.String() != tc.want {
				t.Errorf("tick printed %q, want %q", out.String(), tc.want)
			}
		})
	}
}
