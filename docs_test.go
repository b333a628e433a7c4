package csikit

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
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

// The tests below hold the repository's prose to what a newcomer needs: a short front door,
// guides that link, short sentences, commands that work as written, and no private references.

// readmeMaxLines bounds the front door: a newcomer reads it top to bottom in minutes, and
// everything else lives in a guide under docs/.
const readmeMaxLines = 250

// maxWordsPerSentence bounds the average sentence of every guide: long sentences are where
// readers lose the thread.
const maxWordsPerSentence = 20

// markdownFiles returns the repository's Markdown files, slash-separated and relative to the
// root, in every module, skipping hidden directories and testdata.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Markdown file found; run the test from the repository root")
	}
	return files
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fence matches a fenced code block, Mermaid diagrams included.
var fence = regexp.MustCompile("(?ms)^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*(```|~~~)[ \t]*$")

// TestREADMEIsAFrontDoor: README.md stays short and links every guide under docs/, so that a
// reader finds each guide from the page they read first.
func TestREADMEIsAFrontDoor(t *testing.T) {
	readme := readText(t, "README.md")
	if n := strings.Count(readme, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; at most %d: move the detail into a guide under docs/", n, readmeMaxLines)
	}
	guides, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) == 0 {
		t.Error("docs/ holds no guide")
	}
	for _, g := range guides {
		if !strings.Contains(readme, "]("+filepath.ToSlash(g)) {
			t.Errorf("README.md does not link %s", g)
		}
	}
}

// TestEveryExampleHasAREADME: each example says what it shows, how to run and test it, and what
// it cannot do, in a README.md of its own.
func TestEveryExampleHasAREADME(t *testing.T) {
	dirs, err := os.ReadDir("examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join("examples", d.Name(), "README.md")); err != nil {
			t.Errorf("examples/%s has no README.md", d.Name())
		}
	}
}

// backgroundedGoRun matches a go run command sent to the background with a lone '&'. Killing
// the PID of go run (kill $!, kill PID) leaves the compiled program serving and holding its
// socket, because go run does not pass the signal on; so the docs show Ctrl-C, or a build
// followed by running the binary in the background. (Not "go build ... && /tmp/x &" either: that
// backgrounds a subshell, and outside an interactive terminal a kill of the job reaches the
// subshell alone.)
var backgroundedGoRun = regexp.MustCompile(`\bgo run\b[^\n]*?[^&<>]&([^&>]|$)`)

