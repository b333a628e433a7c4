package apirecord

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"
)

// qSource is a second package the samples import, to show how other packages' names are written.
const qSource = `package q

type T struct{ X int }

type I interface{ M() }

func (T) M() {}
`

// checkSource type-checks one sample package ("example.com/p") from source; it may import
// "example.com/q" (qSource) and nothing else, so that no go command runs.
func checkSource(src string) (*types.Package, []*ast.File, error) {
	fset := token.NewFileSet()
	pkgs := map[string]*types.Package{}
	var imp importerFunc
	check := func(path, src string) (*types.Package, []*ast.File, error) {
		f, err := parser.ParseFile(fset, path+".go", src, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		pkg, err := (&types.Config{Importer: imp}).Check(path, fset, []*ast.File{f}, nil)
		return pkg, []*ast.File{f}, err
	}
	imp = func(path string) (*types.Package, error) {
		if p, ok := pkgs[path]; ok {
			return p, nil
		}
		if path != "example.com/q" {
			return nil, fmt.Errorf("sample imports %s; only example.com/q is available", path)
		}
		p, _, err := check(path, qSource)
		pkgs[path] = p
		return p, err
	}
	return check("example.com/p", src)
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// fullPath is the qualifier the samples use: a package's whole path.
func fullPath(p *types.Package) string { return p.Path() }

// sampleLines returns the record of a sample package without the "pkg p, " prefix.
func sampleLines(t testing.TB, src string) []string {
	t.Helper()
	pkg, files, err := checkSource(src)
	if err != nil {
		t.Fatalf("type-check the sample: %v", err)
	}
	lines, err := Features(pkg, "p", fullPath, Deprecated(files))
	if err != nil {
		t.Fatalf("Features: %v", err)
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "pkg p, ")
	}
	return lines
}

func TestFeatures(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{{
		name: "parameter names are dropped, variadic kept, byte and rune spelled as Go records them",
		src:  `func F(a int, b ...string) (n int, err error) { return 0, nil }; func B(x []byte, r rune) {}`,
		want: []string{"func B([]uint8, int32)", "func F(int, ...string) (int, error)"},
	}, {
		name: "unexported names and methods of unexported types are left out",
		src:  `func f() {}; type t struct{}; func (t) M() {}; var v int; const c = 1`,
		want: nil,
	}, {
		name: "constants record their type and value",
		src: `type Mode uint8
const (ModeA Mode = iota; ModeB)
const Name = "csi"
const Pi = 3.14159265358979323846264338327950288419716939937510582097494459`,
		want: []string{
			"const ModeA Mode", "const ModeA = 0", "const ModeB Mode", "const ModeB = 1",
			`const Name = "csi"`, "const Name ideal-string",
			"const Pi = 3.14159  // 314159265358979323846264338327950288419716939937510582097494459/100000000000000000000000000000000000000000000000000000000000000",
			"const Pi ideal-float",
			"type Mode uint8",
		},
	}, {
		name: "variables and other packages' types by their path",
		src:  `import "example.com/q"; var Default q.T; var Sink func(q.I) error`,
		want: []string{"var Default example.com/q.T", "var Sink func(example.com/q.I) error"},
	}, {
		name: "struct fields, embedded fields and comparability",
		src: `import "example.com/q"
type S struct { A, B int; hidden string; q.T; *Other }
type Other struct{ Counts map[string]int }`,
		want: []string{
			"method (S) M()", // and not again for *S
			"type Other struct", "type Other struct, Counts map[string]int",
			"type S struct", "type S struct, A int", "type S struct, B int", "type S struct, comparable",
			"type S struct, embedded *Other", "type S struct, embedded example.com/q.T",
		},
	}, {
		name: "fields promoted through an unexported embedded struct",
		src:  `type S struct { inner; Own int }; type inner struct { Own string; Reached int; deep }; type deep struct{ Deeper bool }`,
		want: []string{
			"type S struct", "type S struct, Deeper bool", "type S struct, Own int", "type S struct, Reached int",
			"type S struct, comparable",
		},
	}, {
		name: "value and pointer methods, promoted ones too",
		src:  `type T struct{ base }; type base struct{}; func (base) Name() string { return "" }; func (*T) Set(int) {}; func (T) Get() int { return 0 }`,
		want: []string{
			"method (*T) Set(int)", "method (T) Get() int", "method (T) Name() string",
			"type T struct", "type T struct, comparable",
		},
	}, {
		name: "an interface lists its methods, and their names on one line",
		src:  `import "example.com/q"; type I interface { q.I; Close() error; Read(p []byte) (int, error) }; type Empty interface{}`,
		want: []string{
			"type Empty interface {}",
			"type I interface { Close, M, Read }",
			"type I interface, Close() error", "type I interface, M()", "type I interface, Read([]uint8) (int, error)",
		},
	}, {
		name: "an interface with unexported methods may grow",
		src:  `type Sealed interface { Public(); private() }`,
		want: []string{"type Sealed interface, Public()", "type Sealed interface, unexported methods"},
	}, {
		name: "constraint interfaces keep their type terms",
		src:  `type Number interface { ~int | ~float64 }; type Key interface { comparable; String() string }`,
		want: []string{
			"type Key interface { String, comparable }", "type Key interface, String() string",
			"type Number interface { ~int | ~float64 }",
		},
	}, {
		name: "generic types, methods and functions write type parameters by index",
		src: `type List[T any] struct { Items []T }
func (l *List[T]) Push(v T) {}
func Keys[K comparable, V any](m map[K]V) []K { return nil }
func Sum[N ~int | ~int64](ns ...N) N { var z N; return z }`,
		want: []string{
			"func Keys[$0 comparable, $1 interface{}](map[$0]$1) []$0",
			"func Sum[$0 ~int | ~int64](...$0) $0",
			"method (*List[$0]) Push($0)",
			"type List[$0 interface{}] struct", "type List[$0 interface{}] struct, Items []$0",
		},
	}, {
		name: "aliases record their target; a use of an alias records what it stands for",
		src:  `import "example.com/q"; type A = q.T; type B = map[string]A; func Use(B) A { return A{} }`,
		want: []string{
			"func Use(map[string]example.com/q.T) example.com/q.T",
			"type A = example.com/q.T", "type B = map[string]example.com/q.T",
		},
	}, {
		name: "channels of channels keep their direction",
		src:  `var C chan (<-chan int); var S chan<- []int; var R <-chan chan<- int`,
		want: []string{"var C chan (<-chan int)", "var R <-chan chan<- int", "var S chan<- []int"},
	}, {
		name: "unnamed structs and interfaces are written in full",
		src:  "type S struct { Opts struct { Size int `json:\"size\"`; keep bool }; Hook interface{ Run(string) error }; Set map[string]struct{} }",
		want: []string{
			`type S struct`,
			`type S struct, Hook interface{ Run(string) error }`,
			`type S struct, Opts struct{ Size int "json:\"size\""; keep bool }`,
			`type S struct, Set map[string]struct{}`, // and a map makes it not comparable
		},
	}, {
		name: "deprecated names get a marker line",
		src: `// Old is old.
//
// Deprecated: use New.
func Old() {}

// T is a type.
type T struct {
	// Deprecated: set New.
	F int
}

// Deprecated: use Y.
func (T) M() {}

// I is an interface.
type I interface {
	// Deprecated: call N.
	M()
}

// Deprecated: the group goes.
const (
	A = 1
	B = 2
)

// Not says Deprecated: inside a sentence, which does not count.
func Not() {}`,
		want: []string{
			"const A //deprecated", "const A = 1", "const A ideal-int",
			"const B //deprecated", "const B = 2", "const B ideal-int",
			"func Not()", "func Old //deprecated", "func Old()",
			"method (T) M //deprecated", "method (T) M()",
			"type I interface { M }", "type I interface, M //deprecated", "type I interface, M()",
			"type T struct", "type T struct, F //deprecated", "type T struct, F int", "type T struct, comparable",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sampleLines(t, "package p\n"+tt.src)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
			}
		})
	}
}

