package secrets

import (
	"slices"
	"sync/atomic"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// wkt identifies well-known types that are written in their JSON form.
type wkt uint8

const (
	wktNone wkt = iota
	wktTimestamp
	wktDuration
	wktWrapper
	wktAny
)

// card is how a field is stored.
type card uint8

const (
	cardScalar card = iota
	cardMessage
	cardList
	cardMap
)

// fieldPlan is everything the walkers need to know about one field, computed
// once per message type, so that a walk asks the descriptor nothing.
type fieldPlan struct {
	fd   protoreflect.FieldDescriptor
	name string
	kind protoreflect.Kind // element kind for lists, value kind for maps
	card card
	// keyKind is the key kind of a map, which decides how its keys sort.
	keyKind protoreflect.Kind
	secret  bool
	// optionLike fields hold mount options ("ro", "password=x"): only the values of key=value
	// options are sensitive, so keys and bare flags stay readable.
	optionLike bool
	inOneof    bool
	// presence: a singular scalar that tracks presence (proto2, proto3 optional), so Has decides
	// whether it is written; other singular scalars are written when not zero.
	presence bool
	strMap   bool       // map<string,string>: subject to the key heuristic
	sub      *plan      // message, list element or map value type
	enum     *enumNames // enum values: names by number
}

// isMessage reports whether the field (or its elements, or its map values) are messages.
func (f *fieldPlan) isMessage() bool {
	return f.kind == protoreflect.MessageKind || f.kind == protoreflect.GroupKind
}

// oneofPlan describes a real (not synthetic) oneof.
type oneofPlan struct {
	od protoreflect.OneofDescriptor
	// matters[h] reports whether a member can hold a secret value when the
	// heuristic is h (0 off, 1 on); searches skip the oneof otherwise.
	matters [2]bool
}

// plan is the precomputed description of one message type.
type plan struct {
	md     protoreflect.MessageDescriptor
	fields []fieldPlan // indexed like md.Fields()
	// order lists what to visit in declaration order: i >= 0 is fields[i],
	// i < 0 is the real oneof oneofs[-i-1], visited where its first member
	// is declared.
	order  []int
	oneofs []oneofPlan
	wkt    wkt
	hasExt bool // the type has extension ranges

	hasSecrets bool // a sensitive field is reachable from this type
	hasStrMaps bool // a map<string,string> is reachable from this type
	hasAny     bool // a google.protobuf.Any is reachable from this type
}

// needsWalk reports whether a search for secret values must descend into a
// message of this type.
func (p *plan) needsWalk(heuristic bool) bool {
	return p.hasSecrets || p.hasAny || (heuristic && p.hasStrMaps)
}

// plansBuilt counts the plans ever built, so tests can prove that a walk of
// a known type builds none.
var plansBuilt atomic.Int64

// planFor returns the plan for md, building it (and the plans of every type
// reachable from it) on first use.
func (r *registry) planFor(md protoreflect.MessageDescriptor) *plan {
	if v, ok := r.plans.Load(md); ok {
		return v.(*plan)
	}
	b := planBuilder{r: r, local: map[protoreflect.MessageDescriptor]*plan{}}
	p := b.build(md)
	b.propagate()
	for d, lp := range b.local {
		if v, loaded := r.plans.LoadOrStore(d, lp); loaded && d == md {
			p = v.(*plan)
		}
	}
	return p
}

type planBuilder struct {
	r     *registry
	local map[protoreflect.MessageDescriptor]*plan
	order []*plan
}

func (b *planBuilder) build(md protoreflect.MessageDescriptor) *plan {
	if v, ok := b.r.plans.Load(md); ok {
		return v.(*plan)
	}
	if p, ok := b.local[md]; ok {
		return p // recursive type: flags are settled by propagate
	}
	plansBuilt.Add(1)
	p := &plan{md: md, wkt: wktOf(md.FullName()), hasExt: md.ExtensionRanges().Len() > 0}
	b.local[md] = p
	b.order = append(b.order, p)
	if p.wkt == wktAny {
		p.hasAny = true
	}

	fds := md.Fields()
	p.fields = make([]fieldPlan, fds.Len())
	seenOneof := map[int]bool{}
	for i := range fds.Len() {
		fd := fds.Get(i)
		f := &p.fields[i]
		*f = newFieldPlan(fd, string(fd.Name()), b.r.isSecret(fd), b.build)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			f.inOneof = true
			if !seenOneof[od.Index()] {
				seenOneof[od.Index()] = true
				p.oneofs = append(p.oneofs, oneofPlan{od: od})
				p.order = append(p.order, -len(p.oneofs))
			}
			continue
		}
		p.order = append(p.order, i)
	}
	if p.wkt != wktNone && !wktShapeOK(p) {
		p.wkt, p.hasAny = wktNone, false
	}
	return p
}

// wktShapeOK checks that a type named like a well-known type has the fields
// the walkers read by index, so a look-alike descriptor is walked generically.
func wktShapeOK(p *plan) bool {
	is := func(i int, num protoreflect.FieldNumber, kinds ...protoreflect.Kind) bool {
		if i >= len(p.fields) {
			return false
		}
		f := &p.fields[i]
		return f.fd.Number() == num && f.card == cardScalar && slices.Contains(kinds, f.kind)
	}
	switch p.wkt {
	case wktTimestamp, wktDuration:
		return len(p.fields) == 2 && is(0, 1, protoreflect.Int64Kind) && is(1, 2, protoreflect.Int32Kind)
	case wktAny:
		return len(p.fields) == 2 && is(0, 1, protoreflect.StringKind) && is(1, 2, protoreflect.BytesKind)
	case wktWrapper:
		return len(p.fields) == 1 && is(0, 1, protoreflect.BoolKind, protoreflect.Int32Kind,
			protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.FloatKind,
			protoreflect.DoubleKind, protoreflect.StringKind, protoreflect.BytesKind)
	}
	return true
}

