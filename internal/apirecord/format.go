package apirecord

import (
	"fmt"
	"go/types"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Qualifier names a package other than the one being recorded, as it appears before a type name
// in the record ("context", "driver", "google.golang.org/grpc").
type Qualifier func(*types.Package) string

// Features returns the record's lines for one package, sorted, each starting with "pkg name, ".
// deprecated holds the names whose doc comment has a "Deprecated: " paragraph ("Name" for a
// package-level name, "Type.Name" for a field or method); each gets a marker line beside its own,
// so that deprecating shows in the record as an addition and a reviewer can see that a removal
// was announced first.
func Features(pkg *types.Package, name string, qualify Qualifier, deprecated map[string]bool) ([]string, error) {
	w := &writer{pkg: pkg, prefix: "pkg " + name + ", ", qualify: qualify, deprecated: deprecated, seen: map[string]bool{}}
	scope := pkg.Scope()
	for _, n := range scope.Names() { // sorted
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		w.object(obj)
	}
	if w.err != nil {
		return nil, fmt.Errorf("package %s: %w", pkg.Path(), w.err)
	}
	slices.Sort(w.lines)
	return w.lines, nil
}

// writer collects one package's lines. The first error sticks and ends the work, so that the
// type-writing helpers need not return one each.
type writer struct {
	pkg        *types.Package
	prefix     string
	qualify    Qualifier
	deprecated map[string]bool
	lines      []string
	seen       map[string]bool
	err        error
}

func (w *writer) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

func (w *writer) emit(scope, feature string) {
	line := w.prefix + scope + feature
	if strings.ContainsAny(line, "\n\r") {
		w.fail("line %q spans more than one line", line)
		return
	}
	if w.seen[line] {
		// Two features on one line would hide a change to either of them.
		w.fail("line %q recorded twice", line)
		return
	}
	w.seen[line] = true
	w.lines = append(w.lines, line)
}

// marker adds the deprecation line for key ("Name" or "Type.Name") under the given feature text.
func (w *writer) marker(key, scope, feature string) {
	if w.deprecated[key] {
		w.emit(scope, feature+" //deprecated")
	}
}

func (w *writer) object(obj types.Object) {
	switch obj := obj.(type) {
	case *types.Const:
		w.marker(obj.Name(), "", "const "+obj.Name())
		w.emit("", "const "+obj.Name()+" "+w.typeString(obj.Type()))
		short, exact := obj.Val().String(), obj.Val().ExactString()
		if short == exact {
			w.emit("", "const "+obj.Name()+" = "+short)
		} else {
			// String abbreviates long values; ExactString keeps the change visible.
			w.emit("", "const "+obj.Name()+" = "+short+"  // "+exact)
		}
	case *types.Var:
		w.marker(obj.Name(), "", "var "+obj.Name())
		w.emit("", "var "+obj.Name()+" "+w.typeString(obj.Type()))
	case *types.Func:
		w.marker(obj.Name(), "", "func "+obj.Name())
		w.emit("", "func "+obj.Name()+w.signatureString(obj.Signature()))
	case *types.TypeName:
		w.typeName(obj)
	default:
		w.fail("%s: unexpected %T in package scope", obj.Name(), obj)
	}
}

func (w *writer) typeName(obj *types.TypeName) {
	name := obj.Name()
	w.marker(name, "", "type "+name)
	if obj.IsAlias() {
		if alias, ok := obj.Type().(*types.Alias); ok && alias.TypeParams().Len() > 0 {
			name += w.typeParams(alias.TypeParams())
		}
		w.emit("", "type "+name+" = "+w.typeString(types.Unalias(obj.Type())))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		w.fail("type %s: %T is neither named nor an alias", name, obj.Type())
		return
	}
	if named.TypeParams().Len() > 0 {
		name += w.typeParams(named.TypeParams())
	}
	switch under := named.Underlying().(type) {
	case *types.Struct:
		w.structType(obj.Name(), name, under, named)
	case *types.Interface:
		w.interfaceType(name, under)
		return // its methods are its lines
	default:
		w.emit("", "type "+name+" "+w.typeString(under))
	}
	w.methods(obj.Name(), named)
}

func (w *writer) structType(key, name string, st *types.Struct, named *types.Named) {
	scope := "type " + name + " struct, "
	w.emit("", "type "+name+" struct")
	if types.Comparable(named) {
		// Go's own record misses this: a struct that stops being comparable breaks every == and
		// map key of it, while its field lines may only grow. "comparable" cannot be an exported
		// field name, so the line cannot be mistaken for one.
		w.emit(scope, "comparable")
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		if !f.Exported() {
			continue
		}
		if f.Embedded() {
			w.marker(key+"."+f.Name(), scope, "embedded "+w.typeString(f.Type()))
			w.emit(scope, "embedded "+w.typeString(f.Type()))
			continue
		}
		w.marker(key+"."+f.Name(), scope, f.Name())
		w.emit(scope, f.Name()+" "+w.typeString(f.Type()))
	}
	w.promotedFields(scope, st, named)
}

// promotedFields records the exported fields a caller reaches through an unexported embedded
// field (Go's record misses them): t.F compiles whether F is declared in T or in an unexported
// struct T embeds. Fields promoted through an exported embedded type are that type's own lines.
func (w *writer) promotedFields(scope string, st *types.Struct, named *types.Named) {
	names := map[string]bool{}
	for i := range st.NumFields() {
		if f := st.Field(i); f.Embedded() && !f.Exported() {
			exportedFieldNames(f.Type(), names, map[types.Type]bool{})
		}
	}
	for i := range st.NumFields() {
		delete(names, st.Field(i).Name()) // declared here, recorded above
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		obj, index, _ := types.LookupFieldOrMethod(named, true, w.pkg, name)
		if v, ok := obj.(*types.Var); ok && v.IsField() && len(index) > 1 {
			w.emit(scope, name+" "+w.typeString(v.Type()))
		}
	}
}

// exportedFieldNames adds the names of t's exported fields, and those of the structs it embeds
// unexported, to names.
func exportedFieldNames(t types.Type, names map[string]bool, seen map[types.Type]bool) {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if seen[t] {
		return // an embedding cycle through pointers
	}
	seen[t] = true
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		if f.Exported() {
			names[f.Name()] = true
		} else if f.Embedded() {
			exportedFieldNames(f.Type(), names, seen)
		}
	}
}

