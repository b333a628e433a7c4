package apirecord

import (
	"slices"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		name                      string
		recorded, current         string
		added, removed, incompat  []string
		wantCompatibleExplanation bool
	}{{
		name:     "same lines, other comments and order",
		recorded: "# old header\npkg a, func F()\npkg a, func G()\n",
		current:  "pkg a, func G()\r\n\npkg a, func F()\n# new header\n",
	}, {
		name:                      "an addition is compatible",
		recorded:                  "pkg a, func F()\n",
		current:                   "pkg a, func F()\npkg a, func New() int\n",
		added:                     []string{"pkg a, func New() int"},
		wantCompatibleExplanation: true,
	}, {
		name:     "a changed signature is a removed and an added line",
		recorded: "pkg a, func F(int)\n",
		current:  "pkg a, func F(int, string)\n",
		added:    []string{"pkg a, func F(int, string)"},
		removed:  []string{"pkg a, func F(int)"},
		incompat: []string{"pkg a, func F(int)"},
	}, {
		name:     "a removal is incompatible, deprecated or not",
		recorded: "pkg a, func Old //deprecated\npkg a, func Old()\n",
		current:  "",
		removed:  []string{"pkg a, func Old //deprecated", "pkg a, func Old()"},
		incompat: []string{"pkg a, func Old()"},
	}, {
		name:                      "dropping a deprecation takes nothing away",
		recorded:                  "pkg a, func Old //deprecated\npkg a, func Old()\n",
		current:                   "pkg a, func Old()\n",
		removed:                   []string{"pkg a, func Old //deprecated"},
		wantCompatibleExplanation: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compare([]byte(tt.recorded), []byte(tt.current))
			if !slices.Equal(d.Added, tt.added) || !slices.Equal(d.Removed, tt.removed) {
				t.Fatalf("Compare: added %q, removed %q; want %q, %q", d.Added, d.Removed, tt.added, tt.removed)
			}
			if got := d.Incompatible(); !slices.Equal(got, tt.incompat) {
				t.Errorf("Incompatible() = %q, want %q", got, tt.incompat)
			}
			if d.Empty() != (tt.added == nil && tt.removed == nil) {
				t.Errorf("Empty() = %v", d.Empty())
			}
			if d.Empty() {
				return
			}
			msg := d.Explain()
			for _, l := range tt.added {
				if !strings.Contains(msg, "+ "+l+"\n") {
					t.Errorf("Explain() does not list + %s:\n%s", l, msg)
				}
			}
			for _, l := range tt.removed {
				if !strings.Contains(msg, "- "+l+"\n") {
					t.Errorf("Explain() does not list - %s:\n%s", l, msg)
				}
			}
			if !strings.Contains(msg, UpdateCommand) {
				t.Errorf("Explain() does not give the command that updates the record:\n%s", msg)
			}
			if got := strings.Contains(msg, "Compatible: only additions."); got != tt.wantCompatibleExplanation {
				t.Errorf("Explain() calls the change compatible: %v, want %v:\n%s", got, tt.wantCompatibleExplanation, msg)
			}
			if got := strings.Contains(msg, "CHANGELOG.md"); got == tt.wantCompatibleExplanation {
				t.Errorf("Explain() asks for a CHANGELOG.md entry: %v, want %v:\n%s", got, !tt.wantCompatibleExplanation, msg)
			}
		})
	}
}

func TestDiffStringKeepsChangedLinesTogether(t *testing.T) {
	d := Compare([]byte("pkg a, func F(int)\npkg b, func Z()\n"), []byte("pkg a, func F(int, string)\npkg a, func A()\n"))
	want := "+ pkg a, func A()\n- pkg a, func F(int)\n+ pkg a, func F(int, string)\n- pkg b, func Z()\n"
	if got := d.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}
}

// FuzzCompare checks Compare against its definition on any two records: the lines only one of them
// has, each side's the mirror of the other's, none when a record meets itself.
func FuzzCompare(f *testing.F) {
	f.Add("pkg a, func F()\n", "pkg a, func F(int)\n")
	f.Add("# c\npkg a, func F()\r\n\n", "pkg a, func F()")
	f.Add("pkg a, x //deprecated\npkg a, x\n", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Compare([]byte(a), []byte(b))
		back := Compare([]byte(b), []byte(a))
		if !slices.Equal(d.Added, back.Removed) || !slices.Equal(d.Removed, back.Added) {
			t.Errorf("Compare(a, b) = %+v is not the mirror of Compare(b, a) = %+v", d, back)
		}
		if self := Compare([]byte(a), []byte(a)); !self.Empty() {
			t.Errorf("Compare(a, a) = %+v, want no change", self)
		}
		la, lb := Lines([]byte(a)), Lines([]byte(b))
		for _, l := range d.Added {
			if !slices.Contains(lb, l) || slices.Contains(la, l) {
				t.Errorf("added %q is not a line of b only", l)
			}
		}
		for _, l := range d.Removed {
			if !slices.Contains(la, l) || slices.Contains(lb, l) {
				t.Errorf("removed %q is not a line of a only", l)
			}
		}
		for _, l := range lb {
			if !slices.Contains(la, l) && !slices.Contains(d.Added, l) {
				t.Errorf("line %q of b only is not reported added", l)
			}
		}
	})
}
