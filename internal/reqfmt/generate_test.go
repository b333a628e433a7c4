package reqfmt_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/csikit/csikit/internal/reqfmt"
)

// TestRequestsFindsEveryWireField: direct pointer fields named Raw or Raw<Version>, and those of an
// embedded struct of the package, generic or not, newest version first; generic types and
// non-pointer fields are not requests.
func TestRequestsFindsEveryWireField(t *testing.T) {
	dir := t.TempDir()
	src := `package p

type msg struct{}

type Wire[V1, V2 any] struct {
	Version     string
	RawV1Alpha1 V1
	RawV1Alpha2 V2
}

type plain struct{ RawV1 *msg }

type CSI struct {
	Name string
	Raw  *msg
}

type Both struct {
	ID string
	Wire[*msg, *msg]
}

type One struct {
	RawV1Alpha2 *msg
}

type Embeds struct{ plain }

type NotPointer struct{ Raw msg }

type Generic[T any] struct{ Raw *T }
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := reqfmt.Requests(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []reqfmt.Request{
		{Name: "plain", Raws: []string{"RawV1"}},
		{Name: "CSI", Raws: []string{"Raw"}},
		{Name: "Both", Raws: []string{"RawV1Alpha2", "RawV1Alpha1"}},
		{Name: "One", Raws: []string{"RawV1Alpha2"}},
		{Name: "Embeds", Raws: []string{"RawV1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Requests found %+v, want %+v", got, want)
	}
}

// TestRenderPerRedaction: each redaction calls its own printing functions with every wire field.
func TestRenderPerRedaction(t *testing.T) {
	reqs := []reqfmt.Request{{Name: "Both", Raws: []string{"RawV1Alpha2", "RawV1Alpha1"}}}
	for _, tc := range []struct {
		redaction reqfmt.Redaction
		want      []string
	}{
		{reqfmt.Marked, []string{`reqfmt.String("Both", r.RawV1Alpha2, r.RawV1Alpha1)`, `reqfmt.JSON(r.RawV1Alpha2, r.RawV1Alpha1)`}},
		{reqfmt.Heuristic, []string{`reqfmt.HeuristicString("Both", r.RawV1Alpha2, r.RawV1Alpha1)`, `reqfmt.HeuristicJSON(r.RawV1Alpha2, r.RawV1Alpha1)`}},
	} {
		src, err := reqfmt.Render(reqfmt.Package{Name: "p", Dir: "x/p", Redaction: tc.redaction}, reqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(src), w) {
				t.Errorf("redaction %d: no %s in\n%s", tc.redaction, w, src)
			}
		}
	}
	if _, err := reqfmt.Render(reqfmt.Package{Name: "p", Redaction: reqfmt.Redaction(9)}, reqs); err == nil {
		t.Error("an unknown redaction rendered")
	}
}

// TestSync: a stale file is an error naming the go generate command; writing makes it current;
// a package without requests is an error.
func TestSync(t *testing.T) {
	dir := t.TempDir()
	p := reqfmt.Package{Name: "p", Dir: "x/p", Redaction: reqfmt.Marked}
	if err := reqfmt.Sync(dir, p, false); err == nil || !strings.Contains(err.Error(), "no request type") {
		t.Errorf("an empty package: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte("package p\n\ntype R struct{ Raw *int }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, reqfmt.GeneratedFile), []byte("package p\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reqfmt.Sync(dir, p, false); err == nil || !strings.Contains(err.Error(), "go generate ./x/p") {
		t.Errorf("a stale file: %v", err)
	}
	if err := reqfmt.Sync(dir, p, true); err != nil {
		t.Fatal(err)
	}
	if err := reqfmt.Sync(dir, p, false); err != nil {
		t.Errorf("after writing: %v", err)
	}
}
