package kubesuite

import (
	"math/big"
	"strings"
	"testing"
)

// TestParseQuantity: the quantities the suite's resource.ParseQuantity reads, with their values,
// and what it refuses.
func TestParseQuantity(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // a big.Rat; "" = refused
	}{
		{"1Mi", "1048576"}, {"5Gi", "5368709120"}, {"1Ei", "1152921504606846976"},
		{"1.5Ki", "1536"}, {"1k", "1000"}, {"2G", "2000000000"}, {"500m", "1/2"}, {"3n", "3/1000000000"},
		{"1e3", "1000"}, {"1E+3", "1000"}, {"25e-1", "5/2"}, {"0", "0"}, {"-1Gi", "-1073741824"},
		{"+1", "1"}, {".5", "1/2"}, {"1.", "1"}, {"1048576", "1048576"},
		{"", ""}, {"Mi", ""}, {"1MB", ""}, {"1 Mi", ""}, {"1mi", ""}, {"1.2.3", ""}, {"--1", ""},
		{"1-", ""}, {".", ""}, {"1e", ""}, {"1e1.5", ""}, {"1e100", ""}, {"0x10", ""}, {"1/2", ""}, {"1Gii", ""},
	} {
		got, err := parseQuantity(tc.in)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: read as %s, want refused", tc.in, got.RatString())
		case tc.want != "" && err != nil:
			t.Errorf("%q: %v, want %s", tc.in, err, tc.want)
		case tc.want != "" && got.RatString() != tc.want:
			t.Errorf("%q = %s, want %s", tc.in, got.RatString(), tc.want)
		}
	}
}

// FuzzParseQuantity: any input is read or refused without a panic, and a quantity read with a
// binary suffix is 1024 times the same number with the next smaller one.
func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"1Mi", "1.5Gi", "500m", "1e3", "-2E-2", "", ".", "1MB", "+.5k", "9e99"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := parseQuantity(s)
		if err != nil {
			return
		}
		if q == nil {
			t.Fatalf("%q: no value and no error", s)
		}
		if strings.HasSuffix(s, "Mi") {
			ki, err := parseQuantity(strings.TrimSuffix(s, "Mi") + "Ki")
			if err != nil {
				t.Fatalf("%q read but its Ki form refused: %v", s, err)
			}
			if ki.Mul(ki, big.NewRat(1024, 1)).Cmp(q) != 0 {
				t.Fatalf("%q = %s, not 1024 × its Ki form", s, q.RatString())
			}
		}
	})
}
