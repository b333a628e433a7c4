package hostpath

import "testing"

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		"/plain":            "/plain",
		`/with\040space`:    "/with space",
		`/tab\011and\012nl`: "/tab\tand\nnl",
		`/back\134slash`:    `/back\slash`,
		`/not\08escape`:     `/not\08escape`,
		`/trailing\04`:      `/trailing\04`,
		`\040\040`:          "  ",
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzUnescapeMountPath(f *testing.F) {
	for _, s := range []string{"/a", `/a\040b`, `\`, `\0`, `\777`, `\1234`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := unescapeMountPath(s)
		if len(out) > len(s) {
			t.Fatalf("decoding grew %q to %q", s, out)
		}
	})
}
