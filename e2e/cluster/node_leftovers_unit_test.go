package cluster

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		wantErr  bool
	}{
		{"dnat with a comment",
			`PREROUTING -s 10.88.0.0/16 -d 10.0.0.1/32 -p tcp -m tcp --dport 443 -m comment --comment "csikit-e2e kubernetes Service" -j DNAT --to-destination 10.88.0.1:34797`,
			[]string{"PREROUTING", "-s", "10.88.0.0/16", "-d", "10.0.0.1/32", "-p", "tcp", "-m", "tcp", "--dport", "443",
				"-m", "comment", "--comment", "csikit-e2e kubernetes Service", "-j", "DNAT", "--to-destination", "10.88.0.1:34797"}, false},
		{"comment last", `OUTPUT -j ACCEPT -m comment --comment "csikit-e2e (host network)"`,
			[]string{"OUTPUT", "-j", "ACCEPT", "-m", "comment", "--comment", "csikit-e2e (host network)"}, false},
		{"no comment", "FORWARD -j ACCEPT", []string{"FORWARD", "-j", "ACCEPT"}, false},
		{"extra spaces", "  FORWARD   -j ACCEPT ", []string{"FORWARD", "-j", "ACCEPT"}, false},
		{"unterminated quote", `OUTPUT --comment "csikit-e2e`, nil, true},
		{"empty", "", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitRule(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("splitRule(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("splitRule(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRunRecordOwner(t *testing.T) {
	self, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rec  runRecord
		want bool
	}{
		{"this process", runRecord{PID: os.Getpid(), Started: self}, true},
		// The same PID started at another time: the run's PID was reused after it died.
		{"reused pid", runRecord{PID: os.Getpid(), Started: self + 1}, false},
		// PIDs are at most 2^22 on Linux.
		{"no such process", runRecord{PID: 1 << 23}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rec.alive(); got != tc.want {
				t.Errorf("alive() = %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzSplitRule: no input panics, and a rule without quotes splits as strings.Fields splits it
// (iptables -S separates words with one space, but a rule read back must not depend on that).
func FuzzSplitRule(f *testing.F) {
	for _, s := range []string{`PREROUTING -m comment --comment "csikit-e2e kubernetes Service" -j DNAT`, "FORWARD -j ACCEPT", `"`, `a "" b`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := splitRule(s)
		if strings.ContainsRune(s, '"') {
			return
		}
		if err != nil {
			t.Fatalf("splitRule(%q): %v", s, err)
		}
		if want := strings.Fields(s); !slices.Equal(got, want) && len(want)+len(got) > 0 {
			t.Errorf("splitRule(%q) = %q, want %q", s, got, want)
		}
	})
}