func (w *writer) interfaceType(name string, it *types.Interface) {
	scope := "type " + name + " interface, "
	var names []string
	sealed := false
	for i := range it.NumMethods() { // ordered by Id, so exported names come sorted
		m := it.Method(i)
		if !m.Exported() {
			sealed = true
			continue
		}
		names = append(names, m.Name())
		if origin := recvName(m); m.Pkg() == w.pkg && origin != "" {
			w.marker(origin+"."+m.Name(), scope, m.Name()) // where it is declared, maybe an embedded interface
		}
		w.emit(scope, m.Name()+w.signatureString(m.Signature()))
	}
	if sealed {
		// Only this package can implement it, so it may gain methods; a lost method still shows
		// as a removed line above.
		w.emit(scope, "unexported methods")
		return
	}
	// The method names on one line make adding a method (which breaks every implementation
	// outside) a changed, hence removed, line rather than a mere addition.
	terms := append(names, w.embeddeds(it)...)
	if len(terms) == 0 {
		w.emit("", "type "+name+" interface {}")
		return
	}
	w.emit("", "type "+name+" interface { "+strings.Join(terms, ", ")+" }")
}

// methods records the exported methods of T and *T, promoted ones included: a caller reaches
// them the same way.
func (w *writer) methods(key string, named *types.Named) {
	done := map[string]bool{}
	for _, recv := range []types.Type{named, types.NewPointer(named)} {
		mset := types.NewMethodSet(recv)
		for i := range mset.Len() {
			sel := mset.At(i)
			m := sel.Obj()
			if !m.Exported() || done[m.Name()] {
				continue
			}
			done[m.Name()] = true
			sig, ok := sel.Type().(*types.Signature)
			if !ok {
				w.fail("method %s.%s: %T is not a signature", key, m.Name(), sel.Type())
				return
			}
			r := w.typeString(sig.Recv().Type())
			if tp := named.TypeParams(); tp.Len() > 0 {
				r += w.typeArgs(tp)
			}
			head := "method (" + r + ") " + m.Name()
			if origin := recvName(m); m.Pkg() == w.pkg && origin != "" {
				// A promoted method is deprecated where it is declared.
				w.marker(origin+"."+m.Name(), "", head)
			}
			w.emit("", head+w.signatureString(sig))
		}
	}
}

