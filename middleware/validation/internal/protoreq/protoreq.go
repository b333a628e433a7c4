// Package protoreq reads a .proto file and finds the fields its comments declare REQUIRED.
//
// The CSI spec marks required fields only in prose ("This field is REQUIRED."), not in the
// descriptors, so the validation package derives its table from the comments. The parser is
// deliberately small: it understands the subset of proto3 that csi.proto and its siblings use
// (messages, nested messages, enums, oneofs, maps, options, reserved, services, extend blocks)
// and attaches comments the way protoc does: the comment block directly above an element with no
// blank line between, plus a trailing comment on the element's own line.
//
// Both the generator (../gen) and the up-to-date test of the validation package use it, so the
// checked-in table can never silently drift from what the generator would write.
package protoreq

import (
	"bytes"
	"fmt"
	"go/format"
	"regexp"
	"sort"
	"strings"
)

// Field is one field of a message as written in the .proto file.
type Field struct {
	Name     string
	Type     string // as written: "string", "repeated VolumeCapability", "map<string,string>"
	Required bool   // the attached comment says "This field is REQUIRED" or "This is a REQUIRED field"
	// Comment is the attached comment, lines joined by single spaces. The validation package's
	// tests read it to cross-check rules the spec states only in prose (size-limit overrides,
	// absolute paths) against the rules it applies.
	Comment string
}

// Message is one message, nested ones included, with its fully qualified name.
type Message struct {
	FullName string
	Fields   []Field
}

// Hit is a comment that mentions REQUIRED in a way the parser does not classify by itself. Each one
// must be looked at by a person (the validation package lists the reviewed ones in exceptions.go).
type Hit struct {
	Where string // fully qualified name of the element the comment belongs to
	Kind  string // "field", "message", "enum", "enum value", "service", "rpc", "oneof", "extension"
	Text  string // the comment, lines joined by single spaces
}

// Result is what Parse finds.
type Result struct {
	Package  string
	Messages []Message // in file order; a nested message follows its parent
	Unclear  []Hit     // in file order
}

// Required returns, per message full name, its REQUIRED field names in declaration order. Messages
// with no REQUIRED field are left out.
func (r *Result) Required() map[string][]string {
	out := make(map[string][]string)
	for _, m := range r.Messages {
		for _, f := range m.Fields {
			if f.Required {
				out[m.FullName] = append(out[m.FullName], f.Name)
			}
		}
	}
	return out
}

var (
	// The two phrasings csi.proto uses for an unconditional requirement. "This field is REQUIRED
	// for idempotency." is still unconditional; "REQUIRED if/when/unless ..." is not.
	requiredPhrase = regexp.MustCompile(`This field is REQUIRED|This is a REQUIRED field`)
	conditional    = regexp.MustCompile(`^\W*(if|when|unless|only)\b`)
)

// classify reports whether comment text makes a field REQUIRED and whether it also mentions
// REQUIRED in some other way that a person should read.
func classify(text string) (required, unclear bool) {
	total := strings.Count(text, "REQUIRED")
	if total == 0 {
		return false, false
	}
	matched := 0
	for _, loc := range requiredPhrase.FindAllStringIndex(text, -1) {
		rest := text[loc[1]:]
		if strings.HasPrefix(text[loc[0]:loc[1]], "This field is") {
			if conditional.MatchString(rest) {
				continue // conditionally required: a person decides
			}
		}
		matched++
	}
	return matched > 0, matched != total
}

// Parse parses a .proto source.
func Parse(src []byte) (*Result, error) {
	toks, trailing, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, trailing: trailing}
	if err := p.file(); err != nil {
		return nil, err
	}
	return &p.res, nil
}

// ---- lexer ----

type token struct {
	text    string
	line    int
	str     bool   // a quoted string literal
	leading string // comment block directly above, joined
}

type lexer struct {
	src  []byte
	pos  int
	line int

	toks []token
	// Own-line comment lines, by line number, and trailing comments by line number.
	ownLine  map[int]string
	trailing map[int]string
	lastTok  int // line of the last token emitted
}

