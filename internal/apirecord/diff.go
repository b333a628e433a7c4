package apirecord

import (
	"fmt"
	"slices"
	"strings"
)

// Lines returns a record's feature lines: every line but blank ones and "#" comments.
func Lines(record []byte) []string {
	var out []string
	for line := range strings.SplitSeq(string(record), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// Diff is what changed between a record and the API it should record.
type Diff struct {
	// Added are lines of the API missing from the record: new names, or the new form of
	// changed ones.
	Added []string
	// Removed are lines of the record missing from the API: removed names, or the old form of
	// changed ones.
	Removed []string
}

// Compare returns the lines only the recorded API has and those only the current one has, each
// sorted.
func Compare(recorded, current []byte) Diff {
	old, cur := set(Lines(recorded)), set(Lines(current))
	var d Diff
	for l := range cur {
		if !old[l] {
			d.Added = append(d.Added, l)
		}
	}
	for l := range old {
		if !cur[l] {
			d.Removed = append(d.Removed, l)
		}
	}
	slices.Sort(d.Added)
	slices.Sort(d.Removed)
	return d
}

func set(lines []string) map[string]bool {
	m := make(map[string]bool, len(lines))
	for _, l := range lines {
		m[l] = true
	}
	return m
}

// Empty reports whether the two records list the same lines.
func (d Diff) Empty() bool { return len(d.Added) == 0 && len(d.Removed) == 0 }

// Incompatible returns the removed lines that break a caller: every removed line, since a line
// names a feature and its whole type, except a dropped deprecation marker, which takes nothing
// away.
func (d Diff) Incompatible() []string {
	var out []string
	for _, l := range d.Removed {
		if !strings.HasSuffix(l, " //deprecated") {
			out = append(out, l)
		}
	}
	return out
}

// String lists the changes one a line, "-" for a removed line and "+" for an added one, in the
// record's order so that the old and new forms of a changed name sit together.
func (d Diff) String() string {
	type change struct{ sign, line string }
	all := make([]change, 0, len(d.Added)+len(d.Removed))
	for _, l := range d.Removed {
		all = append(all, change{"-", l})
	}
	for _, l := range d.Added {
		all = append(all, change{"+", l})
	}
	slices.SortStableFunc(all, func(a, b change) int { return strings.Compare(a.line, b.line) })
	var b strings.Builder
	for _, c := range all {
		b.WriteString(c.sign + " " + c.line + "\n")
	}
	return b.String()
}

// Explain is the message for a contributor whose change does not match the record: the
// changes, whether they are compatible, and what to do.
func (d Diff) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d line(s) added, %d removed:\n%s", len(d.Added), len(d.Removed), d)
	if bad := d.Incompatible(); len(bad) > 0 {
		fmt.Fprintf(&b, "INCOMPATIBLE: %d feature(s) removed or changed; code written against them may no longer compile or behave the same:\n", len(bad))
		for _, l := range bad {
			b.WriteString("  " + l + "\n")
		}
		b.WriteString("An incompatible change needs an entry under [Unreleased] in CHANGELOG.md (Changed or Removed),\n" +
			"and a removal is deprecated (a \"Deprecated: \" paragraph in its doc) for one minor version first.\n")
	} else {
		b.WriteString("Compatible: only additions.\n")
	}
	fmt.Fprintf(&b, "If the change is intended, record it from the module's root directory with\n\t%s\nand commit %s with the change.\n", UpdateCommand, RecordFile)
	return b.String()
}
