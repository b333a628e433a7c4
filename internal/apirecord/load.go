package apirecord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
)

// Module is the module whose public packages the record covers.
const Module = "github.com/csikit/csikit"

// RecordFile is the record's path, relative to the module's root directory.
const RecordFile = "api/csikit.txt"

// UpdateCommand writes the record; run it from the module's root directory.
const UpdateCommand = "go run ./internal/apirecord/cmd/apirecord"

// The platform the record is for. Storage drivers run on Linux nodes, and no public package has a
// platform-specific file today, so the record would read the same elsewhere; pinning it keeps
// the record one thing on every contributor's machine.
const (
	recordGOOS   = "linux"
	recordGOARCH = "amd64"
)

// Options says which module to record and how to build it.
type Options struct {
	// Dir is the module's root directory, the one holding its go.mod.
	Dir string
	// Module is the module's path; empty means Module.
	Module string
}

// listed is the part of go list's output the record needs.
type listed struct {
	ImportPath string
	Name       string
	Dir        string
	Export     string
	GoFiles    []string
	Module     *struct{ Path string }
}

// Generate returns the record of the module's public packages: every package of the module
// that is not a command and not under an internal directory. Nested modules are not part of it.
func Generate(ctx context.Context, opts Options) ([]byte, error) {
	if opts.Module == "" {
		opts.Module = Module
	}
	pkgs, err := list(ctx, opts)
	if err != nil {
		return nil, err
	}
	own := map[string]string{} // import path -> name in the record, for the module's packages
	for _, p := range pkgs {
		if rel, ok := relPath(opts.Module, p.ImportPath); ok {
			own[p.ImportPath] = rel
		}
	}
	var qualifyErr error
	qualify := func(p *types.Package) string {
		if rel, ok := own[p.Path()]; ok {
			return rel
		}
		for _, rel := range own {
			if rel == p.Path() && qualifyErr == nil {
				qualifyErr = fmt.Errorf("package %s and the module's %s would read alike in the record", p.Path(), rel)
			}
		}
		return p.Path()
	}
	exports := map[string]string{}
	for _, p := range pkgs {
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("go list gave no export data for %s", path)
		}
		return os.Open(file)
	})
	var lines []string
	for _, p := range pkgs {
		rel, ok := own[p.ImportPath]
		if !ok || !public(rel, p) {
			continue
		}
		pkg, err := imp.Import(p.ImportPath)
		if err != nil {
			return nil, fmt.Errorf("read export data of %s: %w", p.ImportPath, err)
		}
		files, err := parseFiles(fset, p)
		if err != nil {
			return nil, err
		}
		got, err := Features(pkg, rel, qualify, Deprecated(files))
		if err != nil {
			return nil, err
		}
		lines = append(lines, got...)
	}
	if qualifyErr != nil {
		return nil, qualifyErr
	}
	slices.Sort(lines)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The exported API of %s's public packages, for %s/%s: one line per exported name.\n", opts.Module, recordGOOS, recordGOARCH)
	fmt.Fprintf(&b, "# Written by %s; see that package's doc for the format. Do not edit.\n", UpdateCommand)
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// relPath returns the name the record gives a package of the module: its path inside the module,
// or the module path for the root package.
func relPath(module, importPath string) (string, bool) {
	if importPath == module {
		return module, true
	}
	rel, ok := strings.CutPrefix(importPath, module+"/")
	return rel, ok
}

func public(rel string, p listed) bool {
	if p.Name == "main" || len(p.GoFiles) == 0 {
		return false
	}
	return !slices.Contains(strings.Split(rel, "/"), "internal")
}

// list runs go list in the module's directory. ./... stops at nested modules whether or not a
// go.work is in use. -export makes the go command compile (or find in its cache) each package and
// name its export data, which go/importer reads: go/types then sees exactly what the compiler
// saw, and the module needs no loader dependency.
func list(ctx context.Context, opts Options) ([]listed, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("find the go command: %w", err)
	}
	args := []string{"list", "-export", "-json=ImportPath,Name,Dir,Export,GoFiles,Module"}
	// Build as this program was: a test binary of go test -race then finds the export data in
	// the build cache the surrounding go test -race fills, instead of compiling every dependency
	// a second time without -race. The API is the same either way. Only on the record's
	// platform: a cross-compiled -race needs cgo.
	if builtWithRace() && runtime.GOOS == recordGOOS && runtime.GOARCH == recordGOARCH {
		args = append(args, "-race")
	}
	args = append(args, "./...")
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = opts.Dir
	cmd.Env = append(os.Environ(), "GOOS="+recordGOOS, "GOARCH="+recordGOARCH)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), opts.Dir, err, stderr.Bytes())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read go list output: %w", err)
		}
		if p.Module == nil || p.Module.Path != opts.Module {
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("go list in %s found no package of module %s", opts.Dir, opts.Module)
	}
	return pkgs, nil
}

// parseFiles parses a package's files for their doc comments.
func parseFiles(fset *token.FileSet, p listed) ([]*ast.File, error) {
	files := make([]*ast.File, 0, len(p.GoFiles))
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", p.ImportPath, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// builtWithRace reports whether the running binary was built with -race.
func builtWithRace() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}
