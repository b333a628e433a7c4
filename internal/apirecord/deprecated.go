package apirecord

import (
	"go/ast"
	"strings"
)

// Deprecated returns the names in a package's files whose doc comment has a paragraph starting
// "Deprecated: " (the convention go doc, gopls and staticcheck read): "Name" for a package-level
// name, "Type.Name" for a method, a struct field or an interface method. Export data has no
// comments, so they come from the source.
func Deprecated(files []*ast.File) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !isDeprecated(d.Doc) {
					continue
				}
				if d.Recv == nil || len(d.Recv.List) == 0 {
					out[d.Name.Name] = true
				} else if recv := baseTypeName(d.Recv.List[0].Type); recv != "" {
					out[recv+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				genDecl(d, out)
			}
		}
	}
	return out
}

func genDecl(d *ast.GenDecl, out map[string]bool) {
	for _, spec := range d.Specs {
		// A group's comment covers each spec that has none of its own, as staticcheck reads it.
		doc := d.Doc
		switch s := spec.(type) {
		case *ast.ValueSpec:
			if s.Doc != nil {
				doc = s.Doc
			}
			if isDeprecated(doc) {
				for _, n := range s.Names {
					out[n.Name] = true
				}
			}
		case *ast.TypeSpec:
			if s.Doc != nil {
				doc = s.Doc
			}
			if isDeprecated(doc) {
				out[s.Name.Name] = true
			}
			var fields *ast.FieldList
			switch t := s.Type.(type) {
			case *ast.StructType:
				fields = t.Fields
			case *ast.InterfaceType:
				fields = t.Methods
			}
			if fields == nil {
				continue
			}
			for _, f := range fields.List {
				if !isDeprecated(f.Doc) {
					continue
				}
				for _, n := range fieldNames(f) {
					out[s.Name.Name+"."+n] = true
				}
			}
		}
	}
}

// fieldNames returns a field's names, or an embedded field's type name.
func fieldNames(f *ast.Field) []string {
	if len(f.Names) == 0 {
		if n := baseTypeName(f.Type); n != "" {
			return []string{n}
		}
		return nil
	}
	names := make([]string, len(f.Names))
	for i, n := range f.Names {
		names[i] = n.Name
	}
	return names
}

// baseTypeName returns T for T, *T, T[P], pkg.T and their combinations; "" for anything else.
func baseTypeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.Ident:
			return t.Name
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			e = t.Sel
		case *ast.ParenExpr:
			e = t.X
		default:
			return ""
		}
	}
}

func isDeprecated(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for para := range strings.SplitSeq(doc.Text(), "\n\n") {
		if strings.HasPrefix(para, "Deprecated: ") {
			return true
		}
	}
	return false
}
