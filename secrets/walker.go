package secrets

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// walker is the per-call state of an encode or search walk. Walkers are
// pooled: the frames they hand to the zap encoder as marshalers are
// pointers, so passing them costs no allocation, and they are reused because
// zap encoders call a marshaler before AddObject/AddArray returns.
type walker struct {
	reg       *registry
	heuristic bool
	frames    []*frame
	scratch   []byte
	out       []byte // the fast path's output (fastjson.go)

	// search mode (Values, Scrub)
	scan  bool // true: only look for values inside text
	text  string
	found bool
	vals  []string

	// String
	inline objectMarshaler
	fields [1]zap.Field
}

// maxPooledFrames bounds what a pooled walker keeps after an unusually deep
// message.
const maxPooledFrames = 64

var walkerPool = sync.Pool{New: func() any { return new(walker) }}

func getWalker(reg *registry, heuristic bool) *walker {
	w := walkerPool.Get().(*walker)
	w.reg, w.heuristic = reg, heuristic
	return w
}

func (w *walker) release() {
	if len(w.frames) > maxPooledFrames || cap(w.scratch) > 1<<16 || cap(w.out) > 1<<16 {
		return
	}
	for _, fr := range w.frames {
		fr.reset()
		clear(fr.kvs[:cap(fr.kvs)])
		clear(fr.ents[:cap(fr.ents)])
	}
	w.reg = nil
	w.scan, w.text, w.found, w.vals = false, "", false, nil
	walkerPool.Put(w)
}

// frameKind says what a frame holds and so which of its fields are live;
// the others may be stale until release clears them.
type frameKind uint8

const (
	frameMsg     frameKind = iota // c
	frameStrMap                   // smap
	frameMap                      // pmap
	frameStrList                  // strs
	frameMsgList                  // ptrs
	frameList                     // list
)

// frame is one level of nesting: a message, map or list being written.
// It implements both zapcore.ObjectMarshaler and zapcore.ArrayMarshaler.
type frame struct {
	w     *walker
	depth int
	kind  frameKind

	c cursor     // frameMsg
	f *fieldPlan // frameMap, frameList

	list protoreflect.List
	strs []string
	ptrs []unsafe.Pointer
	pmap protoreflect.Map
	smap map[string]string

	kvs  []strEntry // scratch for sorting string maps
	ents []mapEntry // scratch for sorting other maps
}

type strEntry struct{ k, v string }

type mapEntry struct {
	k protoreflect.MapKey
	v protoreflect.Value
}

// reset drops every reference to the caller's message.
func (fr *frame) reset() {
	fr.c, fr.f = cursor{}, nil
	fr.list, fr.strs, fr.ptrs, fr.pmap, fr.smap = nil, nil, nil, nil, nil
}

// frame returns the frame for the given depth. Callers set its kind and the
// fields that kind uses.
func (w *walker) frame(depth int) *frame {
	if depth < len(w.frames) {
		return w.frames[depth]
	}
	return w.grow(depth)
}

func (w *walker) grow(depth int) *frame {
	for len(w.frames) <= depth {
		w.frames = append(w.frames, &frame{w: w, depth: len(w.frames)})
	}
	return w.frames[depth]
}

func (fr *frame) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	switch fr.kind {
	case frameMsg:
		if c := &fr.c; c.base != nil && !c.p.hasExt && c.p.wkt != wktAny {
			fr.w.writeDirect(enc, c, fr.depth)
		} else {
			fr.w.writeFields(enc, c, fr.depth)
		}
	case frameStrMap:
		fr.w.writeStrMap(enc, fr)
	case frameMap:
		fr.w.writeMapEntries(enc, fr)
	}
	return nil
}

func (fr *frame) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	fr.w.writeListElems(enc, fr)
	return nil
}

// writeFields writes the populated fields of the message at c into enc.
func (w *walker) writeFields(enc zapcore.ObjectEncoder, c *cursor, depth int) {
	p := c.p
	if p.wkt == wktAny {
		w.writeAny(enc, c, depth)
		return
	}
	if c.base != nil {
		w.writeDirect(enc, c, depth)
	} else {
		for _, idx := range p.order {
			if f, fbase := c.field(idx); f != nil {
				w.writeField(enc, f, c, fbase, depth)
			}
		}
	}
	if p.hasExt {
		for _, f := range w.reg.extensions(c.msg()) {
			w.writeField(enc, &f, c, nil, depth)
		}
	}
}

