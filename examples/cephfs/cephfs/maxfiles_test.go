package cephfs

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/csikit/csikit/driver"
)

func TestParseMaxFiles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		why  string // a part of the error; "" when the value is good
	}{
		{"0", 0, ""},
		{"1", 1, ""},
		{"1000", 1000, ""},
		{"9223372036854775806", maxFilesLimit, ""},
		{"9223372036854775807", 0, "is more than"}, // the attribute would overflow Ceph's int64
		{"99999999999999999999", 0, "is more than"},
		{"", 0, "is empty"},
		{"-1", 0, "not a decimal number"},
		{"+1", 0, "not a decimal number"},
		{" 1", 0, "not a decimal number"},
		{"1 ", 0, "not a decimal number"},
		{"1e3", 0, "not a decimal number"},
		{"0x10", 0, "not a decimal number"},
		{"1_000", 0, "not a decimal number"},
		{"١", 0, "not a decimal number"}, // an Arabic-Indic digit
		{"unlimited", 0, "not a decimal number"},
		{"007", 0, "leading zero"},
		{"00", 0, "leading zero"},
	} {
		got, err := parseMaxFiles(tc.in)
		if tc.why == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseMaxFiles(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), ParamMaxFiles) {
			t.Errorf("parseMaxFiles(%q) = %d, %v; want INVALID_ARGUMENT that says %q", tc.in, got, err, tc.why)
		}
	}
}

func TestMaxFilesValue(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "2", 100: "101", maxFilesLimit: "9223372036854775807"} {
		if got := maxFilesValue(n); got != want {
			t.Errorf("maxFilesValue(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestMaxFilesOf: mutable parameters take precedence over parameters, as the CSI spec says, and a
// bad value in either is refused even when the other would decide.
func TestMaxFilesOf(t *testing.T) {
	for _, tc := range []struct {
		name            string
		params, mutable map[string]string
		want            int64
		named, bad      bool
	}{
		{name: "none"},
		{name: "parameters", params: map[string]string{ParamMaxFiles: "5"}, want: 5, named: true},
		{name: "mutable", mutable: map[string]string{ParamMaxFiles: "7"}, want: 7, named: true},
		{name: "mutable wins", params: map[string]string{ParamMaxFiles: "5"}, mutable: map[string]string{ParamMaxFiles: "7"}, want: 7, named: true},
		{name: "mutable zero wins", params: map[string]string{ParamMaxFiles: "5"}, mutable: map[string]string{ParamMaxFiles: "0"}, want: 0, named: true},
		{name: "bad parameter", params: map[string]string{ParamMaxFiles: "x"}, mutable: map[string]string{ParamMaxFiles: "7"}, bad: true},
		{name: "bad mutable", params: map[string]string{ParamMaxFiles: "5"}, mutable: map[string]string{ParamMaxFiles: "-7"}, bad: true},
	} {
		got, named, err := maxFilesOf(tc.params, tc.mutable)
		if tc.bad {
			if !errors.Is(err, driver.ErrInvalidArgument) {
				t.Errorf("%s: %d, %v; want INVALID_ARGUMENT", tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want || named != tc.named {
			t.Errorf("%s: %d, %v, %v; want %d, %v", tc.name, got, named, err, tc.want, tc.named)
		}
	}
}

func TestCheckMutableAndParameters(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutable map[string]string
		params  map[string]string
		what    string
		want    string // a part of the error; "" when accepted
	}{
		{name: "maxFiles", mutable: map[string]string{ParamMaxFiles: "10"}},
		{name: "none", mutable: map[string]string{}},
		{name: "unknown mutable key", mutable: map[string]string{"XXX_FakeKey": "XXX_FakeValue"}, want: "XXX_FakeKey is not supported"},
		{name: "unknown beside a good one", mutable: map[string]string{ParamMaxFiles: "10", "iops": "5"}, want: "iops"},
		{name: "case matters", mutable: map[string]string{"maxfiles": "10"}, want: "maxfiles"},
		{name: "bad mutable value", mutable: map[string]string{ParamMaxFiles: "ten"}, want: "not a decimal number"},
		{name: "volume parameter", what: "volume", params: map[string]string{ParamMaxFiles: "10", "csi.storage.k8s.io/pvc/name": "p"}},
		{name: "bad volume parameter", what: "volume", params: map[string]string{ParamMaxFiles: "1.5"}, want: "not a decimal number"},
		{name: "unknown volume parameter", what: "volume", params: map[string]string{"pool": "x"}, want: "(it takes maxFiles)"},
		{name: "snapshots take no maxFiles", what: "snapshot", params: map[string]string{ParamMaxFiles: "10"}, want: "takes no snapshot parameters"},
	} {
		var err error
		if tc.what != "" {
			err = checkParameters(tc.what, tc.params)
		} else {
			err = checkMutable(tc.mutable)
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want INVALID_ARGUMENT with %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParseMaxFiles: every accepted value is the canonical decimal of a count in range, whose
// attribute value is one more (or "0"); every refused one is INVALID_ARGUMENT and the message
// quotes at most a bounded prefix of it.
func FuzzParseMaxFiles(f *testing.F) {
	for _, s := range []string{"0", "1", "42", "007", "-1", "+1", " 1", "1e3", "9223372036854775806", "9223372036854775807", "", "١", strings.Repeat("9", 400)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseMaxFiles(s)
		if err != nil {
			if !errors.Is(err, driver.ErrInvalidArgument) {
				t.Fatalf("parseMaxFiles(%q): %v is not INVALID_ARGUMENT", s, err)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("parseMaxFiles: a %d-byte message", len(err.Error()))
			}
			return
		}
		if n < 0 || n > maxFilesLimit || strconv.FormatInt(n, 10) != s {
			t.Fatalf("parseMaxFiles(%q) = %d: not the canonical decimal of a count in range", s, n)
		}
		v := maxFilesValue(n)
		if m, err := strconv.ParseInt(v, 10, 64); err != nil || (n == 0) != (m == 0) || n != 0 && m != n+1 {
			t.Fatalf("maxFilesValue(%d) = %q", n, v)
		}
	})
}
