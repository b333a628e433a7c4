package secrets

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"google.golang.org/protobuf/proto"
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

// acc says how a field is read from a generated Go struct. Direct reads
// skip protoreflect's per-access work and the List and Map wrappers it
// allocates; anything not listed falls back to protoreflect.
type acc uint8

const (
	accReflect acc = iota
	accString
	accBytes
	accBool
	accInt32 // also enums
	accInt64
	accUint32
	accUint64
	accFloat32
	accFloat64
	accMsg     // *U
	accStrMap  // map[string]string
	accStrList // []string
	accMsgList // []*U
)

// fieldPlan is everything the walkers need to know about one field, computed
// once per message type.
type fieldPlan struct {
	// What a walk of a generated struct reads for every field comes first,
	// so that it shares a cache line or two: a log line walks dozens of
	// fields, often with cold caches.
	acc    acc
	kind   protoreflect.Kind // element kind for lists, value kind for maps
	secret bool
	// optionLike fields hold mount options ("ro", "password=x"): only the values of key=value
	// options are sensitive, so keys and bare flags stay readable.
	optionLike bool
	inOneof    bool
	strMap     bool // map<string,string>: subject to the key heuristic
	card       card
	off        uintptr    // offset in the struct, or in the oneof wrapper for members
	jkey       string     // name as a JSON object key: quoted, escaped, with its colon
	sub        *plan      // message, list element or map value type
	enum       *enumNames // enum values: names by number

	fd   protoreflect.FieldDescriptor
	name string
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

// oneofPlan describes a real oneof. When direct, the Go interface field at
// off is read and its itab compared with the members' itabs; an itab that
// is not recognised falls back to protoreflect, so correctness never rests
// on the comparison.
type oneofPlan struct {
	od      protoreflect.OneofDescriptor
	direct  bool
	off     uintptr
	members []oneofMember

	// matters[h] reports whether a member can hold a secret value when the
	// heuristic is h (0 off, 1 on); searches skip the oneof otherwise.
	matters [2]bool
}

type oneofMember struct {
	itab  unsafe.Pointer
	field int // index into plan.fields
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

	hasAny bool // a google.protobuf.Any is reachable from this type

	// fastable: the fast path (fastjson.go) can write every message of this
	// type that is a generated struct, with the few exceptions it finds as
	// it goes (a set oneof member holding a nil well-known type, a nil list
	// element, a nesting deeper than maxFastDepth).
	fastable bool

	goType   reflect.Type   // *T of the generated struct, nil if none
	typeWord unsafe.Pointer // runtime type word of *T, to rebuild interfaces
}

// needsWalk reports whether a search for secret values must descend into a
// message of this type.
func (p *plan) needsWalk(heuristic bool) bool {
	return p.hasSecrets || p.hasAny || (heuristic && p.hasStrMaps)
}

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
	p := &plan{md: md, wkt: wktOf(md.FullName()), hasExt: md.ExtensionRanges().Len() > 0}
	p.goType, p.typeWord = generatedType(md)
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
	if p.goType != nil {
		layout(p)
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
	b.settleFastable()
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

// settleFastable sets the fastable flags of the plans built in this pass:
// a type is fastable when its own fields all have direct accessors and
// every message type it holds is fastable or a well-known type written by
// value. Recursive types start fastable and lose it to a fixed point.
func (b *planBuilder) settleFastable() {
	for _, p := range b.order {
		p.fastable = p.directFields()
	}
	for changed := true; changed; {
		changed = false
		for _, p := range b.order {
			if !p.fastable {
				continue
			}
			for i := range p.fields {
				if sub := p.fields[i].sub; sub != nil && sub.wkt == wktNone && !sub.fastable {
					p.fastable, changed = false, true
					break
				}
			}
		}
	}
}

// directFields reports whether every field of a generated struct type is
// read directly: the fast path reads nothing through protoreflect.
func (p *plan) directFields() bool {
	if p.goType == nil || p.hasExt || p.wkt != wktNone {
		return false
	}
	for i := range p.oneofs {
		if !p.oneofs[i].direct {
			return false
		}
	}
	for i := range p.fields {
		f := &p.fields[i]
		if f.acc == accReflect {
			return false
		}
		if f.sub != nil && f.sub.wkt == wktAny {
			return false
		}
	}
	return true
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

var (
	strMapType  = reflect.TypeFor[map[string]string]()
	strListType = reflect.TypeFor[[]string]()
	bytesType   = reflect.TypeFor[[]byte]()
)

// accFor picks the direct accessor for f stored as Go type t, or accReflect.
func accFor(f *fieldPlan, t reflect.Type) acc {
	switch f.card {
	case cardMap:
		if f.strMap && t == strMapType {
			return accStrMap
		}
	case cardList:
		switch {
		case f.kind == protoreflect.StringKind && t == strListType:
			return accStrList
		case f.sub != nil && f.sub.goType != nil && t.Kind() == reflect.Slice && t.Elem() == f.sub.goType:
			return accMsgList
		}
	case cardMessage:
		if f.sub.goType != nil && t == f.sub.goType {
			return accMsg
		}
	default:
		if f.fd.HasPresence() && !f.inOneof {
			return accReflect // proto2 and proto3 optional scalars are pointers
		}
		k := t.Kind()
		switch f.kind {
		case protoreflect.StringKind:
			if k == reflect.String {
				return accString
			}
		case protoreflect.BytesKind:
			if t == bytesType {
				return accBytes
			}
		case protoreflect.BoolKind:
			if k == reflect.Bool {
				return accBool
			}
		case protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			if k == reflect.Int32 {
				return accInt32
			}
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			if k == reflect.Int64 {
				return accInt64
			}
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			if k == reflect.Uint32 {
				return accUint32
			}
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			if k == reflect.Uint64 {
				return accUint64
			}
		case protoreflect.FloatKind:
			if k == reflect.Float32 {
				return accFloat32
			}
		case protoreflect.DoubleKind:
			if k == reflect.Float64 {
				return accFloat64
			}
		}
	}
	return accReflect
}

// tagNumber extracts the field number from a `protobuf:"bytes,5,rep,..."`
// struct tag.
func tagNumber(tag string) (protoreflect.FieldNumber, bool) {
	_, rest, ok := strings.Cut(tag, ",")
	if !ok {
		return 0, false
	}
	num, _, _ := strings.Cut(rest, ",")
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return protoreflect.FieldNumber(n), true
}

// cursor is a message being walked: base addresses the generated struct
// when p's direct accessors apply to it; m is the reflective view, built
// only when some field needs it.
type cursor struct {
	p    *plan
	base unsafe.Pointer
	m    protoreflect.Message
}

func (c *cursor) msg() protoreflect.Message {
	if c.m == nil {
		c.m = c.p.msgAt(c.base)
	}
	return c.m
}

// msgAt rebuilds the message at base (of type p.goType) as an interface
// value without reflect, which would look up the pointer type on each call.
func (p *plan) msgAt(base unsafe.Pointer) protoreflect.Message {
	return ifaceAt(p.typeWord, base).(proto.Message).ProtoReflect()
}

// cursorOf returns a cursor for m, direct when m's dynamic type is p.goType.
func (p *plan) cursorOf(m protoreflect.Message) cursor {
	c := cursor{p: p, m: m}
	if p.goType != nil {
		if i := m.Interface(); reflect.TypeOf(i) == p.goType {
			c.base = reflect.ValueOf(i).UnsafePointer()
		}
	}
	return c
}

// rootCursor is cursorOf for a top-level message, avoiding ProtoReflect
// when the direct path applies.
func (p *plan) rootCursor(m proto.Message, pm protoreflect.Message) cursor {
	if p.goType != nil && reflect.TypeOf(m) == p.goType {
		return cursor{p: p, base: reflect.ValueOf(m).UnsafePointer(), m: pm}
	}
	return cursor{p: p, m: pm}
}

// field resolves entry idx of p.order to the field to visit and the base
// its direct accessor applies to (nil: use protoreflect). It returns a nil
// field when a oneof is unset.
func (c *cursor) field(idx int) (*fieldPlan, unsafe.Pointer) {
	p := c.p
	if idx >= 0 {
		return &p.fields[idx], c.base
	}
	o := &p.oneofs[-idx-1]
	if c.base != nil && o.direct {
		words := (*[2]unsafe.Pointer)(unsafe.Add(c.base, o.off))
		if words[0] == nil {
			return nil, nil
		}
		for _, mb := range o.members {
			if mb.itab == words[0] {
				if words[1] == nil {
					return nil, nil // typed nil wrapper: unset, as protoreflect says
				}
				return &p.fields[mb.field], words[1]
			}
		}
	}
	fd := c.msg().WhichOneof(o.od)
	if fd == nil {
		return nil, nil
	}
	return &p.fields[fd.Index()], nil
}

// scalar reads singular scalar field f. ok is false when the field is not
// populated.
func (c *cursor) scalar(f *fieldPlan, fbase unsafe.Pointer) (v protoreflect.Value, ok bool) {
	if fbase == nil || f.acc == accReflect {
		m := c.msg()
		if !f.inOneof && !m.Has(f.fd) {
			return v, false
		}
		return m.Get(f.fd), true
	}
	ptr := unsafe.Add(fbase, f.off)
	switch f.acc {
	case accString:
		s := *(*string)(ptr)
		return protoreflect.ValueOfString(s), s != "" || f.inOneof
	case accBytes:
		b := *(*[]byte)(ptr)
		return protoreflect.ValueOfBytes(b), len(b) > 0 || f.inOneof
	case accBool:
		b := *(*bool)(ptr)
		return protoreflect.ValueOfBool(b), b || f.inOneof
	case accInt32:
		n := *(*int32)(ptr)
		if f.kind == protoreflect.EnumKind {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n)), n != 0 || f.inOneof
		}
		return protoreflect.ValueOfInt32(n), n != 0 || f.inOneof
	case accInt64:
		n := *(*int64)(ptr)
		return protoreflect.ValueOfInt64(n), n != 0 || f.inOneof
	case accUint32:
		n := *(*uint32)(ptr)
		return protoreflect.ValueOfUint32(n), n != 0 || f.inOneof
	case accUint64:
		n := *(*uint64)(ptr)
		return protoreflect.ValueOfUint64(n), n != 0 || f.inOneof
	case accFloat32:
		x := *(*float32)(ptr)
		return protoreflect.ValueOfFloat32(x), math.Float32bits(x) != 0 || f.inOneof
	case accFloat64:
		x := *(*float64)(ptr)
		return protoreflect.ValueOfFloat64(x), math.Float64bits(x) != 0 || f.inOneof
	}
	return v, false
}

// message reads singular message field f as a cursor. ok is false when the
// field is not populated.
func (c *cursor) message(f *fieldPlan, fbase unsafe.Pointer) (sub cursor, ok bool) {
	if fbase != nil && f.acc == accMsg {
		ptr := *(*unsafe.Pointer)(unsafe.Add(fbase, f.off))
		if ptr == nil {
			if !f.inOneof {
				return sub, false
			}
			// A oneof member holding a nil message is set (protoreflect
			// says so) and empty.
			return cursor{p: f.sub, m: f.sub.msgAt(nil)}, true
		}
		return cursor{p: f.sub, base: ptr}, true
	}
	m := c.msg()
	if !f.inOneof && !m.Has(f.fd) {
		return sub, false
	}
	return f.sub.cursorOf(m.Get(f.fd).Message()), true
}

// strMap returns the Go map of a direct map<string,string> field.
func strMapAt(fbase unsafe.Pointer, f *fieldPlan) map[string]string {
	return *(*map[string]string)(unsafe.Add(fbase, f.off))
}

func strListAt(fbase unsafe.Pointer, f *fieldPlan) []string {
	return *(*[]string)(unsafe.Add(fbase, f.off))
}

func ptrListAt(fbase unsafe.Pointer, f *fieldPlan) []unsafe.Pointer {
	return *(*[]unsafe.Pointer)(unsafe.Add(fbase, f.off))
}

// newFieldPlan describes one field: its shape, whether it is secret, and the plan of the message
// it holds (from sub, which builds or looks up plans).
func newFieldPlan(fd protoreflect.FieldDescriptor, name string, secret bool, sub func(protoreflect.MessageDescriptor) *plan) fieldPlan {
	f := fieldPlan{fd: fd, name: name, jkey: string(appendJSONKey(nil, name)), kind: fd.Kind(), secret: secret}
	f.optionLike = !secret && fd.IsList() && fd.Kind() == protoreflect.StringKind && optionLikeFields[fd.FullName()]
	switch {
	case fd.IsMap():
		f.card = cardMap
		f.kind = fd.MapValue().Kind()
		f.strMap = fd.MapKey().Kind() == protoreflect.StringKind && f.kind == protoreflect.StringKind
		if md := fd.MapValue().Message(); md != nil {
			f.sub = sub(md)
		}
	case fd.IsList():
		f.card = cardList
	case fd.Message() != nil:
		f.card = cardMessage
	}
	if fd.Message() != nil && !fd.IsMap() {
		f.sub = sub(fd.Message())
	}
	f.setEnum()
	return f
}