// embeddeds returns the type terms of a constraint interface (unions, comparable, single types),
// sorted: they are part of what the interface means, and its methods are listed apart.
func (w *writer) embeddeds(it *types.Interface) []string {
	var out []string
	for i := range it.NumEmbeddeds() {
		switch e := it.EmbeddedType(i).(type) {
		case *types.Union:
			out = append(out, w.union(e))
		default:
			if e == types.Universe.Lookup("comparable").Type() {
				out = append(out, "comparable")
			} else if inner, ok := e.Underlying().(*types.Interface); ok {
				out = append(out, w.embeddeds(inner)...) // its methods are in it.Method already
			} else {
				out = append(out, w.typeString(e))
			}
		}
	}
	slices.Sort(out)
	return out
}

func (w *writer) union(u *types.Union) string {
	terms := make([]string, u.Len())
	for i := range u.Len() {
		t := u.Term(i)
		terms[i] = w.typeString(t.Type())
		if t.Tilde() {
			terms[i] = "~" + terms[i]
		}
	}
	return strings.Join(terms, " | ")
}

func (w *writer) typeString(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *writer) signatureString(sig *types.Signature) string {
	var b strings.Builder
	w.writeSignature(&b, sig)
	return b.String()
}

// typeParams writes a declaration's type parameters with their constraints. A parameter is
// written by index ($0, $1), as in Go's record: renaming one is not an API change.
func (w *writer) typeParams(tp *types.TypeParamList) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range tp.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		w.writeType(&b, tp.At(i))
		b.WriteByte(' ')
		w.writeType(&b, tp.At(i).Constraint())
	}
	b.WriteByte(']')
	return b.String()
}

// typeArgs writes a receiver's type parameters without constraints: the type's line has them.
func (w *writer) typeArgs(tp *types.TypeParamList) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range tp.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		w.writeType(&b, tp.At(i))
	}
	b.WriteByte(']')
	return b.String()
}

func (w *writer) writeSignature(b *strings.Builder, sig *types.Signature) {
	if tp := sig.TypeParams(); tp.Len() > 0 {
		b.WriteString(w.typeParams(tp))
	}
	w.writeTuple(b, sig.Params(), sig.Variadic())
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteByte(' ')
		w.writeType(b, res.At(0).Type())
	default:
		b.WriteByte(' ')
		w.writeTuple(b, res, false)
	}
}

// writeTuple writes types only: parameter names are not part of the API.
func (w *writer) writeTuple(b *strings.Builder, t *types.Tuple, variadic bool) {
	b.WriteByte('(')
	for i := range t.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			if s, ok := typ.(*types.Slice); ok {
				b.WriteString("...")
				typ = s.Elem()
			}
		}
		w.writeType(b, typ)
	}
	b.WriteByte(')')
}