func lex(src []byte) ([]token, map[int]string, error) {
	lx := &lexer{src: src, line: 1, ownLine: map[int]string{}, trailing: map[int]string{}}
	for {
		lx.skipSpace()
		if lx.pos >= len(lx.src) {
			break
		}
		c := lx.src[lx.pos]
		switch {
		case c == '/' && lx.peek(1) == '/':
			start := lx.pos + 2
			end := bytes.IndexByte(lx.src[start:], '\n')
			if end < 0 {
				end = len(lx.src)
			} else {
				end += start
			}
			lx.comment(lx.line, string(lx.src[start:end]))
			lx.pos = end
		case c == '/' && lx.peek(1) == '*':
			end := bytes.Index(lx.src[lx.pos+2:], []byte("*/"))
			if end < 0 {
				return nil, nil, fmt.Errorf("line %d: unterminated block comment", lx.line)
			}
			body := string(lx.src[lx.pos+2 : lx.pos+2+end])
			for i, l := range strings.Split(body, "\n") {
				l = strings.TrimSpace(l)
				l = strings.TrimPrefix(l, "*")
				lx.comment(lx.line+i, l)
			}
			lx.line += strings.Count(body, "\n")
			lx.pos += end + 4
		case c == '"' || c == '\'':
			start := lx.pos
			lx.pos++
			for lx.pos < len(lx.src) && lx.src[lx.pos] != c {
				if lx.src[lx.pos] == '\\' {
					lx.pos++
				}
				if lx.pos < len(lx.src) && lx.src[lx.pos] == '\n' {
					return nil, nil, fmt.Errorf("line %d: newline in string literal", lx.line)
				}
				lx.pos++
			}
			if lx.pos >= len(lx.src) {
				return nil, nil, fmt.Errorf("line %d: unterminated string literal", lx.line)
			}
			lx.pos++
			lx.emit(string(lx.src[start:lx.pos]), true)
		case isIdentStart(c) || c == '.' && isIdentStart(lx.peek(1)):
			start := lx.pos
			lx.pos++
			for lx.pos < len(lx.src) && (isIdentStart(lx.src[lx.pos]) || isDigit(lx.src[lx.pos]) || lx.src[lx.pos] == '.') {
				lx.pos++
			}
			lx.emit(string(lx.src[start:lx.pos]), false)
		case isDigit(c) || c == '-' && isDigit(lx.peek(1)):
			start := lx.pos
			lx.pos++
			for lx.pos < len(lx.src) && (isIdentStart(lx.src[lx.pos]) || isDigit(lx.src[lx.pos]) || lx.src[lx.pos] == '.') {
				lx.pos++
			}
			lx.emit(string(lx.src[start:lx.pos]), false)
		case strings.IndexByte("{}[]()<>;=,:", c) >= 0:
			lx.pos++
			lx.emit(string(c), false)
		default:
			return nil, nil, fmt.Errorf("line %d: unexpected character %q", lx.line, c)
		}
	}
	return lx.toks, lx.trailing, nil
}

func (lx *lexer) peek(n int) byte {
	if lx.pos+n < len(lx.src) {
		return lx.src[lx.pos+n]
	}
	return 0
}

func (lx *lexer) skipSpace() {
	for lx.pos < len(lx.src) {
		switch lx.src[lx.pos] {
		case '\n':
			lx.line++
		case ' ', '\t', '\r', '\f', '\v':
		default:
			return
		}
		lx.pos++
	}
}

func (lx *lexer) comment(line int, text string) {
	text = strings.TrimSpace(text)
	if len(lx.toks) > 0 && lx.lastTok == line {
		lx.trailing[line] = text
		return
	}
	lx.ownLine[line] = text
}

// emit appends a token with the comment block that ends on the line directly above it.
func (lx *lexer) emit(text string, str bool) {
	t := token{text: text, line: lx.line, str: str}
	if lx.lastTok != lx.line { // only the first token on a line can own a leading comment
		var lines []string
		for l := lx.line - 1; ; l-- {
			c, ok := lx.ownLine[l]
			if !ok {
				break
			}
			lines = append(lines, c)
		}
		for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
			lines[i], lines[j] = lines[j], lines[i]
		}
		t.leading = join(lines)
	}
	lx.lastTok = lx.line
	lx.toks = append(lx.toks, t)
}