// TestNoBackgroundedGoRun fails for each Markdown line that backgrounds a go run.
func TestNoBackgroundedGoRun(t *testing.T) {
	for _, f := range markdownFiles(t) {
		// A shell line continued with a backslash is one command.
		text := strings.ReplaceAll(readText(t, f), "\\\n", " ")
		for i, line := range strings.Split(text, "\n") {
			if backgroundedGoRun.MatchString(line) {
				t.Errorf("%s: line %d (counting continued lines once) runs go run in the background, and a kill of its PID leaves the program running: "+
					"build, then run the binary in the background (go build -o /tmp/x ./cmd, then /tmp/x & pid=$!; kill $pid), or say Ctrl-C stops it\n\t%s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestBackgroundedGoRunPattern(t *testing.T) {
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"go run ./examples/hostpath &", true},
		{"go run ./examples/hostpath --nodeid node-1 &          # listens", true},
		{"`go run ./examples/minimal -endpoint unix:///tmp/m/csi.sock &` then", true},
		{"go run ./examples/hostpath", false},
		{"go run ./cmd/csictl && echo done", false},
		{"go run . 2>&1 | tee log", false},
		{"go run . &>log", false},
		{"go build -o /tmp/hostpath ./examples/hostpath && /tmp/hostpath &", false},
	} {
		if got := backgroundedGoRun.MatchString(tt.line); got != tt.want {
			t.Errorf("backgroundedGoRun.MatchString(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// privateReference matches a reference to an issue or seed number of the project's private
// tracker (the word, an optional '#', a number): a reader cannot follow it. Name the spec and
// link it instead.
var privateReference = regexp.MustCompile(`(?i)\b(issue|seed)s? ?#?[0-9]+`)

// TestNoPrivateReferences fails for each tracked kind of text file (Markdown, Go, shell, YAML;
// not go.sum or testdata) that cites an issue or seed number, and for Markdown that points at
// ../shared, a directory no reader of the repository has.
func TestNoPrivateReferences(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == ".git" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !proseFile(path) {
			return nil
		}
		text := readText(t, path)
		for i, line := range strings.Split(text, "\n") {
			if m := privateReference.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q: name the spec and link it instead", filepath.ToSlash(path), i+1, m)
			}
			if strings.HasSuffix(path, ".md") && strings.Contains(line, "../shared") {
				t.Errorf("%s:%d points at ../shared, which no reader has", filepath.ToSlash(path), i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// proseFile reports whether path is a file whose text a reader meets: Markdown, Go, shell (by
// extension or #! line) or YAML. go.sum and go.work.sum are data.
func proseFile(path string) bool {
	switch filepath.Ext(path) {
	case ".md", ".go", ".sh", ".yaml", ".yml":
		return true
	case "":
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		head := make([]byte, 2)
		n, _ := f.Read(head)
		return n == 2 && string(head) == "#!"
	}
	return false
}

func TestPrivateReferencePattern(t *testing.T) {
	// Built by concatenation, so that this file passes the test it holds.
	for _, tt := range []struct {
		text string
		want bool
	}{
		{"issue" + " 12", true},
		{"Issue #" + "12", true},
		{"issues " + "19 and 20", true},
		{"seed " + "001", true},
		{"(seed" + "004)", true},
		{"a known issue in the controller", false},
		{"seed corpus", false},
		{"https://github.com/cozystack/cozystack/issues/3032", false},
	} {
		if got := privateReference.MatchString(tt.text); got != tt.want {
			t.Errorf("privateReference.MatchString(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestShortSentences fails for each guide whose sentences average more than
// maxWordsPerSentence words: README.md, CONTRIBUTING.md, BENCHMARKS.md, docs/*.md, every
// example's README.md and the root package doc. Code blocks, tables and headings are not prose and are left out.
func TestShortSentences(t *testing.T) {
	groups := map[string][]string{"README.md": {"README.md"}, "CONTRIBUTING.md and BENCHMARKS.md": {"CONTRIBUTING.md", "BENCHMARKS.md"}}
	for _, pattern := range []string{"docs/*.md", "examples/*/README.md"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		groups[pattern] = files
	}
	doc, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for name, files := range groups {
		var words, sentences int
		for _, f := range files {
			w, s := proseStats(readText(t, f))
			if s > 0 && float64(w)/float64(s) > maxWordsPerSentence {
				t.Errorf("%s: %.1f words a sentence on average (%d words, %d sentences); at most %d: split the long ones",
					f, float64(w)/float64(s), w, s, maxWordsPerSentence)
			}
			words, sentences = words+w, sentences+s
		}
		if sentences > 0 {
			t.Logf("%s: %.1f words a sentence (%d files)", name, float64(words)/float64(sentences), len(files))
		}
	}
	w, s := proseStats(doc.Doc.Text())
	if s == 0 || float64(w)/float64(s) > maxWordsPerSentence {
		t.Errorf("doc.go package doc: %d words in %d sentences; at most %d a sentence on average", w, s, maxWordsPerSentence)
	}
	t.Logf("doc.go package doc: %.1f words a sentence", float64(w)/float64(max(s, 1)))
}

var (
	inlineCode   = regexp.MustCompile("`[^`\n]*`")
	markdownLink = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	sentenceEnd  = regexp.MustCompile(`[.!?]["')\]]*(\s|$)`)
	listItem     = regexp.MustCompile(`^\s*([-*+]|[0-9]+[.)])\s+`)
	hasAlnum     = regexp.MustCompile(`[\pL\pN]`)
)

// proseStats counts the words and sentences of a Markdown text's prose. A paragraph or list
// item ends a sentence wherever it ends; inside one, a sentence ends at '.', '!' or '?' before a
// space. A code span counts one word per word it holds and never ends a sentence.
func proseStats(md string) (words, sentences int) {
	md = fence.ReplaceAllString(md, "")
	md = inlineCode.ReplaceAllStringFunc(md, func(span string) string {
		n := len(strings.Fields(strings.Trim(span, "`")))
		return strings.TrimSpace(strings.Repeat("code ", max(n, 1)))
	})
	md = markdownLink.ReplaceAllString(md, "$1")
	var blocks []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "", strings.HasPrefix(trimmed, "#"), strings.HasPrefix(trimmed, "|"), strings.HasPrefix(trimmed, "<"):
			flush()
			continue
		case listItem.MatchString(line):
			flush()
			trimmed = listItem.ReplaceAllString(line, "")
		}
		cur = append(cur, trimmed)
	}
	flush()
	for _, b := range blocks {
		for _, s := range sentenceEnd.Split(b, -1) {
			n := 0
			for _, w := range strings.Fields(s) {
				if hasAlnum.MatchString(w) {
					n++
				}
			}
			if n > 0 {
				words += n
				sentences++
			}
		}
	}
	return words, sentences
}

func TestProseStats(t *testing.T) {
	for _, tt := range []struct {
		name             string
		md               string
		words, sentences int
	}{
		{"two sentences", "One two three. Four five.", 5, 2},
		{"a paragraph ends a sentence", "One two\nthree\n\nFour five", 5, 2},
		{"list items end sentences", "Intro:\n- one two\n- three", 4, 3},
		{"code blocks, tables and headings are not prose", "# Title here\n\n```sh\ngo run . && go test ./...\n```\n\n| a | b |\n|---|---|\n\nText.", 1, 1},
		{"a code span is words, not sentence ends", "Run `go test ./... -run X` now.", 7, 1},
		{"a link counts its text", "See [the guide](docs/x.md). Then go.", 5, 2},
		{"a number is not a sentence end", "Version 1.13 of the spec.", 5, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, s := proseStats(tt.md)
			if w != tt.words || s != tt.sentences {
				t.Errorf("proseStats(%q) = %d words, %d sentences; want %d, %d", tt.md, w, s, tt.words, tt.sentences)
			}
		})
	}
}

// TestRelativeLinksResolve fails for each relative link of a Markdown file whose target does not
// exist, and for each anchor (#section) that names no heading of its Markdown file.
func TestRelativeLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(readText(t, path))
		anchors[path] = a
		return a
	}
	for _, f := range markdownFiles(t) {
		text := fence.ReplaceAllString(readText(t, f), "")
		text = inlineCode.ReplaceAllString(text, "")
		for _, m := range markdownLink.FindAllStringSubmatch(text, -1) {
			target := m[2]
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := f
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(f), file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links %q, which does not exist", f, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[anchor] {
				t.Errorf("%s links %q: %s has no heading with the anchor #%s", f, target, path, anchor)
			}
		}
	}
}

var anchorDrop = regexp.MustCompile(`[^\pL\pN _-]`)

// headingAnchors returns the anchors GitHub makes for a Markdown text's headings: the heading's
// text in lower case, punctuation but '-' and '_' dropped, spaces made '-'; a repeated heading
// gets -1, -2, ...
func headingAnchors(md string) map[string]bool {
	md = fence.ReplaceAllString(md, "")
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		h = markdownLink.ReplaceAllString(h, "$1")
		a := strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestHeadingAnchors(t *testing.T) {
	got := headingAnchors("# csikit\n## Two commands\n### Node side: mounting safely\n## `go test` tiers\n## Two commands\n```\n# not a heading\n```\n")
	for _, want := range []string{"csikit", "two-commands", "node-side-mounting-safely", "go-test-tiers", "two-commands-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block made an anchor")
	}
}

// ciTools matches .ci/run's list of commands the tests use, each with its Debian package
// (command:package), and ciPackages the packages it checks by name.
var (
	ciTools    = regexp.MustCompile(`(?s)for tool in (.*?); do`)
	ciPackages = regexp.MustCompile(`for pkg in ([^;]*); do`)
	aptInstall = regexp.MustCompile(`(?s)apt-get install -y --no-install-recommends (.*?)\n` + "```")
)

// TestSystemPackagesAreListed: docs/testing.md names the Debian packages of the system tier, and
// .ci/run installs them. The two lists must name the same packages, so that a reader who installs
// what the guide says can run every test CI runs.
func TestSystemPackagesAreListed(t *testing.T) {
	script := readText(t, ".ci/run")
	want := map[string]bool{}
	tools := ciTools.FindStringSubmatch(script)
	pkgs := ciPackages.FindStringSubmatch(script)
	if tools == nil || pkgs == nil {
		t.Fatal(".ci/run has no 'for tool in ...; do' or 'for pkg in ...; do' list")
	}
	for _, f := range strings.Fields(strings.ReplaceAll(tools[1], "\\\n", " ")) {
		_, pkg, ok := strings.Cut(f, ":")
		if !ok {
			t.Fatalf(".ci/run: %q in the tool list is not command:package", f)
		}
		want[pkg] = true
	}
	for _, pkg := range strings.Fields(pkgs[1]) {
		want[pkg] = true
	}

	guide := readText(t, "docs/testing.md")
	line := aptInstall.FindStringSubmatch(guide)
	if line == nil {
		t.Fatal("docs/testing.md has no 'apt-get install -y --no-install-recommends' block")
	}
	got := map[string]bool{}
	for _, pkg := range strings.Fields(strings.ReplaceAll(line[1], "\\\n", " ")) {
		got[pkg] = true
	}
	for pkg := range want {
		if !got[pkg] {
			t.Errorf("docs/testing.md does not list %s, which .ci/run installs", pkg)
		}
	}
	for pkg := range got {
		if !want[pkg] {
			t.Errorf("docs/testing.md lists %s, which .ci/run does not install", pkg)
		}
	}
}
