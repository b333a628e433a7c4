package s3server

import (
	"net/url"
	"strings"
	"testing"
)

// TestQueryHas: the in-place scan answers as url.URL.Query, which gofakes3 routes on.
func TestQueryHas(t *testing.T) {
	cases := []struct {
		raw, name string
		want      bool
	}{
		{"uploads", "uploads", true},
		{"uploads=", "uploads", true},
		{"x-id=PutObject", "uploads", false},
		{"partNumber=1&uploadId=abc", "uploadId", true},
		{"uploadIdx=1", "uploadId", false},
		{"a=uploadId", "uploadId", false},
		{"&&delete&", "delete", true},
		{"%75ploads", "uploads", true},
		{"upload%73=1", "uploads", true},
		{"uploads;x=1", "uploads", false},
		{"uploads=%zz", "uploads", false},
		{"a=1&" + strings.Repeat("b=2&", 20) + "uploads", "uploads", true},
		{"", "uploads", false},
	}
	for _, tc := range cases {
		if got := queryHas(tc.raw, tc.name); got != tc.want {
			t.Errorf("queryHas(%q, %q) = %v, want %v", tc.raw, tc.name, got, tc.want)
		}
	}
}

// FuzzQueryHas holds queryHas equal to url.URL.Query for any query and name.
func FuzzQueryHas(f *testing.F) {
	f.Add("partNumber=1&uploadId=abc", "uploadId")
	f.Add("%75ploads&x", "uploads")
	f.Add("a;b=c&delete", "delete")
	f.Add("=&==&delete=", "")
	f.Fuzz(func(t *testing.T, raw, name string) {
		_, want := (&url.URL{RawQuery: raw}).Query()[name]
		if got := queryHas(raw, name); got != want {
			t.Fatalf("queryHas(%q, %q) = %v, url.URL.Query says %v", raw, name, got, want)
		}
	})
}
