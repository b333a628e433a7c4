// Command testsummary reads `go test -json` on its standard input and writes a log a person can
// follow in CI: a line per package as it ends, the whole output of every test that failed, a
// line naming what still runs whenever nothing was printed for a while (a long package is
// never silent for more than -every), the slowest packages, and a closing line
// "N passed, N failed, N skipped". It exits 1 when a test or a package failed, or when a check
// below fails.
//
//	go test -race -json work | go run ./internal/testsummary
//	CSIKIT_SYSTEM=1 go test -race -json work | go run ./internal/testsummary -system
//
// -v prints every line of the tests' output as it comes, as go test -v does.
//
// -system is for the system tier's stages: it fails unless at least one system test ran and
// passed (testenv.System logs testenv.SystemMarker in each), and when any system test skipped,
// so a stage cannot go green with its clusters never started.
//
// It reads the JSON rather than `go test -v`'s text because the go command streams -json
// output of packages tested side by side as it comes, while it holds -v output back until each
// package ends.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/csikit/csikit/internal/testenv"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// ImportPath names the package of a build event (build-output, build-fail).
	ImportPath string
}

// testKey names a test, or a package's own output when Test is "".
type testKey struct{ pkg, test string }

// summary is the state of a run, fed one event at a time. Its methods are not safe for
// concurrent use: main serialises them.
type summary struct {
	out     io.Writer
	system  bool
	verbose bool

	// started is when each package and each running test began (Test "" for a package).
	started map[testKey]time.Time
	// output holds what a test (or a package, Test "") printed, until it ends.
	output map[testKey][]string
	// systemTests are the running tests that logged testenv.SystemMarker.
	systemTests map[testKey]bool

	passed, failed, skipped int
	systemPassed            int
	// problems are the -system checks that failed, and the packages that failed.
	problems []string
	// elapsed is each ended package's time, for the slowest list.
	elapsed map[string]float64
	// lastPrint is when the summary last wrote a line: the heartbeat speaks after a silence.
	lastPrint time.Time
}

func newSummary(out io.Writer, system, verbose bool, now time.Time) *summary {
	return &summary{
		out: out, system: system, verbose: verbose,
		started: map[testKey]time.Time{}, output: map[testKey][]string{}, systemTests: map[testKey]bool{},
		elapsed: map[string]float64{}, lastPrint: now,
	}
}

func (s *summary) printf(now time.Time, format string, args ...any) {
	fmt.Fprintf(s.out, format, args...)
	s.lastPrint = now
}

// event takes one event; now is when it was read (the heartbeat's clock).
func (s *summary) event(e event, now time.Time) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "start", "run":
		s.started[k] = now
	case "output":
		if s.verbose {
			s.printf(now, "%s", e.Output)
		}
		s.output[k] = append(s.output[k], e.Output)
		if e.Test != "" && strings.Contains(e.Output, testenv.SystemMarker) {
			s.systemTests[k] = true
		}
	case "build-output":
		// A compile error: as the go command would print it, at once.
		s.printf(now, "%s", e.Output)
	case "build-fail":
		s.problems = append(s.problems, "build of "+e.ImportPath+" failed")
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.endPackage(e, now)
		} else {
			s.endTest(e, k, now)
		}
	}
}

func (s *summary) endTest(e event, k testKey, now time.Time) {
	delete(s.started, k)
	out := s.output[k]
	delete(s.output, k)
	switch e.Action {
	case "pass":
		s.passed++
		if s.systemTests[k] {
			s.systemPassed++
		}
	case "fail":
		s.failed++
		if s.verbose {
			out = nil // printed as it came
		}
		s.printf(now, "--- FAIL: %s %s (%.1fs)\n%s", e.Package, e.Test, e.Elapsed, strings.Join(out, ""))
	case "skip":
		s.skipped++
		if s.system && (s.systemTests[k] || gateSkip(out)) {
			s.problems = append(s.problems, fmt.Sprintf("system test %s %s skipped: %s", e.Package, e.Test, lastLines(out, 3)))
		}
	}
	delete(s.systemTests, k)
}

// gateSkip reports whether a skipped test's output is testenv.System's skip: a system test
// that did not run because CSIKIT_SYSTEM was not set.
func gateSkip(out []string) bool {
	return slices.ContainsFunc(out, func(line string) bool { return strings.Contains(line, "runs with "+testenv.SystemEnv+"=1") })
}

func (s *summary) endPackage(e event, now time.Time) {
	k := testKey{e.Package, ""}
	delete(s.started, k)
	out := s.output[k]
	delete(s.output, k)
	s.elapsed[e.Package] = e.Elapsed
	switch e.Action {
	case "pass":
		s.printf(now, "ok   %s %.1fs\n", e.Package, e.Elapsed)
	case "skip":
		// No test files: nothing to say.
	case "fail":
		s.problems = append(s.problems, "package "+e.Package+" failed")
		s.unfinished(e.Package, now)
		if s.verbose {
			out = nil // printed as it came
		}
		// The package's own output: a panic, a race report, a build error, the closing FAIL.
		s.printf(now, "FAIL %s %.1fs\n%s", e.Package, e.Elapsed, strings.Join(out, ""))
	}
}