// writeDirect is writeFields for a generated struct: the common accessors
// are inlined here, everything else goes through writeField.
func (w *walker) writeDirect(enc zapcore.ObjectEncoder, c *cursor, depth int) {
	p := c.p
	for _, idx := range p.order {
		var f *fieldPlan
		fbase := c.base
		if idx >= 0 {
			f = &p.fields[idx]
		} else if f, fbase = c.field(idx); f == nil {
			continue
		}
		if fbase == nil {
			w.writeField(enc, f, c, nil, depth)
			continue
		}
		ptr := unsafe.Add(fbase, f.off)
		switch f.acc {
		case accString:
			s := *(*string)(ptr)
			if s == "" && !f.inOneof {
				continue
			}
			if f.secret {
				s = Placeholder
			}
			enc.AddString(f.name, s)
		case accInt64:
			n := *(*int64)(ptr)
			if n == 0 && !f.inOneof {
				continue
			}
			if f.secret {
				enc.AddString(f.name, Placeholder)
			} else {
				enc.AddInt64(f.name, n)
			}
		case accInt32:
			n := *(*int32)(ptr)
			switch {
			case n == 0 && !f.inOneof:
			case f.secret:
				enc.AddString(f.name, Placeholder)
			case f.kind != protoreflect.EnumKind:
				enc.AddInt32(f.name, n)
			default:
				if name, ok := f.enumName(protoreflect.EnumNumber(n)); ok {
					enc.AddString(f.name, name)
				} else {
					enc.AddInt32(f.name, n)
				}
			}
		case accBool:
			switch b := *(*bool)(ptr); {
			case !b && !f.inOneof:
			case f.secret:
				enc.AddString(f.name, Placeholder)
			default:
				enc.AddBool(f.name, b)
			}
		case accMsg:
			mp := *(*unsafe.Pointer)(ptr)
			switch {
			case mp == nil:
				if f.inOneof {
					w.writeField(enc, f, c, fbase, depth)
				}
			case f.secret:
				enc.AddString(f.name, Placeholder)
			default:
				w.writeMessage(enc, f.name, cursor{p: f.sub, base: mp}, depth)
			}
		case accStrMap:
			sm := *(*map[string]string)(ptr)
			if len(sm) == 0 {
				continue
			}
			fr := w.frame(depth + 1)
			fr.kind, fr.f, fr.smap = frameStrMap, f, sm
			_ = enc.AddObject(f.name, fr)
		case accStrList:
			ss := *(*[]string)(ptr)
			if len(ss) == 0 {
				continue
			}
			fr := w.frame(depth + 1)
			fr.kind, fr.f, fr.strs = frameStrList, f, ss
			_ = enc.AddArray(f.name, fr)
		case accMsgList:
			ps := *(*[]unsafe.Pointer)(ptr)
			if len(ps) == 0 {
				continue
			}
			fr := w.frame(depth + 1)
			fr.kind, fr.f, fr.ptrs = frameMsgList, f, ps
			_ = enc.AddArray(f.name, fr)
		default:
			w.writeField(enc, f, c, fbase, depth)
		}
	}
}

func (w *walker) writeField(enc zapcore.ObjectEncoder, f *fieldPlan, c *cursor, fbase unsafe.Pointer, depth int) {
	switch f.card {
	case cardMap:
		fr := w.frame(depth + 1)
		fr.f = f
		if fbase != nil && f.acc == accStrMap {
			if fr.smap = strMapAt(fbase, f); len(fr.smap) == 0 {
				return
			}
			fr.kind = frameStrMap
		} else {
			m := c.msg()
			if !m.Has(f.fd) {
				return
			}
			fr.kind, fr.pmap = frameMap, m.Get(f.fd).Map()
		}
		_ = enc.AddObject(f.name, fr)
	case cardList:
		fr := w.frame(depth + 1)
		fr.f = f
		switch {
		case fbase != nil && f.acc == accStrList:
			if fr.strs = strListAt(fbase, f); len(fr.strs) == 0 {
				return
			}
			fr.kind = frameStrList
		case fbase != nil && f.acc == accMsgList:
			if fr.ptrs = ptrListAt(fbase, f); len(fr.ptrs) == 0 {
				return
			}
			fr.kind = frameMsgList
		default:
			m := c.msg()
			if !m.Has(f.fd) {
				return
			}
			fr.kind, fr.list = frameList, m.Get(f.fd).List()
		}
		_ = enc.AddArray(f.name, fr)
	case cardMessage:
		sub, ok := c.message(f, fbase)
		if !ok {
			return
		}
		if f.secret {
			enc.AddString(f.name, Placeholder)
			return
		}
		w.writeMessage(enc, f.name, sub, depth)
	default:
		v, ok := c.scalar(f, fbase)
		if !ok {
			return
		}
		if f.secret {
			enc.AddString(f.name, Placeholder)
			return
		}
		w.addScalar(enc, f.name, f, v)
	}
}