// propagate settles the reachability flags of the plans built in this pass,
// iterating to a fixed point so that recursive types terminate.
func (b *planBuilder) propagate() {
	for changed := true; changed; {
		changed = false
		for _, p := range b.order {
			s, m, a := p.hasSecrets, p.hasStrMaps, p.hasAny
			for i := range p.fields {
				f := &p.fields[i]
				s = s || f.secret || f.optionLike
				m = m || f.strMap
				if f.sub != nil {
					s = s || f.sub.hasSecrets
					m = m || f.sub.hasStrMaps
					a = a || f.sub.hasAny
				}
			}
			if s != p.hasSecrets || m != p.hasStrMaps || a != p.hasAny {
				p.hasSecrets, p.hasStrMaps, p.hasAny = s, m, a
				changed = true
			}
		}
	}
	for _, p := range b.order {
		for i := range p.oneofs {
			o := &p.oneofs[i]
			fds := o.od.Fields()
			for j := range fds.Len() {
				f := &p.fields[fds.Get(j).Index()]
				for h, heuristic := range []bool{false, true} {
					o.matters[h] = o.matters[h] || f.secret || f.optionLike || (heuristic && f.strMap) ||
						(f.sub != nil && f.sub.needsWalk(heuristic))
				}
			}
		}
	}
}

func wktOf(n protoreflect.FullName) wkt {
	switch n {
	case "google.protobuf.Timestamp":
		return wktTimestamp
	case "google.protobuf.Duration":
		return wktDuration
	case "google.protobuf.Any":
		return wktAny
	case "google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value", "google.protobuf.FloatValue",
		"google.protobuf.DoubleValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return wktWrapper
	}
	return wktNone
}

// field resolves entry idx of p.order in m to the field to visit, or nil
// when idx is a oneof that is not set.
func (p *plan) field(m protoreflect.Message, idx int) *fieldPlan {
	if idx >= 0 {
		return &p.fields[idx]
	}
	fd := m.WhichOneof(p.oneofs[-idx-1].od)
	if fd == nil {
		return nil
	}
	return &p.fields[fd.Index()]
}

// populated reports whether field f of m is to be written or searched: Has
// for what tracks presence, lists, maps and singular messages; a set oneof
// member always is.
func (f *fieldPlan) populated(m protoreflect.Message) bool {
	return f.inOneof || m.Has(f.fd)
}

// newFieldPlan describes one field: its shape, whether it is secret, and the plan of the message
// it holds (from sub, which builds or looks up plans).
func newFieldPlan(fd protoreflect.FieldDescriptor, name string, secret bool, sub func(protoreflect.MessageDescriptor) *plan) fieldPlan {
	f := fieldPlan{fd: fd, name: name, kind: fd.Kind(), secret: secret}
	f.optionLike = !secret && fd.IsList() && fd.Kind() == protoreflect.StringKind && optionLikeFields[fd.FullName()]
	switch {
	case fd.IsMap():
		f.card = cardMap
		f.kind = fd.MapValue().Kind()
		f.keyKind = fd.MapKey().Kind()
		f.strMap = f.keyKind == protoreflect.StringKind && f.kind == protoreflect.StringKind
		if md := fd.MapValue().Message(); md != nil {
			f.sub = sub(md)
		}
	case fd.IsList():
		f.card = cardList
	case fd.Message() != nil:
		f.card = cardMessage
	default:
		f.presence = fd.HasPresence()
	}
	if fd.Message() != nil && !fd.IsMap() {
		f.sub = sub(fd.Message())
	}
	f.setEnum()
	return f
}

// setEnum fills f.enum for enum-valued fields.
func (f *fieldPlan) setEnum() {
	if f.kind != protoreflect.EnumKind {
		return
	}
	vd := f.fd
	if vd.IsMap() {
		vd = vd.MapValue()
	}
	f.enum = newEnumNames(vd.Enum())
}

// enumNames holds the value names of an enum whose numbers are small and
// non-negative, indexed by number; protoreflect's lookup and Name() cost a
// search and a string conversion per value.
type enumNames struct {
	names []string
	ok    []bool
}

// enumName returns the name of value n of enum field f.
func (f *fieldPlan) enumName(n protoreflect.EnumNumber) (string, bool) {
	if en := f.enum; en != nil && n >= 0 && int(n) < len(en.names) && en.ok[n] {
		return en.names[n], true
	}
	vd := f.fd
	if vd.IsMap() {
		vd = vd.MapValue()
	}
	if ev := vd.Enum().Values().ByNumber(n); ev != nil {
		return string(ev.Name()), true
	}
	return "", false
}

func newEnumNames(ed protoreflect.EnumDescriptor) *enumNames {
	vals := ed.Values()
	size := 0
	for i := range vals.Len() {
		if n := vals.Get(i).Number(); n >= 0 && n < 256 && int(n) >= size {
			size = int(n) + 1
		}
	}
	en := &enumNames{names: make([]string, size), ok: make([]bool, size)}
	for i := range vals.Len() {
		v := vals.Get(i)
		// The first value declared with a number wins, as in ByNumber.
		if n := v.Number(); n >= 0 && int(n) < size && !en.ok[n] {
			en.names[n], en.ok[n] = string(v.Name()), true
		}
	}
	return en
}
