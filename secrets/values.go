package secrets

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Values returns every distinct non-empty secret value in m, longest first
// (ties in byte order), for scrubbing text such as error messages. Secret
// string and bytes values count, including every string or bytes value
// nested in a secret message; secret numbers and booleans do not. It returns
// nil without allocating when m's type cannot hold a secret.
func (r *Redactor) Values(m proto.Message) []string {
	w, c := r.orDefault().search(m)
	if w == nil {
		return nil
	}
	w.collectFields(&c, false)
	vals := w.vals
	w.release()
	if len(vals) == 0 {
		return nil
	}
	slices.SortFunc(vals, func(a, b string) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return slices.Compact(vals)
}

// Values is Redactor.Values on the default Redactor (heuristic off).
func Values(m proto.Message) []string { return defaultRedactor.Values(m) }

// Scrub returns text with every occurrence of every secret value of m
// replaced by Placeholder. Occurrences that overlap or touch are replaced by
// a single Placeholder, and the result is scanned again until no secret
// value is left in it except inside a Placeholder. It does not allocate when
// m's type cannot hold a secret; when text contains none of m's secrets it
// allocates at most a small cursor per nested message list it searches.
func (r *Redactor) Scrub(text string, m proto.Message) string {
	if text == "" {
		return text
	}
	r = r.orDefault()
	w, c := r.search(m)
	if w == nil {
		return text
	}
	w.scan, w.text = true, text
	w.collectFields(&c, false)
	found := w.found
	w.release()
	if !found {
		return text
	}
	return scrubValues(text, r.Values(m))
}

// Scrub is Redactor.Scrub on the default Redactor (heuristic off).
func Scrub(text string, m proto.Message) string { return defaultRedactor.Scrub(text, m) }

// ScrubAny is Scrub for a request of unknown type, as gRPC interceptors hold it: text is returned
// unchanged when req is not a proto message.
func (r *Redactor) ScrubAny(text string, req any) string {
	if m, ok := req.(proto.Message); ok {
		return r.Scrub(text, m)
	}
	return text
}

// ScrubAny is Redactor.ScrubAny on the default Redactor (heuristic off).
func ScrubAny(text string, req any) string { return defaultRedactor.ScrubAny(text, req) }

// search prepares a walker for a secret search of m, or returns nil when m
// cannot hold a secret.
func (r *Redactor) search(m proto.Message) (*walker, cursor) {
	if m == nil {
		return nil, cursor{}
	}
	pm := m.ProtoReflect()
	if !pm.IsValid() {
		return nil, cursor{}
	}
	reg := current.Load()
	p := reg.planFor(pm.Descriptor())
	if !p.needsWalk(r.heuristic) {
		return nil, cursor{}
	}
	return getWalker(reg, r.heuristic), p.rootCursor(m, pm)
}

// emit records one secret value: in scan mode it only checks whether text
// contains it.
func (w *walker) emit(v string) {
	if v == "" {
		return
	}
	if w.scan {
		if strings.Contains(w.text, v) {
			w.found = true
			return
		}
		for _, e := range escapedForms(v) {
			if strings.Contains(w.text, e) {
				w.found = true
				return
			}
		}
		return
	}
	w.vals = append(w.vals, v)
}

// escapedForms are the ways a value appears when a program quotes it: the inside of %q
// (strconv.Quote), of %+q (strconv.QuoteToASCII) and of a JSON string. Only forms that differ
// from the value are returned, and nothing is allocated for the common value that needs no
// escaping.
func escapedForms(v string) []string {
	plain := true
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		return nil
	}
	var forms []string
	add := func(f string) {
		if f != v && f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	q := strconv.Quote(v)
	add(q[1 : len(q)-1])
	qa := strconv.QuoteToASCII(v)
	add(qa[1 : len(qa)-1])
	if j, err := json.Marshal(v); err == nil {
		add(string(j[1 : len(j)-1]))
	}
	return forms
}

func (w *walker) emitBytes(b []byte) {
	if len(b) == 0 {
		return
	}
	if w.scan {
		w.emit(unsafe.String(unsafe.SliceData(b), len(b)))
		return
	}
	w.emit(string(b))
}

func (w *walker) emitScalar(kind protoreflect.Kind, v protoreflect.Value) {
	switch kind {
	case protoreflect.StringKind:
		w.emit(v.String())
	case protoreflect.BytesKind:
		w.emitBytes(v.Bytes())
	}
}

// collectFields emits the secret values in the message at c. all is true
// inside a secret message, where every string and bytes value is secret.
func (w *walker) collectFields(c *cursor, all bool) {
	if w.found {
		return
	}
	p := c.p
	if p.wkt == wktAny {
		w.collectAny(c, all)
		return
	}
	for _, idx := range p.order {
		f := &p.fields[max(idx, 0)]
		if idx < 0 {
			// Look at a oneof only if one of its members could matter.
			if !all && !p.oneofs[-idx-1].matters[b2i(w.heuristic)] {
				continue
			}
			var fbase unsafe.Pointer
			if f, fbase = c.field(idx); f != nil {
				w.collectField(f, c, fbase, all)
			}
			continue
		}
		w.collectField(f, c, c.base, all)
	}
	if p.hasExt {
		for _, f := range w.reg.extensions(c.msg()) {
			w.collectField(&f, c, nil, all)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (w *walker) collectField(f *fieldPlan, c *cursor, fbase unsafe.Pointer, all bool) {
	secret := all || f.secret
	heur := w.heuristic && f.strMap
	if f.optionLike && !secret {
		w.collectOptions(f, c, fbase)
		return
	}
	if !secret && !heur && (f.sub == nil || !f.sub.needsWalk(w.heuristic)) {
		return
	}
	isMsg := f.kind == protoreflect.MessageKind || f.kind == protoreflect.GroupKind
	switch f.card {
	case cardMap:
		if fbase != nil && f.acc == accStrMap {
			for k, v := range strMapAt(fbase, f) {
				if secret || (heur && LooksSecret(k)) {
					w.emit(v)
				}
			}
			return
		}
		m := c.msg()
		if !m.Has(f.fd) {
			return
		}
		m.Get(f.fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			switch {
			case isMsg:
				vc := f.sub.cursorOf(v.Message())
				w.collectFields(&vc, secret)
			case secret || (heur && LooksSecret(k.String())):
				w.emitScalar(f.kind, v)
			}
			return true
		})
	case cardList:
		switch {
		case fbase != nil && f.acc == accStrList:
			if secret { // a string list only gets here when secret
				for _, s := range strListAt(fbase, f) {
					w.emit(s)
				}
			}
		case fbase != nil && f.acc == accMsgList:
			for _, ptr := range ptrListAt(fbase, f) {
				if ptr != nil {
					vc := cursor{p: f.sub, base: ptr}
					w.collectFields(&vc, secret)
				}
			}
		default:
			m := c.msg()
			if !m.Has(f.fd) {
				return
			}
			l := m.Get(f.fd).List()
			for i := range l.Len() {
				if isMsg {
					vc := f.sub.cursorOf(l.Get(i).Message())
					w.collectFields(&vc, secret)
				} else if secret {
					w.emitScalar(f.kind, l.Get(i))
				}
			}
		}
	case cardMessage:
		if sub, ok := c.message(f, fbase); ok {
			w.collectFields(&sub, secret)
		}
	default:
		if !secret {
			return
		}
		if v, ok := c.scalar(f, fbase); ok {
			w.emitScalar(f.kind, v)
		}
	}
}

// collectOptions emits the values of the key=value options of an option-like list.
func (w *walker) collectOptions(f *fieldPlan, c *cursor, fbase unsafe.Pointer) {
	if fbase != nil && f.acc == accStrList {
		for _, s := range strListAt(fbase, f) {
			w.emitOptionValues(s)
		}
		return
	}
	m := c.msg()
	if !m.Has(f.fd) {
		return
	}
	l := m.Get(f.fd).List()
	for i := range l.Len() {
		w.emitOptionValues(l.Get(i).String())
	}
}

func (w *walker) collectAny(c *cursor, all bool) {
	url, val := anyParts(c)
	if len(val) == 0 {
		return
	}
	inner, ip := w.reg.unpackAny(url, val)
	if inner == nil {
		return // cannot know; Object and Redact hide such payloads entirely
	}
	ic := ip.cursorOf(inner)
	w.collectFields(&ic, all)
}

// scrubValues replaces every occurrence of every value in text. Bytes
// covered by occurrences, together with adjacent earlier placeholders, are
// merged and replaced by one Placeholder; then the result is scanned again,
// because a value could straddle original text and an inserted Placeholder.
// Each further round only happens if some original byte was replaced, so it
// terminates.
func scrubValues(text string, vals []string) string {
	all := slices.Clone(vals)
	for _, v := range vals {
		all = append(all, escapedForms(v)...)
	}
	slices.SortFunc(all, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	vals = all
	cur := text
	var ph []bool // ph[i]: cur[i] belongs to an inserted Placeholder
	for {
		var cov []bool
		for _, v := range vals {
			if v == "" {
				continue
			}
			for i := 0; i+len(v) <= len(cur); {
				j := strings.Index(cur[i:], v)
				if j < 0 {
					break
				}
				s, e := i+j, i+j+len(v)
				if ph == nil || slices.Contains(ph[s:e], false) {
					if cov == nil {
						cov = make([]bool, len(cur))
						copy(cov, ph)
					}
					for k := s; k < e; k++ {
						cov[k] = true
					}
				}
				i = s + 1
			}
		}
		if cov == nil {
			return cur
		}
		var b strings.Builder
		nph := make([]bool, 0, len(cur))
		for i := 0; i < len(cur); {
			if !cov[i] {
				b.WriteByte(cur[i])
				nph = append(nph, false)
				i++
				continue
			}
			for i < len(cur) && cov[i] {
				i++
			}
			b.WriteString(Placeholder)
			for range len(Placeholder) {
				nph = append(nph, true)
			}
		}
		cur, ph = b.String(), nph
	}
}