// writeMessage writes a message value under key: well-known types in their
// JSON form, anything else as a nested object.
func (w *walker) writeMessage(enc zapcore.ObjectEncoder, key string, c cursor, depth int) {
	switch c.p.wkt {
	case wktTimestamp:
		enc.AddByteString(key, w.timestamp(&c))
	case wktDuration:
		enc.AddByteString(key, w.duration(&c))
	case wktWrapper:
		f := &c.p.fields[0]
		v, _ := c.scalar(f, c.base)
		w.addScalar(enc, key, f, orDefault(v, f))
	default:
		fr := w.frame(depth + 1)
		fr.kind, fr.c = frameMsg, c
		_ = enc.AddObject(key, fr)
	}
}

// appendMessage is writeMessage for an array element.
func (w *walker) appendMessage(enc zapcore.ArrayEncoder, c cursor, depth int) {
	switch c.p.wkt {
	case wktTimestamp:
		enc.AppendByteString(w.timestamp(&c))
	case wktDuration:
		enc.AppendByteString(w.duration(&c))
	case wktWrapper:
		f := &c.p.fields[0]
		v, _ := c.scalar(f, c.base)
		w.appendScalar(enc, f, orDefault(v, f))
	default:
		fr := w.frame(depth + 1)
		fr.kind, fr.c = frameMsg, c
		_ = enc.AppendObject(fr)
	}
}

// orDefault turns the invalid Value of an unpopulated reflective read into
// the field's zero value, for wrappers that always write their value.
func orDefault(v protoreflect.Value, f *fieldPlan) protoreflect.Value {
	if v.IsValid() {
		return v
	}
	return f.fd.Default()
}

// writeStrMap writes a map<string,string> read directly from its Go map,
// sorted by key.
func (w *walker) writeStrMap(enc zapcore.ObjectEncoder, fr *frame) {
	f := fr.f
	if len(fr.smap) == 1 { // topology segments, mostly: nothing to sort
		for k, v := range fr.smap {
			if f.secret || (w.heuristic && LooksSecret(k)) {
				v = Placeholder
			}
			enc.AddString(k, v)
		}
		return
	}
	kvs := fr.kvs[:0]
	for k, v := range fr.smap {
		kvs = append(kvs, strEntry{k, v})
	}
	sortStrEntries(kvs)
	fr.kvs = kvs
	for _, e := range kvs {
		v := e.v
		if f.secret || (w.heuristic && LooksSecret(e.k)) {
			v = Placeholder
		}
		enc.AddString(e.k, v)
	}
}

// sortStrEntries sorts by key; maps in requests are small, so insertion
// sort beats the general algorithm.
func sortStrEntries(kvs []strEntry) {
	if len(kvs) > 12 {
		slices.SortFunc(kvs, func(a, b strEntry) int { return cmp.Compare(a.k, b.k) })
		return
	}
	for i := 1; i < len(kvs); i++ {
		for j := i; j > 0 && kvs[j].k < kvs[j-1].k; j-- {
			kvs[j], kvs[j-1] = kvs[j-1], kvs[j]
		}
	}
}

func (w *walker) writeMapEntries(enc zapcore.ObjectEncoder, fr *frame) {
	f := fr.f
	fr.ents = sortedEntries(fr.pmap, fr.ents[:0], f.fd.MapKey().Kind())
	for _, e := range fr.ents {
		key := mapKeyString(e.k)
		switch {
		case f.secret || (f.strMap && w.heuristic && LooksSecret(key)):
			enc.AddString(key, Placeholder)
		case f.kind == protoreflect.MessageKind || f.kind == protoreflect.GroupKind:
			w.writeMessage(enc, key, f.sub.cursorOf(e.v.Message()), fr.depth)
		default:
			w.addScalar(enc, key, f, e.v)
		}
	}
}