// FuzzFeatures checks that whatever package type-checks gives sorted, distinct, one-line
// features without an error or a panic.
func FuzzFeatures(f *testing.F) {
	for _, seed := range []string{
		`type T struct{ A int }; func (T) M() {}`,
		`type I interface{ ~int | ~string }; func F[X I](x X) X { return x }`,
		`import "example.com/q"; type A = q.T; var V = map[string]chan<- A{}`,
		`type L[T any] struct{ next *L[T] }; func (l *L[T]) Next() *L[T] { return l.next }`,
		`const Big = 1 << 100; const S = "a\nb"`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		pkg, files, err := checkSource("package p\n" + src)
		if err != nil {
			return // not a valid package: nothing to record
		}
		lines, err := Features(pkg, "p", fullPath, Deprecated(files))
		if err != nil {
			t.Fatalf("Features of a valid package: %v", err)
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, "pkg p, ") || strings.ContainsAny(l, "\n\r") {
				t.Errorf("malformed line %q", l)
			}
			if i > 0 && lines[i-1] >= l {
				t.Errorf("lines not sorted and distinct at %q, %q", lines[i-1], l)
			}
		}
	})
}

func TestDeprecated(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"function", "// Deprecated: no.\nfunc F() {}", []string{"F"}},
		{"paragraph later in the doc", "// F does.\n//\n// Deprecated: no.\nfunc F() {}", []string{"F"}},
		{"not at a paragraph's start", "// F is not Deprecated: really.\nfunc F() {}", nil},
		{"method on a generic pointer receiver", "type L[T any] struct{}\n// Deprecated: no.\nfunc (*L[T]) M() {}", []string{"L.M"}},
		{"spec's own doc wins over the group's", "// Deprecated: all.\nvar (\n// A stays.\nA int\nB int\n)", []string{"B"}},
		{"struct field and embedded field", "type S struct {\n// Deprecated: no.\nA, B int\n// Deprecated: no.\n*E\n}\ntype E struct{}", []string{"S.A", "S.B", "S.E"}},
		{"interface method", "type I interface {\n// Deprecated: no.\nM()\n}", []string{"I.M"}},
		{"type", "// Deprecated: no.\ntype T int", []string{"T"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", "package p\n"+tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Sorted(func(yield func(string) bool) {
				for k := range Deprecated([]*ast.File{f}) {
					if !yield(k) {
						return
					}
				}
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