// recvName returns the name of the type that declares method m, "" if it has none.
func recvName(m types.Object) string {
	fn, ok := m.(*types.Func)
	if !ok || fn.Signature().Recv() == nil {
		return ""
	}
	t := fn.Signature().Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

func (w *writer) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		b.WriteString(basicName(t))
		if t.Kind() == types.Invalid {
			w.fail("invalid type in the export data")
		}
	case *types.Pointer:
		b.WriteByte('*')
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteByte(']')
		w.writeType(b, t.Elem())
	case *types.Chan:
		w.writeChan(b, t)
	case *types.Signature:
		b.WriteString("func")
		w.writeSignature(b, t)
	case *types.Struct:
		w.writeStruct(b, t)
	case *types.Interface:
		w.writeInterface(b, t)
	case *types.Union:
		b.WriteString(w.union(t))
	case *types.Alias:
		// What a caller can pass or receive is the aliased type; the alias's own name is
		// recorded where it is declared.
		w.writeType(b, types.Unalias(t))
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && obj.Pkg() != w.pkg {
			b.WriteString(w.qualify(obj.Pkg()))
			b.WriteByte('.')
		}
		b.WriteString(obj.Name())
		if args := t.TypeArgs(); args.Len() > 0 {
			b.WriteByte('[')
			for i := range args.Len() {
				if i > 0 {
					b.WriteString(", ")
				}
				w.writeType(b, args.At(i))
			}
			b.WriteByte(']')
		}
	case *types.TypeParam:
		b.WriteString("$" + strconv.Itoa(t.Index()))
	default:
		w.fail("unexpected type %T", t)
	}
}

func (w *writer) writeChan(b *strings.Builder, t *types.Chan) {
	paren := false
	switch t.Dir() {
	case types.SendOnly:
		b.WriteString("chan<- ")
	case types.RecvOnly:
		b.WriteString("<-chan ")
	default:
		b.WriteString("chan ")
		// chan (<-chan T) is not chan<- (chan T).
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			paren = true
		}
	}
	if paren {
		b.WriteByte('(')
	}
	w.writeType(b, t.Elem())
	if paren {
		b.WriteByte(')')
	}
}

// writeStruct writes an unnamed struct in full (Go's record writes only "struct"): a field or tag
// change in it changes which values fit.
func (w *writer) writeStruct(b *strings.Builder, st *types.Struct) {
	if st.NumFields() == 0 {
		b.WriteString("struct{}")
		return
	}
	b.WriteString("struct{ ")
	for i := range st.NumFields() {
		if i > 0 {
			b.WriteString("; ")
		}
		f := st.Field(i)
		if !f.Embedded() {
			b.WriteString(f.Name())
			b.WriteByte(' ')
		}
		w.writeType(b, f.Type())
		if tag := st.Tag(i); tag != "" {
			b.WriteString(" " + strconv.Quote(tag))
		}
	}
	b.WriteString(" }")
}

// writeInterface writes an unnamed interface in full (Go's record writes only method names): a
// changed method signature changes which values fit.
func (w *writer) writeInterface(b *strings.Builder, it *types.Interface) {
	if it.IsImplicit() {
		// A constraint written as ~int in a type parameter list.
		b.WriteString(strings.Join(w.embeddeds(it), ", "))
		return
	}
	var terms []string
	for i := range it.NumMethods() {
		m := it.Method(i)
		terms = append(terms, m.Name()+w.signatureString(m.Signature()))
	}
	terms = append(terms, w.embeddeds(it)...)
	if len(terms) == 0 {
		b.WriteString("interface{}")
		return
	}
	b.WriteString("interface{ " + strings.Join(terms, "; ") + " }")
}

// basicName spells byte and rune as uint8 and int32 (export data does not keep the difference) and
// untyped constants' types as Go's record does.
func basicName(t *types.Basic) string {
	switch t.Kind() {
	case types.UntypedBool:
		return "ideal-bool"
	case types.UntypedInt:
		return "ideal-int"
	case types.UntypedRune:
		return "ideal-char"
	case types.UntypedFloat:
		return "ideal-float"
	case types.UntypedComplex:
		return "ideal-complex"
	case types.UntypedString:
		return "ideal-string"
	case types.UntypedNil:
		return "untyped nil"
	case types.UnsafePointer:
		return "unsafe.Pointer"
	case types.Invalid:
		return "invalid type"
	}
	return types.Typ[t.Kind()].Name()
}