func (w *walker) writeListElems(enc zapcore.ArrayEncoder, fr *frame) {
	f := fr.f
	switch fr.kind {
	case frameStrList:
		for _, s := range fr.strs {
			switch {
			case f.secret:
				enc.AppendString(Placeholder)
			case f.optionLike && hasOptionValue(s):
				w.scratch = appendRedactedOptions(w.scratch[:0], s)
				enc.AppendByteString(w.scratch)
			default:
				enc.AppendString(s)
			}
		}
	case frameMsgList:
		for _, ptr := range fr.ptrs {
			switch {
			case f.secret:
				enc.AppendString(Placeholder)
			case ptr == nil:
				w.appendMessage(enc, cursor{p: f.sub, m: f.sub.msgAt(nil)}, fr.depth)
			default:
				w.appendMessage(enc, cursor{p: f.sub, base: ptr}, fr.depth)
			}
		}
	default:
		l := fr.list
		for i := range l.Len() {
			v := l.Get(i)
			switch {
			case f.secret:
				enc.AppendString(Placeholder)
			case f.kind == protoreflect.MessageKind || f.kind == protoreflect.GroupKind:
				w.appendMessage(enc, f.sub.cursorOf(v.Message()), fr.depth)
			case f.optionLike:
				enc.AppendString(redactOption(v.String()))
			default:
				w.appendScalar(enc, f, v)
			}
		}
	}
}

// writeAny writes an Any as protojson does: "@type" and then the fields of
// the packed message, redacted. A payload whose type is not linked in cannot
// be checked for secrets, so its value is replaced.
func (w *walker) writeAny(enc zapcore.ObjectEncoder, c *cursor, depth int) {
	url, val := anyParts(c)
	if url == "" && len(val) == 0 {
		return
	}
	enc.AddString("@type", url)
	if len(val) == 0 {
		return
	}
	inner, ip := w.reg.unpackAny(url, val)
	switch {
	case inner == nil:
		enc.AddString("value", Placeholder)
	case ip.wkt == wktNone:
		ic := ip.cursorOf(inner)
		w.writeFields(enc, &ic, depth)
	default:
		w.writeMessage(enc, "value", ip.cursorOf(inner), depth)
	}
}

func anyParts(c *cursor) (string, []byte) {
	u, _ := c.scalar(&c.p.fields[0], c.base)
	v, _ := c.scalar(&c.p.fields[1], c.base)
	var url string
	var val []byte
	if u.IsValid() {
		url = u.String()
	}
	if v.IsValid() {
		val = v.Bytes()
	}
	return url, val
}

// unpackAny resolves and decodes the payload of an Any, or returns nil.
func (r *registry) unpackAny(url string, val []byte) (protoreflect.Message, *plan) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		return nil, nil
	}
	inner := mt.New()
	if err := proto.Unmarshal(val, inner.Interface()); err != nil {
		return nil, nil
	}
	return inner, r.planFor(inner.Descriptor())
}

// extensions returns field plans for the populated extension fields of m,
// ordered by number. Messages with extension ranges are rare (none in CSI or
// COSI), so this path may allocate.
func (r *registry) extensions(m protoreflect.Message) []fieldPlan {
	var out []fieldPlan
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if fd.IsExtension() {
			out = append(out, r.fieldPlanOf(fd))
		}
		return true
	})
	slices.SortFunc(out, func(a, b fieldPlan) int { return cmp.Compare(a.fd.Number(), b.fd.Number()) })
	return out
}

// fieldPlanOf builds a standalone plan for one field (used for extensions).
func (r *registry) fieldPlanOf(fd protoreflect.FieldDescriptor) fieldPlan {
	return newFieldPlan(fd, "["+string(fd.FullName())+"]", r.isSecret(fd), r.planFor)
}

// sortedEntries collects the entries of m into buf, sorted by key.
func sortedEntries(m protoreflect.Map, buf []mapEntry, kk protoreflect.Kind) []mapEntry {
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		buf = append(buf, mapEntry{k, v})
		return true
	})
	slices.SortFunc(buf, func(a, b mapEntry) int { return compareKeys(a.k, b.k, kk) })
	return buf
}

func compareKeys(a, b protoreflect.MapKey, kk protoreflect.Kind) int {
	switch kk {
	case protoreflect.StringKind:
		return cmp.Compare(a.String(), b.String())
	case protoreflect.BoolKind:
		ab, bb := a.Bool(), b.Bool()
		switch {
		case ab == bb:
			return 0
		case !ab:
			return -1
		}
		return 1
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return cmp.Compare(a.Uint(), b.Uint())
	default:
		return cmp.Compare(a.Int(), b.Int())
	}
}

func mapKeyString(k protoreflect.MapKey) string {
	switch v := k.Interface().(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	}
	return ""
}

