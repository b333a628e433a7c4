package apirecord

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeTree writes files (slash-separated path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGenerate records a small module through the go command and export data, as the real
// record is made: only the public packages, named by their path in the module, with the
// module's own types named the same way.
func TestGenerate(t *testing.T) {
	// The module stands alone: no workspace, no network, nothing to download.
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=readonly")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.25\n",
		"m.go":   "// Package m is the root.\npackage m\n\n// T is recorded.\ntype T struct{ N int }\n",
		"sub/sub.go": `package sub

import "example.com/m"

// Get is recorded, naming the root package by the module path.
func Get() m.T { return m.T{} }

// Deprecated: use Get.
func Old() {}
`,
		"internal/x/x.go":        "package x\n\n// Hidden is not recorded.\nfunc Hidden() {}\n",
		"cmd/tool/main.go":       "package main\n\n// Exported is in a command.\nfunc Exported() {}\n\nfunc main() {}\n",
		"testonly/t_test.go":     "package testonly\n",
		"nested/go.mod":          "module example.com/m/nested\n\ngo 1.25\n",
		"nested/n.go":            "package nested\n\n// Other is another module's.\nfunc Other() {}\n",
		"sub/internal/y/y.go":    "package y\n\n// Deep is not recorded.\nfunc Deep() {}\n",
		"sub/other_linux.go":     "package sub\n\n// OnLinux is recorded: the record is for linux.\nfunc OnLinux() {}\n",
		"sub/other_windows.go":   "package sub\n\n// OnWindows is not.\nfunc OnWindows() {}\n",
		"sub/ignored_test.go":    "package sub\n\n// InTest is not API.\nfunc InTest() {}\n",
		"sub/zz_generated_ok.go": "package sub\n\n// Generated counts like any other file.\nvar Generated = 1\n",
	})
	got, err := Generate(t.Context(), Options{Dir: dir, Module: "example.com/m"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg example.com/m, type T struct",
		"pkg example.com/m, type T struct, N int",
		"pkg example.com/m, type T struct, comparable",
		"pkg sub, func Get() example.com/m.T",
		"pkg sub, func Old //deprecated",
		"pkg sub, func Old()",
		"pkg sub, func OnLinux()",
		"pkg sub, var Generated int",
	}
	if lines := Lines(got); !slices.Equal(lines, want) {
		t.Errorf("Generate:\n\t%s\nwant:\n\t%s", strings.Join(lines, "\n\t"), strings.Join(want, "\n\t"))
	}
	if !strings.HasPrefix(string(got), "# ") || !strings.HasSuffix(string(got), "\n") {
		t.Errorf("Generate wrote no header or no final newline:\n%s", got)
	}
	again, err := Generate(t.Context(), Options{Dir: dir, Module: "example.com/m"})
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(got) {
		t.Errorf("Generate is not deterministic:\n%s\nthen\n%s", got, again)
	}
}

// TestExportDataMatchesSource checks that a package read from export data, as Generate reads
// it, records the same lines as the same package type-checked from source, as the other tests
// read them: export data keeps neither byte nor parameter names, and the record must not care.
func TestExportDataMatchesSource(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=readonly")
	const src = `package p

// S is a sample.
type S[T any] struct {
	// Deprecated: no.
	Data []byte
	Each func(name string, r rune) (ok bool)
	C    chan (<-chan T)
	any
}

// M is a method.
func (s *S[T]) M(v ...T) (n int, err error) { return 0, nil }

// I is an interface.
type I interface{ ~int | ~uint8; String() string }

// K is a constant.
const K = 1 << 70

// V is a variable.
var V = map[string]struct{ A any }{}
`
	want := sampleLines(t, src)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"go.mod": "module example.com/p\n\ngo 1.25\n", "p.go": src})
	rec, err := Generate(t.Context(), Options{Dir: dir, Module: "example.com/p"})
	if err != nil {
		t.Fatal(err)
	}
	got := Lines(rec)
	for i, l := range got {
		got[i] = strings.TrimPrefix(l, "pkg example.com/p, ")
	}
	if !slices.Equal(got, want) {
		t.Errorf("from export data:\n\t%s\nfrom source:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestGenerateReportsBuildErrors(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off")
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"go.mod": "module example.com/b\n\ngo 1.25\n", "b.go": "package b\n\nfunc F() { undefined() }\n"})
	_, err := Generate(t.Context(), Options{Dir: dir, Module: "example.com/b"})
	if err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("Generate of a package that does not compile: %v, want the compiler's message", err)
	}
}