func join(lines []string) string {
	return strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWord(tok string) bool {
	return tok != "" && (isIdentStart(tok[0]) || tok[0] == '.' || isDigit(tok[0]))
}

// ---- parser ----

type parser struct {
	toks     []token
	pos      int
	res      Result
	trailing map[int]string
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *parser) next() (token, error) {
	if p.pos >= len(p.toks) {
		return token{}, fmt.Errorf("unexpected end of file")
	}
	t := p.toks[p.pos]
	p.pos++
	return t, nil
}

func (p *parser) expect(text string) (token, error) {
	t, err := p.next()
	if err != nil {
		return t, fmt.Errorf("want %q: %w", text, err)
	}
	if t.text != text || t.str {
		return t, fmt.Errorf("line %d: want %q, got %q", t.line, text, t.text)
	}
	return t, nil
}

// statement consumes tokens up to and including the next ';' at nesting depth 0 (brackets and
// parentheses are tracked so that options such as [(a) = true] are skipped whole).
func (p *parser) statement() (last token, err error) {
	depth := 0
	for {
		t, err := p.next()
		if err != nil {
			return t, err
		}
		if t.str {
			continue
		}
		switch t.text {
		case "[", "(", "<":
			depth++
		case "]", ")", ">":
			depth--
		case "{":
			if depth == 0 {
				return t, fmt.Errorf("line %d: unexpected '{'", t.line)
			}
		case ";":
			if depth == 0 {
				return t, nil
			}
		}
	}
}

// block skips a balanced { ... } whose '{' has already been consumed.
func (p *parser) block() error {
	depth := 1
	for depth > 0 {
		t, err := p.next()
		if err != nil {
			return err
		}
		if t.str {
			continue
		}
		switch t.text {
		case "{":
			depth++
		case "}":
			depth--
		}
	}
	return nil
}

// comment is the leading comment of first plus any trailing comment on the line of last.
func (p *parser) comment(first, last token) string {
	c := first.leading
	if tr, ok := p.trailing[last.line]; ok && tr != "" {
		c = join([]string{c, tr})
	}
	return c
}

func (p *parser) note(where, kind, text string) {
	if strings.Contains(text, "REQUIRED") {
		p.res.Unclear = append(p.res.Unclear, Hit{Where: where, Kind: kind, Text: text})
	}
}

func (p *parser) file() error {
	for p.pos < len(p.toks) {
		t := p.peek()
		switch t.text {
		case "syntax", "edition", "package", "import", "option":
			p.pos++
			if t.text == "package" {
				name, err := p.next()
				if err != nil {
					return err
				}
				p.res.Package = name.text
			}
			if _, err := p.statement(); err != nil {
				return err
			}
		case "message":
			if err := p.message(p.res.Package); err != nil {
				return err
			}
		case "enum":
			if err := p.enum(p.res.Package); err != nil {
				return err
			}
		case "service", "extend":
			p.pos++
			name, err := p.next()
			if err != nil {
				return err
			}
			p.note(qualify(p.res.Package, name.text), t.text, t.leading)
			if _, err := p.expect("{"); err != nil {
				return err
			}
			if err := p.block(); err != nil {
				return err
			}
		case ";":
			p.pos++
		default:
			return fmt.Errorf("line %d: unexpected %q at top level", t.line, t.text)
		}
	}
	return nil
}

func qualify(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "." + name
}

func (p *parser) message(scope string) error {
	kw, _ := p.next() // "message"
	name, err := p.next()
	if err != nil {
		return err
	}
	full := qualify(scope, name.text)
	p.note(full, "message", kw.leading)
	if _, err := p.expect("{"); err != nil {
		return err
	}
	idx := len(p.res.Messages)
	p.res.Messages = append(p.res.Messages, Message{FullName: full})
	var fields []Field
	if err := p.body(full, &fields, false); err != nil {
		return err
	}
	p.res.Messages[idx].Fields = fields
	return nil
}

// body parses message (or oneof) members up to the closing '}'.
func (p *parser) body(full string, fields *[]Field, inOneof bool) error {
	for {
		t := p.peek()
		if t.text == "" && !t.str {
			return fmt.Errorf("message %s: unexpected end of file", full)
		}
		switch {
		case t.text == "}" && !t.str:
			p.pos++
			return nil
		case t.text == ";":
			p.pos++
		case !inOneof && t.text == "message":
			if err := p.message(full); err != nil {
				return err
			}
		case !inOneof && t.text == "enum":
			if err := p.enum(full); err != nil {
				return err
			}
		case !inOneof && t.text == "extend":
			p.pos++
			if _, err := p.next(); err != nil {
				return err
			}
			if _, err := p.expect("{"); err != nil {
				return err
			}
			if err := p.block(); err != nil {
				return err
			}
		case !inOneof && t.text == "oneof":
			p.pos++
			name, err := p.next()
			if err != nil {
				return err
			}
			p.note(full+"."+name.text, "oneof", t.leading)
			if _, err := p.expect("{"); err != nil {
				return err
			}
			if err := p.body(full, fields, true); err != nil {
				return err
			}
		case t.text == "option" || t.text == "reserved" || t.text == "extensions":
			if _, err := p.statement(); err != nil {
				return err
			}
		default:
			f, err := p.field(full)
			if err != nil {
				return fmt.Errorf("message %s: %w", full, err)
			}
			*fields = append(*fields, f)
		}
	}
}

// field parses `[label] Type name = N [options];` or `map<K, V> name = N [options];`.
func (p *parser) field(msg string) (Field, error) {
	first := p.peek()
	var typ []string
	for {
		t, err := p.next()
		if err != nil {
			return Field{}, err
		}
		if t.text == "=" && !t.str {
			break
		}
		typ = append(typ, t.text)
	}
	if len(typ) < 2 {
		return Field{}, fmt.Errorf("line %d: malformed field", first.line)
	}
	name := typ[len(typ)-1]
	typ = typ[:len(typ)-1]
	last, err := p.statement()
	if err != nil {
		return Field{}, err
	}
	// Join the type tokens with a space only between two words: "repeated Foo", "map<string,Foo>".
	var tb strings.Builder
	for i, tok := range typ {
		if i > 0 && isWord(typ[i-1]) && isWord(tok) {
			tb.WriteByte(' ')
		}
		tb.WriteString(tok)
	}
	t := tb.String()
	text := p.comment(first, last)
	req, unclear := classify(text)
	f := Field{Name: name, Type: t, Required: req, Comment: text}
	if unclear {
		p.res.Unclear = append(p.res.Unclear, Hit{Where: msg + "." + name, Kind: "field", Text: text})
	}
	return f, nil
}

func (p *parser) enum(scope string) error {
	kw, _ := p.next() // "enum"
	name, err := p.next()
	if err != nil {
		return err
	}
	full := qualify(scope, name.text)
	p.note(full, "enum", kw.leading)
	if _, err := p.expect("{"); err != nil {
		return err
	}
	for {
		t, err := p.next()
		if err != nil {
			return err
		}
		switch {
		case t.text == "}" && !t.str:
			return nil
		case t.text == ";":
		case t.text == "option" || t.text == "reserved":
			if _, err := p.statement(); err != nil {
				return err
			}
		default:
			last, err := p.statement()
			if err != nil {
				return err
			}
			p.note(full+"."+t.text, "enum value", p.comment(t, last))
		}
	}
}

// Render writes the Go source of the generated table for package pkg. source names where the
// .proto came from (module@version), version is the spec version alone.
func Render(r *Result, pkg, source, version string) ([]byte, error) {
	req := r.Required()
	names := make([]string, 0, len(req))
	nfields := 0
	for n, fs := range req {
		names = append(names, n)
		nfields += len(fs)
	}
	sort.Strings(names)

	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by go run ./internal/gen from %s csi.proto; DO NOT EDIT.\n\n", source)
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	b.WriteString("import \"google.golang.org/protobuf/reflect/protoreflect\"\n\n")
	b.WriteString("// requiredSpecVersion is the CSI spec version the table below was generated from.\n")
	fmt.Fprintf(&b, "const requiredSpecVersion = %q\n\n", version)
	b.WriteString("// requiredGenerated lists, per message, the fields whose comment in csi.proto says\n")
	b.WriteString("// \"This field is REQUIRED\" or \"This is a REQUIRED field\", in declaration order.\n")
	fmt.Fprintf(&b, "// %d messages, %d fields. Scalar (bool and integer) fields are listed because the spec\n", len(names), nfields)
	b.WriteString("// lists them, but cannot be checked: their zero value is a legal value.\n")
	if len(r.Unclear) > 0 {
		b.WriteString("//\n// Comments that mention REQUIRED in another sense (reviewed in exceptions.go):\n")
		for _, h := range r.Unclear {
			fmt.Fprintf(&b, "//   - %s (%s)\n", h.Where, h.Kind)
		}
	}
	b.WriteString("var requiredGenerated = map[protoreflect.FullName][]protoreflect.Name{\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t%q: {", n)
		for i, f := range req[n] {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", f)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