func (w *walker) addScalar(enc zapcore.ObjectEncoder, key string, f *fieldPlan, v protoreflect.Value) {
	switch f.kind {
	case protoreflect.BoolKind:
		enc.AddBool(key, v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		enc.AddInt32(key, int32(v.Int()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		enc.AddInt64(key, v.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		enc.AddUint32(key, uint32(v.Uint()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		enc.AddUint64(key, v.Uint())
	case protoreflect.FloatKind:
		enc.AddFloat32(key, float32(v.Float()))
	case protoreflect.DoubleKind:
		enc.AddFloat64(key, v.Float())
	case protoreflect.StringKind:
		enc.AddString(key, v.String())
	case protoreflect.BytesKind:
		enc.AddByteString(key, w.base64(v.Bytes()))
	case protoreflect.EnumKind:
		if name, ok := f.enumName(v.Enum()); ok {
			enc.AddString(key, name)
		} else {
			enc.AddInt32(key, int32(v.Enum()))
		}
	}
}

func (w *walker) appendScalar(enc zapcore.ArrayEncoder, f *fieldPlan, v protoreflect.Value) {
	switch f.kind {
	case protoreflect.BoolKind:
		enc.AppendBool(v.Bool())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		enc.AppendInt32(int32(v.Int()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		enc.AppendInt64(v.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		enc.AppendUint32(uint32(v.Uint()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		enc.AppendUint64(v.Uint())
	case protoreflect.FloatKind:
		enc.AppendFloat32(float32(v.Float()))
	case protoreflect.DoubleKind:
		enc.AppendFloat64(v.Float())
	case protoreflect.StringKind:
		enc.AppendString(v.String())
	case protoreflect.BytesKind:
		enc.AppendByteString(w.base64(v.Bytes()))
	case protoreflect.EnumKind:
		if name, ok := f.enumName(v.Enum()); ok {
			enc.AppendString(name)
		} else {
			enc.AppendInt32(int32(v.Enum()))
		}
	}
}

// enumNames holds the value names of an enum whose numbers are small and
// non-negative, indexed by number; protoreflect's lookup and Name() cost a
// search and a string scan per value.
type enumNames struct {
	names  []string
	quoted []string // names as JSON strings, for the fast path
	ok     []bool
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
	en := &enumNames{names: make([]string, size), quoted: make([]string, size), ok: make([]bool, size)}
	for i := range vals.Len() {
		v := vals.Get(i)
		// The first value declared with a number wins, as in ByNumber.
		if n := v.Number(); n >= 0 && int(n) < size && !en.ok[n] {
			en.names[n], en.ok[n] = string(v.Name()), true
			en.quoted[n] = string(appendJSONString(nil, en.names[n]))
		}
	}
	return en
}

// The scratch buffer is handed to AddByteString/AppendByteString, which copy
// it before returning, so one buffer serves the whole walk.

func (w *walker) base64(b []byte) []byte {
	w.scratch = base64.StdEncoding.AppendEncode(w.scratch[:0], b)
	return w.scratch
}

// timestamp formats a google.protobuf.Timestamp as RFC 3339 in UTC.
func (w *walker) timestamp(c *cursor) []byte {
	sec, nanos := wktInts(c)
	w.scratch = time.Unix(sec, nanos).UTC().AppendFormat(w.scratch[:0], time.RFC3339Nano)
	return w.scratch
}

// wktInts reads the seconds and nanos of a Timestamp or Duration.
func wktInts(c *cursor) (int64, int64) {
	s, _ := c.scalar(&c.p.fields[0], c.base)
	n, _ := c.scalar(&c.p.fields[1], c.base)
	var sec, nanos int64
	if s.IsValid() {
		sec = s.Int()
	}
	if n.IsValid() {
		nanos = n.Int()
	}
	return sec, nanos
}

// duration formats a google.protobuf.Duration as protojson does: seconds
// with 0, 3, 6 or 9 fractional digits and an "s" suffix.
func (w *walker) duration(c *cursor) []byte {
	sec, nanos := wktInts(c)
	b := w.scratch[:0]
	if sec < 0 || nanos < 0 {
		b = append(b, '-')
		if sec < 0 {
			b = strconv.AppendUint(b, uint64(-(sec+1))+1, 10)
		} else {
			b = strconv.AppendInt(b, sec, 10)
		}
		if nanos < 0 {
			nanos = -nanos
		}
	} else {
		b = strconv.AppendInt(b, sec, 10)
	}
	if nanos != 0 {
		var frac [9]byte
		n := nanos % 1_000_000_000
		for i := 8; i >= 0; i-- {
			frac[i] = byte('0' + n%10)
			n /= 10
		}
		digits := 9
		for digits > 3 && string(frac[digits-3:digits]) == "000" {
			digits -= 3
		}
		b = append(b, '.')
		b = append(b, frac[:digits]...)
	}
	w.scratch = append(b, 's')
	return w.scratch
}
