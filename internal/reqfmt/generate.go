package reqfmt

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// GeneratedFile is the name of the file Render's output goes to in each contract package.
const GeneratedFile = "requests_format.go"

// WriteEnv is the environment variable that makes a package's TestFormattersAreGenerated
// rewrite GeneratedFile instead of comparing it; the go:generate lines set it to 1.
const WriteEnv = "CSIKIT_WRITE_FORMATTERS"

// Redaction is how the requests of a package hide their secrets when printed.
type Redaction int

const (
	// Marked hides the fields the protocol marks secret (csi_secret, vg_csi_secret) and mount
	// option values: String and JSON.
	Marked Redaction = iota
	// Heuristic also hides map values whose key looks secret: HeuristicString and HeuristicJSON.
	Heuristic
)

// Package is one contract package whose request types get generated formatters.
type Package struct {
	// Name is the package name.
	Name string
	// Dir is the package's directory relative to the module root, for the regeneration hint.
	Dir string
	// Redaction chooses the printing functions the methods call.
	Redaction Redaction
}

// Request is one request type and the fields holding its wire request, newest wire version first.
type Request struct {
	// Name is the type's name.
	Name string
	// Raws are the fields the methods print from: the first that is set wins.
	Raws []string
}

// Requests returns, in source order, the struct types declared in the Go files of dir (test files
// and GeneratedFile aside) that hold a wire request: a pointer field named Raw or Raw<Version>, or
// such fields in a struct of the same package they embed (bucket.Wire). Generic types are skipped:
// only their instances are requests.
func Requests(dir string) ([]Request, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	var specs []*ast.TypeSpec
	structs := map[string]*ast.StructType{}
	for _, name := range files {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || base == GeneratedFile {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok {
					specs = append(specs, ts)
					structs[ts.Name.Name] = st
				}
			}
		}
	}
	var reqs []Request
	for _, ts := range specs {
		if ts.TypeParams != nil {
			continue
		}
		if raws := rawFields(structs[ts.Name.Name], structs); len(raws) > 0 {
			slices.Reverse(raws) // declared oldest version first; the newest wins when both are set
			reqs = append(reqs, Request{Name: ts.Name.Name, Raws: raws})
		}
	}
	return reqs, nil
}

// rawFields names the wire-request fields of st in declaration order, promoted ones included.
func rawFields(st *ast.StructType, structs map[string]*ast.StructType) []string {
	var raws []string
	for _, fld := range st.Fields.List {
		if len(fld.Names) == 0 {
			if inner, ok := structs[embeddedName(fld.Type)]; ok {
				for _, f := range inner.Fields.List {
					raws = append(raws, rawNames(f)...)
				}
			}
			continue
		}
		if _, ptr := fld.Type.(*ast.StarExpr); ptr {
			raws = append(raws, rawNames(fld)...)
		}
	}
	return raws
}

func rawNames(fld *ast.Field) []string {
	var out []string
	for _, n := range fld.Names {
		if strings.HasPrefix(n.Name, "Raw") {
			out = append(out, n.Name)
		}
	}
	return out
}

// embeddedName is the name of an embedded type of the same package, generic or not ("" else).
func embeddedName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return embeddedName(t.X)
	case *ast.IndexListExpr:
		return embeddedName(t.X)
	}
	return ""
}

// RawRequestTypes returns the names of Requests(dir): the types that must not print their wire
// request as it is.
func RawRequestTypes(dir string) ([]string, error) {
	reqs, err := Requests(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.Name
	}
	return names, nil
}

// docs are the comments of the generated methods, per redaction.
var docs = map[Redaction][3]string{
	Marked: {
		"String prints the request with its secrets redacted.",
		"GoString is String, so %#v does not leak either.",
		"MarshalJSON encodes the request with its secrets redacted.",
	},
	Heuristic: {
		"String prints the wire request, with credentials and secret-looking parameter values hidden.",
		"GoString is String, so %#v does not leak either.",
		"MarshalJSON encodes the wire request, with credentials and secret-looking parameter values\n// hidden.",
	},
}

// Render is the content of GeneratedFile for the given requests of package p.
func Render(p Package, reqs []Request) ([]byte, error) {
	doc, ok := docs[p.Redaction]
	if !ok {
		return nil, fmt.Errorf("package %s: unknown redaction %d", p.Name, p.Redaction)
	}
	str, js := "String", "JSON"
	if p.Redaction == Heuristic {
		str, js = "HeuristicString", "HeuristicJSON"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by TestFormattersAreGenerated (go generate ./%s); DO NOT EDIT.

package %s

import "github.com/csikit/csikit/internal/reqfmt"
`, p.Dir, p.Name)
	for _, r := range reqs {
		args := "r." + strings.Join(r.Raws, ", r.")
		fmt.Fprintf(&b, `
// %[5]s
func (r %[1]s) String() string { return reqfmt.%[3]s(%[1]q, %[2]s) }

// %[6]s
func (r %[1]s) GoString() string { return r.String() }

// %[7]s
func (r %[1]s) MarshalJSON() ([]byte, error) { return reqfmt.%[4]s(%[2]s) }
`, r.Name, args, str, js, doc[0], doc[1], doc[2])
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generated code does not parse: %w", err)
	}
	return src, nil
}

// Sync renders the formatters of the package in dir and writes them to its GeneratedFile when
// write is set; otherwise it returns an error when the file differs (a request type was added,
// renamed or removed without `go generate`). A package without any request type is an error:
// the source walk is broken.
func Sync(dir string, p Package, write bool) error {
	reqs, err := Requests(dir)
	if err != nil {
		return err
	}
	if len(reqs) == 0 {
		return fmt.Errorf("%s: no request type found: the source walk is broken", p.Dir)
	}
	want, err := Render(p, reqs)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, GeneratedFile)
	if write {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s is stale: run go generate ./%s", GeneratedFile, p.Dir)
	}
	return nil
}
