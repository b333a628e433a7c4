package secrets

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Values returns every distinct non-empty secret value in m, longest first
// (ties in byte order), for scrubbing text such as error messages. Secret
// string and bytes values count, including every string or bytes value
// nested in a secret message; secret numbers and booleans do not. It returns
// nil without allocating when m's type cannot hold a secret.
func (r *Redactor) Values(m proto.Message) []string {
	w, p, pm := r.orDefault().search(m)
	if w == nil {
		return nil
	}
	w.collectFields(p, pm, false, 0)
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
// allocates only what protoreflect's reads of the maps and lists it searches
// cost (for a generated message, a view of each map or list and a copy of
// each map entry or string element read).
func (r *Redactor) Scrub(text string, m proto.Message) string {
	if text == "" {
		return text
	}
	r = r.orDefault()
	w, p, pm := r.search(m)
	if w == nil {
		return text
	}
	w.scan, w.text = true, text
	w.collectFields(p, pm, false, 0)
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
func (r *Redactor) search(m proto.Message) (*walker, *plan, protoreflect.Message) {
	if m == nil {
		return nil, nil, nil
	}
	pm := m.ProtoReflect()
	if !pm.IsValid() {
		return nil, nil, nil
	}
	reg := r.registry()
	p := reg.planFor(pm.Descriptor())
	if !p.needsWalk(r.heuristic) {
		return nil, nil, nil
	}
	return getWalker(reg, r.heuristic), p, pm
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

// collectFields emits the secret values in m, of type p. all is true inside
// a secret message, where every string and bytes value is secret.
func (w *walker) collectFields(p *plan, m protoreflect.Message, all bool, depth int) {
	if w.found {
		return
	}
	if p.wkt == wktAny {
		w.collectAny(p, m, all, depth)
		return
	}
	for _, idx := range p.order {
		// Look at a oneof only if one of its members could matter.
		if idx < 0 && !all && !p.oneofs[-idx-1].matters[b2i(w.heuristic)] {
			continue
		}
		if f := p.field(m, idx); f != nil {
			w.collectField(f, m, all, depth)
		}
	}
	if p.hasExt {
		for _, f := range w.reg.extensions(m) {
			w.collectField(&f, m, all, depth)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (w *walker) collectField(f *fieldPlan, m protoreflect.Message, all bool, depth int) {
	secret := all || f.secret
	heur := w.heuristic && f.strMap
	if f.optionLike && !secret {
		w.collectOptions(f, m)
		return
	}
	if !secret && !heur && (f.sub == nil || !f.sub.needsWalk(w.heuristic)) {
		return
	}
	switch f.card {
	case cardMap:
		if !m.Has(f.fd) {
			return
		}
		// The entries are gathered in the frame of the next depth, which
		// nested maps do not share.
		fr := w.frame(depth + 1)
		fr.ents = fr.ents[:0]
		m.Get(f.fd).Map().Range(fr.collect)
		for _, e := range fr.ents {
			switch {
			case f.isMessage():
				w.collectFields(f.sub, e.v.Message(), secret, depth+1)
			case secret || (heur && LooksSecret(e.k.String())):
				w.emitScalar(f.kind, e.v)
			}
		}
	case cardList:
		if !m.Has(f.fd) {
			return
		}
		l := m.Get(f.fd).List()
		for i := range l.Len() {
			if f.isMessage() {
				w.collectFields(f.sub, l.Get(i).Message(), secret, depth+1)
			} else if secret {
				w.emitScalar(f.kind, l.Get(i))
			}
		}
	case cardMessage:
		if f.populated(m) {
			w.collectFields(f.sub, m.Get(f.fd).Message(), secret, depth+1)
		}
	default:
		if !secret {
			return
		}
		if v, ok := scalar(m, f); ok {
			w.emitScalar(f.kind, v)
		}
	}
}

// collectOptions emits the values of the key=value options of an option-like list.
func (w *walker) collectOptions(f *fieldPlan, m protoreflect.Message) {
	if !m.Has(f.fd) {
		return
	}
	l := m.Get(f.fd).List()
	for i := range l.Len() {
		w.emitOptionValues(l.Get(i).String())
	}
}

func (w *walker) collectAny(p *plan, m protoreflect.Message, all bool, depth int) {
	url, val := anyParts(p, m)
	if len(val) == 0 {
		return
	}
	inner, ip := w.reg.unpackAny(url, val)
	if inner == nil {
		return // cannot know; Object and Redact hide such payloads entirely
	}
	w.collectFields(ip, inner, all, depth)
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
