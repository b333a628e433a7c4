package main

import (
	"os"
	"strings"
	"testing"
)

const topologySpec = "[It] CreateSnapshot [Controller Server] should succeed when creating a snapshot with accessibility requirements"

// topologyFailure is the failure message csi-sanity v5.6.0 writes for the documented spec, with
// the two segment maps given.
func topologyFailure(got, want string) string {
	dump := func(seg, size string) string {
		return "&lt;*csi.Topology | 0x1&gt;: {&#xA;  Segments: {&#xA;    &#34;" + seg + "&#34;,&#xA;  },&#xA;  sizeCache: " + size + ",&#xA;}"
	}
	return `<failure message="Expected&#xA;` + dump(got, "0") + `&#xA;to equal&#xA;` + dump(want, "42") + `" type="failed">[FAILED]</failure>`
}

func report(cases ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="CSI Driver Test Suite">` +
		strings.Join(cases, "") + `</testsuite></testsuites>`
}

func tc(name, status, body string) string {
	return `<testcase name="` + name + `" status="` + status + `">` + body + `</testcase>`
}

const nodeSeg = "topology.hostpath.csikit.dev/node&#34;: &#34;vm"

func TestCheck(t *testing.T) {
	pass := tc("[It] Node Service should work", "passed", "")
	real, err := os.ReadFile("testdata/hostpath-mount-v5.6.0.xml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		xml       string
		exit      int
		minPassed int
		wantErr   string // empty: the run passes
	}{
		{name: "a real hostpath run with only the documented failure passes", xml: string(real), exit: 1, minPassed: 101},
		{name: "every spec passed", xml: report(pass, pass), exit: 0, minPassed: 2},
		{name: "the documented topology artefact is excused", exit: 1, minPassed: 1,
			xml: report(pass, tc(topologySpec, "failed", topologyFailure(nodeSeg, nodeSeg)))},
		{name: "the documented spec failing on a real topology mismatch is not excused", exit: 1,
			xml:     report(pass, tc(topologySpec, "failed", topologyFailure("zone&#34;: &#34;a", nodeSeg))),
			wantErr: "1 specs failed that are not documented failures"},
		{name: "the documented spec failing on an RPC error is not excused", exit: 1,
			xml:     report(pass, tc(topologySpec, "failed", `<failure message="Unexpected error: rpc error: code = Internal">x</failure>`)),
			wantErr: "not documented"},
		{name: "a similarly named spec is not excused", exit: 1,
			xml:     report(pass, tc(topologySpec+" twice", "failed", topologyFailure(nodeSeg, nodeSeg))),
			wantErr: "not documented"},
		{name: "any other failure fails the run", xml: report(pass, tc("[It] ModifyVolume should modify", "failed", `<failure message="INVALID_ARGUMENT"/>`)), exit: 1,
			wantErr: "not documented"},
		{name: "a failure child counts whatever the status says", xml: report(pass, tc("[It] x", "passed", `<failure message="boom"/>`)), exit: 1,
			wantErr: "not documented"},
		{name: "an error child counts as a failure", xml: report(pass, tc("[It] x", "", `<error message="boom"/>`)), exit: 1,
			wantErr: "not documented"},
		{name: "a panicked spec fails the run", xml: report(pass, tc("[It] x", "panicked", "")), exit: 1, wantErr: "not documented"},
		{name: "an unknown status is not a pass", xml: report(pass, tc("[It] x", "flaky", "")), exit: 0, wantErr: "not documented"},
		{name: "a failed BeforeSuite fails the run", xml: report(tc("[BeforeSuite]", "failed", `<failure message="connect"/>`)), exit: 1,
			wantErr: "not documented"},
		{name: "an empty report fails", xml: report(), exit: 1, wantErr: "holds no specs"},
		{name: "too few passes fail", xml: report(pass, tc("[It] y", "skipped", `<skipped message="not supported"/>`)), exit: 0, minPassed: 2,
			wantErr: "only 1 specs passed, want at least 2"},
		{name: "a zero exit beside a failure means a stale report", exit: 0, minPassed: 1,
			xml:     report(pass, tc(topologySpec, "failed", topologyFailure(nodeSeg, nodeSeg))),
			wantErr: "exited 0 although its report shows 1 failures"},
		{name: "a non-zero exit with a clean report is not a pass", xml: report(pass), exit: 1, minPassed: 1,
			wantErr: "exited 1 although its report shows no failure"},
		{name: "a bare testsuite root is read too", xml: `<testsuite>` + pass + `</testsuite>`, exit: 0, minPassed: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cases, err := readReport(strings.NewReader(tt.xml))
			if err != nil {
				t.Fatal(err)
			}
			summary, err := check(cases, tt.exit, tt.minPassed)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("check: %v\n%s", err, summary)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("check error = %v, want it to contain %q\n%s", err, tt.wantErr, summary)
			}
		})
	}
}

func TestReadReportRejectsBrokenXML(t *testing.T) {
	for _, in := range []string{`<testsuites><testcase name="x" status="passed">`, `<testcase name="x"></oops>`} {
		if _, err := readReport(strings.NewReader(in)); err == nil {
			t.Errorf("readReport(%q) accepted a truncated report", in)
		}
	}
}
