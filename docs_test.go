package csikit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pending lists packages (a module-relative directory such as "driver/endpoint") or single files
// (such as "driver/controller.go") whose undocumented names are tolerated for now. Each is being
// documented by another change in progress; the entry goes once that change is in. An entry that
// no longer hides anything makes the test fail, so this list can only shrink: delete entries,
// never add to it to get a change through.
var pending = map[string]string{}

// TestEveryExportedNameIsDocumented fails for each exported name a user can reach through go doc
// that has no doc comment: types, functions, methods of exported types, constants, variables,
// struct fields and interface methods. A storage engineer reads the contract of a backend method
// or request field in go doc, not in the server code that enforces it, so a missing comment is a
// missing contract.
//
// Out of scope: test files, generated files, testdata, nested modules (bench/ has its own go.mod
// and its own rules), anything under an internal/ directory (users cannot import it), and
// examples/ (whole programs documented by their own READMEs and owners).
func TestEveryExportedNameIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	hidden := map[string]int{} // pending key -> names it hid
	var missing []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(path)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			// The go tool itself ignores "." and "_" directories and testdata.
			if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
				name == "internal" || rel == "examples" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module, e.g. bench/
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(file) {
			return nil
		}
		key := ""
		if _, ok := pending[rel]; ok {
			key = rel
		} else if _, ok := pending[filepath.ToSlash(filepath.Dir(path))]; ok {
			key = filepath.ToSlash(filepath.Dir(path))
		}
		for _, name := range undocumented(file) {
			if key != "" {
				hidden[key]++
				continue
			}
			missing = append(missing, fset.Position(name.Pos()).String()+": "+name.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("%s has no doc comment", m)
	}
	for key, reason := range pending {
		if hidden[key] == 0 {
			t.Errorf("pending[%q] (%s) hides nothing any more: delete the entry", key, reason)
		}
	}
}

// undocumented returns the identifier of every exported name in file that go doc would show
// without a sentence of its own.
func undocumented(file *ast.File) []*ast.Ident {
	var out []*ast.Ident
	for _, decl := range file.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if !decl.Name.IsExported() || (decl.Recv != nil && !exportedReceiver(decl.Recv)) {
				// go doc hides methods of unexported types, even exported ones that satisfy an
				// interface: nobody reads them there.
				continue
			}
			if decl.Doc == nil {
				out = append(out, decl.Name)
			}
		case *ast.GenDecl:
			// In a parenthesised group, go doc prints the group's comment above every spec in it,
			// so the group comment documents specs without one. A lone spec's comment is the
			// GenDecl's, which the same rule covers.
			groupDoc := decl.Doc != nil
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					if !spec.Name.IsExported() {
						continue
					}
					if spec.Doc == nil && spec.Comment == nil && !groupDoc {
						out = append(out, spec.Name)
					}
					out = append(out, undocumentedMembers(spec.Type)...)
				case *ast.ValueSpec:
					documented := spec.Doc != nil || spec.Comment != nil || groupDoc
					for _, name := range spec.Names {
						if name.IsExported() && !documented {
							out = append(out, name)
						}
					}
				}
			}
		}
	}
	return out
}

// undocumentedMembers returns the exported struct fields and interface methods of typ without a
// comment. Names declared on one line ("Min, Max int64 // bounds") share that line's comment, as go
// doc shows them together. Embedded fields are skipped: their documentation is their type's.
func undocumentedMembers(typ ast.Expr) []*ast.Ident {
	var fields *ast.FieldList
	switch typ := typ.(type) {
	case *ast.StructType:
		fields = typ.Fields
	case *ast.InterfaceType:
		fields = typ.Methods
	default:
		return nil
	}
	var out []*ast.Ident
	for _, field := range fields.List {
		documented := field.Doc != nil || field.Comment != nil
		for _, name := range field.Names {
			if name.IsExported() && !documented {
				out = append(out, name)
			}
		}
		if len(field.Names) > 0 {
			// An anonymous struct type in a field is part of the same contract.
			out = append(out, undocumentedMembers(field.Type)...)
		}
	}
	return out
}

// exportedReceiver reports whether a method's receiver type is exported, looking through pointers
// and type parameters (func (s *Set[K]) ...).
func exportedReceiver(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	typ := recv.List[0].Type
	for {
		switch t := typ.(type) {
		case *ast.StarExpr:
			typ = t.X
		case *ast.IndexExpr:
			typ = t.X
		case *ast.IndexListExpr:
			typ = t.X
		case *ast.ParenExpr:
			typ = t.X
		case *ast.Ident:
			return t.IsExported()
		default:
			return false
		}
	}
}
