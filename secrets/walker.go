package secrets

import (
	"cmp"
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

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
	if len(w.frames) > maxPooledFrames || cap(w.scratch) > 1<<16 {
		return
	}
	for _, fr := range w.frames {
		fr.reset()
	}
	w.reg = nil
	w.scan, w.text, w.found, w.vals = false, "", false, nil
	walkerPool.Put(w)
}

// frameKind says what a frame holds and so which of its fields are live.
type frameKind uint8

const (
	frameMsg  frameKind = iota // p, m
	frameMap                   // f, pmap
	frameList                  // f, list
)

// frame is one level of nesting: a message, map or list being written.
// It implements both zapcore.ObjectMarshaler and zapcore.ArrayMarshaler.
type frame struct {
	w     *walker
	depth int
	kind  frameKind

	p    *plan
	m    protoreflect.Message
	f    *fieldPlan
	list protoreflect.List
	pmap protoreflect.Map

	ents []mapEntry // scratch for sorting map entries
	// collect appends one entry to ents. It is made once per frame, so that
	// ranging over a map does not allocate a closure on every call.
	collect func(protoreflect.MapKey, protoreflect.Value) bool
}

type mapEntry struct {
	k protoreflect.MapKey
	v protoreflect.Value
}

// reset drops every reference to the caller's message.
func (fr *frame) reset() {
	fr.p, fr.m, fr.f, fr.list, fr.pmap = nil, nil, nil, nil, nil
	clear(fr.ents[:cap(fr.ents)])
	fr.ents = fr.ents[:0]
}

// frame returns the frame for the given depth. Callers set its kind and the
// fields that kind uses.
func (w *walker) frame(depth int) *frame {
	if depth < len(w.frames) {
		return w.frames[depth]
	}
	for len(w.frames) <= depth {
		fr := &frame{w: w, depth: len(w.frames)}
		fr.collect = func(k protoreflect.MapKey, v protoreflect.Value) bool {
			fr.ents = append(fr.ents, mapEntry{k, v})
			return true
		}
		w.frames = append(w.frames, fr)
	}
	return w.frames[depth]
}

func (fr *frame) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	switch fr.kind {
	case frameMsg:
		fr.w.writeFields(enc, fr.p, fr.m, fr.depth)
	case frameMap:
		fr.w.writeMapEntries(enc, fr)
	}
	return nil
}

func (fr *frame) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	fr.w.writeListElems(enc, fr)
	return nil
}

// scalar reads singular scalar field f of m; ok is false when the field is
// not populated. A scalar without presence is populated when it is not its
// zero value, which one Get tells without a Has.
func scalar(m protoreflect.Message, f *fieldPlan) (v protoreflect.Value, ok bool) {
	switch {
	case f.inOneof:
		return m.Get(f.fd), true
	case f.presence:
		if !m.Has(f.fd) {
			return v, false
		}
		return m.Get(f.fd), true
	}
	v = m.Get(f.fd)
	return v, !isZero(v, f.kind)
}

// isZero reports whether v is the zero value of kind, as Has decides for a
// field without presence (a float is zero only as +0).
func isZero(v protoreflect.Value, kind protoreflect.Kind) bool {
	switch kind {
	case protoreflect.StringKind:
		return v.String() == ""
	case protoreflect.BytesKind:
		return len(v.Bytes()) == 0
	case protoreflect.BoolKind:
		return !v.Bool()
	case protoreflect.EnumKind:
		return v.Enum() == 0
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int() == 0
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint() == 0
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return math.Float64bits(v.Float()) == 0
	}
	return !v.IsValid()
}

// writeFields writes the populated fields of m, of type p, into enc.
func (w *walker) writeFields(enc zapcore.ObjectEncoder, p *plan, m protoreflect.Message, depth int) {
	if p.wkt == wktAny {
		w.writeAny(enc, p, m, depth)
		return
	}
	for _, idx := range p.order {
		if f := p.field(m, idx); f != nil {
			w.writeField(enc, f, m, depth)
		}
	}
	if p.hasExt {
		for _, f := range w.reg.extensions(m) {
			w.writeField(enc, &f, m, depth)
		}
	}
}