// unfinished reports the tests of pkg that never ended: the test binary died under them (a
// test timeout's panic, a crash), and what it printed on the way out is in their output.
func (s *summary) unfinished(pkg string, now time.Time) {
	var tests []string
	for k := range s.started {
		if k.pkg == pkg && k.test != "" {
			tests = append(tests, k.test)
		}
	}
	slices.Sort(tests)
	for _, test := range tests {
		k := testKey{pkg, test}
		s.failed++
		out := s.output[k]
		if s.verbose {
			out = nil // printed as it came
		}
		s.printf(now, "--- UNFINISHED: %s %s (the test binary ended while it ran)\n%s", pkg, test, strings.Join(out, ""))
		delete(s.started, k)
		delete(s.output, k)
		delete(s.systemTests, k)
	}
}

// tick prints what still runs if nothing was printed for every: the log's proof of life.
func (s *summary) tick(now time.Time, every time.Duration) {
	if now.Sub(s.lastPrint) < every {
		return
	}
	var tests, pkgs []string
	for k, began := range s.started {
		took := now.Sub(began).Round(time.Second)
		switch {
		case k.test == "":
			pkgs = append(pkgs, fmt.Sprintf("%s (%s)", k.pkg, took))
		case !strings.Contains(k.test, "/"): // a subtest shows through its parent
			tests = append(tests, fmt.Sprintf("%s %s (%s)", k.pkg, k.test, took))
		}
	}
	slices.Sort(tests)
	slices.Sort(pkgs)
	switch {
	case len(tests) > 0:
		s.printf(now, "... still running: %s\n", strings.Join(tests, ", "))
	case len(pkgs) > 0:
		s.printf(now, "... packages started, no test running: %s\n", strings.Join(pkgs, ", "))
	default:
		s.printf(now, "... compiling\n")
	}
}

// finish prints the slowest packages, the closing counts and what failed, and reports whether
// the run is green.
func (s *summary) finish(slowest int) bool {
	pkgs := make([]string, 0, len(s.elapsed))
	for p := range s.elapsed {
		pkgs = append(pkgs, p)
	}
	slices.SortFunc(pkgs, func(a, b string) int {
		if s.elapsed[a] != s.elapsed[b] {
			if s.elapsed[a] > s.elapsed[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(pkgs) > slowest {
		pkgs = pkgs[:slowest]
	}
	if len(pkgs) > 0 {
		fmt.Fprintf(s.out, "slowest packages:\n")
		for _, p := range pkgs {
			fmt.Fprintf(s.out, "  %6.1fs %s\n", s.elapsed[p], p)
		}
	}
	if s.system && s.systemPassed == 0 {
		s.problems = append(s.problems, "no system test ran: set "+testenv.SystemEnv+"=1 (testenv.System)")
	}
	if s.system {
		fmt.Fprintf(s.out, "system tests passed: %d\n", s.systemPassed)
	}
	for _, p := range s.problems {
		fmt.Fprintf(s.out, "PROBLEM: %s\n", p)
	}
	// The closing line CI's runner reads.
	fmt.Fprintf(s.out, "%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
	return s.failed == 0 && len(s.problems) == 0
}

// lastLines is the last n non-blank lines of out, joined, for a one-line reason.
func lastLines(out []string, n int) string {
	var lines []string
	for _, o := range out {
		if t := strings.TrimSpace(o); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
			lines = append(lines, t)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// run reads events from in until it ends, with a heartbeat every every, and reports whether
// the run is green. A line that is not JSON (the go command's own messages) is passed through.
func run(in io.Reader, out io.Writer, system, verbose bool, every time.Duration, slowest int) (bool, error) {
	s := newSummary(out, system, verbose, time.Now())
	var mu sync.Mutex
	done := make(chan struct{})
	var beat sync.WaitGroup
	beat.Go(func() {
		ticker := time.NewTicker(every / 4)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-ticker.C:
				mu.Lock()
				s.tick(now, every)
				mu.Unlock()
			}
		}
	})
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		mu.Lock()
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			s.printf(time.Now(), "%s\n", line)
		} else {
			s.event(e, time.Now())
		}
		mu.Unlock()
	}
	// The heartbeat stops before the closing lines, so that nothing follows them.
	close(done)
	beat.Wait()
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("reading go test -json: %w", err)
	}
	return s.finish(slowest), nil
}

func main() {
	system := flag.Bool("system", false, "fail unless a system test ran, and if one skipped")
	verbose := flag.Bool("v", false, "print every line of output as it comes, as go test -v does")
	every := flag.Duration("every", 30*time.Second, "after this long without a line, print what still runs")
	slowest := flag.Int("slowest", 10, "list this many of the slowest packages")
	flag.Parse()
	ok, err := run(os.Stdin, os.Stdout, *system, *verbose, *every, *slowest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
