package e2e

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestStorageSuiteCIList: every line of storage-suite-ci.txt is a focus expression that Go's
// regexp (ginkgo's) accepts, after the prefix storage-suite.sh puts before it, and each matches
// the External.Storage spec text it was written from and no other driver's. A line that does
// not compile would fail CI's suite stage only after the cluster came up.
func TestStorageSuiteCIList(t *testing.T) {
	f, err := os.Open("storage-suite-ci.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const prefix = `External Storage \[Driver: [^]]*\] `
	var lines []*regexp.Regexp
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		re, err := regexp.Compile(prefix + line)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		lines = append(lines, re)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(lines) < 15 {
		t.Fatalf("%d focus lines; the CI subset names one or two specs for every test suite", len(lines))
	}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"External Storage [Driver: hostpath.csikit.dev] [Testpattern: Dynamic PV (default fs)] subPath should support existing directory", true},
		{"External Storage [Driver: hostpath.csikit.dev] [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with pvc data source", true},
		{"External Storage [Driver: hostpath.csikit.dev] [Testpattern: Dynamic PV (default fs)] provisioning should provision storage with pvc data source in parallel [Slow]", false},
		{"External Storage [Driver: hostpath.csikit.dev] [Testpattern: Dynamic PV (default fs)] subPath should support existing directories when readOnly specified in the volumeSource", false},
		{"In-tree Volumes [Driver: local] [Testpattern: Dynamic PV (default fs)] subPath should support existing directory", false},
	} {
		got := false
		for _, re := range lines {
			got = got || re.MatchString(tc.text)
		}
		if got != tc.want {
			t.Errorf("%q selected = %v, want %v", tc.text, got, tc.want)
		}
	}
}
