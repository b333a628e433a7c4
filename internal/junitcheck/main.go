// Command junitcheck judges a JUnit report written by the upstream csi-sanity v5.6.0 binary
// (--csi.junitfile) and exits non-zero unless every spec that ran passed, apart from the failures
// documented in knownFailures. It reads the report rather than csi-sanity's exit status, because
// that status is 1 for the documented failure too, and it reads the XML rather than the console
// summary, whose wording and colour codes are not an interface.
//
//	go run ./internal/junitcheck -report junit.xml -exit "$rc" -min-passed 101
package main

import (
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// knownFailure is a csi-sanity spec that fails against a correct driver, with the words its
// failure must contain: the same spec failing for another reason (an RPC error, say) is a real
// failure and is not excused.
type knownFailure struct {
	// Spec is the spec's full text as the report names it, without ginkgo's "[It] " prefix.
	Spec string
	// MustContain are substrings the failure text must all hold.
	MustContain []string
	// Same, when set, must accept the failure message: it tells the documented cause from a
	// real fault that fails the same assertion.
	Same func(message string) bool
	// Why is printed beside the spec, so the log explains itself.
	Why string
}

// knownFailures are the failures docs/proving-a-driver.md documents ("The upstream csi-sanity binary").
var knownFailures = []knownFailure{{
	Spec:        "CreateSnapshot [Controller Server] should succeed when creating a snapshot with accessibility requirements",
	MustContain: []string{"*csi.Topology", "to equal"},
	Same:        sameSegments,
	Why: "csi-sanity v5.6.0 compares the snapshot's topology with the node's using gomega's Equal (reflect.DeepEqual) on " +
		"*csi.Topology: the node's copy was marshalled into the request and caches its size (sizeCache), the answer's was not, " +
		"so equal segments compare unequal",
}}

// segmentsRE finds the Segments maps in gomega's dump of two *csi.Topology values.
var segmentsRE = regexp.MustCompile(`Segments: \{([^}]*)\}`)

// sameSegments reports whether gomega's "Expected <*csi.Topology> to equal <*csi.Topology>"
// message compares two topologies with identical segments: only then is the failure the
// reflect.DeepEqual artefact, and not a driver answering with the wrong topology.
func sameSegments(message string) bool {
	m := segmentsRE.FindAllStringSubmatch(message, -1)
	return len(m) == 2 && m[0][1] == m[1][1] && strings.TrimSpace(m[0][1]) != ""
}

// testcase is one <testcase> of ginkgo's JUnit report.
type testcase struct {
	Name     string   `xml:"name,attr"`
	Status   string   `xml:"status,attr"`
	Failures []detail `xml:"failure"`
	Errors   []detail `xml:"error"`
	Skipped  *detail  `xml:"skipped"`
}

type detail struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// outcome is a spec's result as junitcheck judges it.
type outcome int

const (
	passed outcome = iota
	failed
	skipped
)

func (tc testcase) outcome() (outcome, error) {
	if len(tc.Failures)+len(tc.Errors) > 0 {
		return failed, nil
	}
	switch tc.Status {
	case "passed", "":
		// A report without status attributes marks skips with <skipped>.
		if tc.Skipped != nil {
			return skipped, nil
		}
		return passed, nil
	case "skipped", "pending":
		return skipped, nil
	case "failed", "panicked", "interrupted", "aborted", "timedout":
		return failed, nil
	}
	// An unknown status is not counted as a pass: a new ginkgo state must be looked at.
	return failed, fmt.Errorf("unknown status %q", tc.Status)
}

func (tc testcase) failureText() string {
	var b strings.Builder
	for _, d := range append(slices.Clone(tc.Failures), tc.Errors...) {
		b.WriteString(d.Message)
		b.WriteByte('\n')
		b.WriteString(d.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// known returns the documented failure tc is, if it is one.
func (tc testcase) known() (knownFailure, bool) {
	name := strings.TrimPrefix(tc.Name, "[It] ")
	text := tc.failureText()
	for _, k := range knownFailures {
		if name != k.Spec {
			continue
		}
		for _, s := range k.MustContain {
			if !strings.Contains(text, s) {
				return knownFailure{}, false
			}
		}
		if k.Same != nil && (len(tc.Failures) != 1 || len(tc.Errors) != 0 || !k.Same(tc.Failures[0].Message)) {
			return knownFailure{}, false
		}
		return k, true
	}
	return knownFailure{}, false
}

// readReport returns every <testcase>, wherever it is nested (ginkgo writes testsuites >
// testsuite > testcase; other writers omit the outer element).
func readReport(r io.Reader) ([]testcase, error) {
	dec := xml.NewDecoder(r)
	var cases []testcase
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return cases, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parse JUnit XML: %w", err)
		}
		if start, ok := tok.(xml.StartElement); ok && start.Name.Local == "testcase" {
			var tc testcase
			if err := dec.DecodeElement(&tc, &start); err != nil {
				return nil, fmt.Errorf("parse JUnit XML testcase: %w", err)
			}
			cases = append(cases, tc)
		}
	}
}

// verdict is the judgement of one report.
type verdict struct {
	Passed, Skipped int
	Known           []string // documented failures, excused
	Unexpected      []string // everything else that failed
	SkippedNames    []string
}

func judge(cases []testcase) verdict {
	var v verdict
	for _, tc := range cases {
		o, err := tc.outcome()
		switch {
		case err != nil:
			v.Unexpected = append(v.Unexpected, fmt.Sprintf("%s (%v)", tc.Name, err))
		case o == passed:
			v.Passed++
		case o == skipped:
			v.Skipped++
			reason := ""
			if tc.Skipped != nil && tc.Skipped.Message != "" {
				reason = ": " + tc.Skipped.Message
			}
			v.SkippedNames = append(v.SkippedNames, tc.Name+reason)
		default:
			if k, ok := tc.known(); ok {
				v.Known = append(v.Known, tc.Name+"\n      why: "+k.Why)
			} else {
				v.Unexpected = append(v.Unexpected, tc.Name)
			}
		}
	}
	return v
}

// check applies every rule to a report and csi-sanity's exit status, and returns the summary
// and, if the run is not a pass, why.
func check(cases []testcase, exitCode, minPassed int) (string, error) {
	if len(cases) == 0 {
		return "", errors.New("the report holds no specs: csi-sanity did not run (see its output above)")
	}
	v := judge(cases)
	var b strings.Builder
	fmt.Fprintf(&b, "csi-sanity: %d specs: %d passed, %d failed as documented, %d failed unexpectedly, %d skipped or pending\n",
		len(cases), v.Passed, len(v.Known), len(v.Unexpected), v.Skipped)
	for _, n := range v.Known {
		fmt.Fprintf(&b, "  documented failure: %s\n", n)
	}
	for _, n := range v.SkippedNames {
		fmt.Fprintf(&b, "  skipped: %s\n", n)
	}
	for _, n := range v.Unexpected {
		fmt.Fprintf(&b, "  FAILED: %s\n", n)
	}
	switch {
	case len(v.Unexpected) > 0:
		return b.String(), fmt.Errorf("%d specs failed that are not documented failures", len(v.Unexpected))
	case v.Passed < minPassed:
		return b.String(), fmt.Errorf("only %d specs passed, want at least %d: specs that used to run were skipped (a capability lost, or a flag missing)", v.Passed, minPassed)
	case exitCode == 0 && len(v.Known) > 0:
		return b.String(), fmt.Errorf("csi-sanity exited 0 although its report shows %d failures: the report is not from this run", len(v.Known))
	case exitCode != 0 && len(v.Known) == 0:
		return b.String(), fmt.Errorf("csi-sanity exited %d although its report shows no failure: see its output", exitCode)
	}
	return b.String(), nil
}

func main() {
	report := flag.String("report", "", "JUnit XML file written by csi-sanity --csi.junitfile")
	exitCode := flag.Int("exit", -1, "csi-sanity's exit status")
	minPassed := flag.Int("min-passed", 1, "fewest specs that must pass")
	flag.Parse()
	if *report == "" || *exitCode < 0 {
		fmt.Fprintln(os.Stderr, "usage: junitcheck -report junit.xml -exit STATUS [-min-passed N]")
		os.Exit(2)
	}
	f, err := os.Open(*report)
	if err != nil {
		fmt.Fprintf(os.Stderr, "junitcheck: %v (did csi-sanity run with --csi.junitfile?)\n", err)
		os.Exit(1)
	}
	cases, err := readReport(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "junitcheck: %s: %v\n", *report, err)
		os.Exit(1)
	}
	summary, err := check(cases, *exitCode, *minPassed)
	fmt.Print(summary)
	if err != nil {
		fmt.Fprintf(os.Stderr, "junitcheck: FAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("junitcheck: PASS")
}