func (w *walker) writeField(enc zapcore.ObjectEncoder, f *fieldPlan, m protoreflect.Message, depth int) {
	switch f.card {
	case cardMap:
		if !m.Has(f.fd) {
			return
		}
		fr := w.frame(depth + 1)
		fr.kind, fr.f, fr.pmap = frameMap, f, m.Get(f.fd).Map()
		_ = enc.AddObject(f.name, fr)
	case cardList:
		if !m.Has(f.fd) {
			return
		}
		fr := w.frame(depth + 1)
		fr.kind, fr.f, fr.list = frameList, f, m.Get(f.fd).List()
		_ = enc.AddArray(f.name, fr)
	case cardMessage:
		if !f.populated(m) {
			return
		}
		if f.secret {
			enc.AddString(f.name, Placeholder)
			return
		}
		w.writeMessage(enc, f.name, f.sub, m.Get(f.fd).Message(), depth)
	default:
		v, ok := scalar(m, f)
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
func (w *walker) writeMessage(enc zapcore.ObjectEncoder, key string, p *plan, m protoreflect.Message, depth int) {
	switch p.wkt {
	case wktTimestamp:
		enc.AddByteString(key, w.timestamp(p, m))
	case wktDuration:
		enc.AddByteString(key, w.duration(p, m))
	case wktWrapper:
		f := &p.fields[0]
		w.addScalar(enc, key, f, m.Get(f.fd))
	default:
		fr := w.frame(depth + 1)
		fr.kind, fr.p, fr.m = frameMsg, p, m
		_ = enc.AddObject(key, fr)
	}
}

// appendMessage is writeMessage for an array element.
func (w *walker) appendMessage(enc zapcore.ArrayEncoder, p *plan, m protoreflect.Message, depth int) {
	switch p.wkt {
	case wktTimestamp:
		enc.AppendByteString(w.timestamp(p, m))
	case wktDuration:
		enc.AppendByteString(w.duration(p, m))
	case wktWrapper:
		f := &p.fields[0]
		w.appendScalar(enc, f, m.Get(f.fd))
	default:
		fr := w.frame(depth + 1)
		fr.kind, fr.p, fr.m = frameMsg, p, m
		_ = enc.AppendObject(fr)
	}
}

// writeMapEntries writes a map sorted by key.
func (w *walker) writeMapEntries(enc zapcore.ObjectEncoder, fr *frame) {
	f := fr.f
	fr.ents = fr.ents[:0]
	fr.pmap.Range(fr.collect)
	sortEntries(fr.ents, f.keyKind)
	for _, e := range fr.ents {
		key := mapKeyString(e.k, f.keyKind)
		switch {
		case f.secret:
			enc.AddString(key, Placeholder)
		case f.strMap:
			if w.heuristic && LooksSecret(key) {
				enc.AddString(key, Placeholder)
			} else {
				enc.AddString(key, e.v.String())
			}
		case f.isMessage():
			w.writeMessage(enc, key, f.sub, e.v.Message(), fr.depth)
		default:
			w.addScalar(enc, key, f, e.v)
		}
	}
}

func (w *walker) writeListElems(enc zapcore.ArrayEncoder, fr *frame) {
	f, l := fr.f, fr.list
	for i := range l.Len() {
		switch {
		case f.secret:
			enc.AppendString(Placeholder)
		case f.isMessage():
			w.appendMessage(enc, f.sub, l.Get(i).Message(), fr.depth)
		case f.optionLike:
			if s := l.Get(i).String(); hasOptionValue(s) {
				w.scratch = appendRedactedOptions(w.scratch[:0], s)
				enc.AppendByteString(w.scratch)
			} else {
				enc.AppendString(s)
			}
		default:
			w.appendScalar(enc, f, l.Get(i))
		}
	}
}

// writeAny writes an Any as protojson does: "@type" and then the fields of
// the packed message, redacted. A payload whose type is not linked in cannot
// be checked for secrets, so its value is replaced.
func (w *walker) writeAny(enc zapcore.ObjectEncoder, p *plan, m protoreflect.Message, depth int) {
	url, val := anyParts(p, m)
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
		w.writeFields(enc, ip, inner, depth)
	default:
		w.writeMessage(enc, "value", ip, inner, depth)
	}
}

// anyParts returns the type URL and the payload of an Any.
func anyParts(p *plan, m protoreflect.Message) (string, []byte) {
	return m.Get(p.fields[0].fd).String(), m.Get(p.fields[1].fd).Bytes()
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

// sortEntries sorts map entries by key. Maps in requests are small, so
// insertion sort beats the general algorithm there.
func sortEntries(ents []mapEntry, kk protoreflect.Kind) {
	if len(ents) > 12 {
		slices.SortFunc(ents, func(a, b mapEntry) int { return compareKeys(a.k, b.k, kk) })
		return
	}
	for i := 1; i < len(ents); i++ {
		for j := i; j > 0 && compareKeys(ents[j].k, ents[j-1].k, kk) < 0; j-- {
			ents[j], ents[j-1] = ents[j-1], ents[j]
		}
	}
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

// mapKeyString is a map key as a JSON object key, as protojson writes it.
func mapKeyString(k protoreflect.MapKey, kk protoreflect.Kind) string {
	switch kk {
	case protoreflect.StringKind:
		return k.String()
	case protoreflect.BoolKind:
		return strconv.FormatBool(k.Bool())
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(k.Uint(), 10)
	default:
		return strconv.FormatInt(k.Int(), 10)
	}
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

// The scratch buffer is handed to AddByteString/AppendByteString, which copy
// it before returning, so one buffer serves the whole walk.

func (w *walker) base64(b []byte) []byte {
	w.scratch = base64.StdEncoding.AppendEncode(w.scratch[:0], b)
	return w.scratch
}

// timestamp formats a google.protobuf.Timestamp as RFC 3339 in UTC.
func (w *walker) timestamp(p *plan, m protoreflect.Message) []byte {
	sec, nanos := wktInts(p, m)
	w.scratch = time.Unix(sec, nanos).UTC().AppendFormat(w.scratch[:0], time.RFC3339Nano)
	return w.scratch
}

// wktInts reads the seconds and nanos of a Timestamp or Duration.
func wktInts(p *plan, m protoreflect.Message) (int64, int64) {
	return m.Get(p.fields[0].fd).Int(), m.Get(p.fields[1].fd).Int()
}

// duration formats a google.protobuf.Duration as protojson does: seconds
// with 0, 3, 6 or 9 fractional digits and an "s" suffix.
func (w *walker) duration(p *plan, m protoreflect.Message) []byte {
	sec, nanos := wktInts(p, m)
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
