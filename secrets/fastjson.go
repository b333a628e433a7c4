package secrets

import (
	"encoding/binary"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The fast path. Written through the zapcore.ObjectEncoder interface, a
// redacted message costs one interface call per key and value, and zap's
// JSON encoder checks every byte of every key for escaping, although the
// field names are fixed. When the encoder is zap's own JSON encoder, the
// walk instead appends the JSON itself, with the field names escaped once
// per message type, into a scratch buffer, and hands the result to the
// encoder's buffer in one write. The bytes are exactly those the encoder
// would have written (TestFastPathMatchesEncoder and FuzzRedact compare the
// two paths byte for byte), so the fast path changes nothing but the cost.
//
// zap exports no way to add raw JSON to an object, so the encoder's buffer
// is found by its field: zapJSON checks at start-up, by reflection, that
// zap's JSON encoder is the struct this code expects (a *buffer.Buffer
// field named buf and a bool named spaced), and turns the fast path off
// otherwise. A message the fast path cannot write (a type without a
// generated struct, an extension, an Any, a map with other than string keys
// and values, a field read only through protoreflect) is written the general
// way; nothing is written twice, since the fast path writes to the encoder
// only once it has finished.

// zapJSON locates the buffer of zap's JSON encoder.
var zapJSON = func() (l struct {
	ok                bool
	typ               unsafe.Pointer // type word of *zapcore.jsonEncoder
	bufOff, spacedOff uintptr
}) {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{})
	t := reflect.TypeOf(enc)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct ||
		t.Elem().PkgPath() != "go.uber.org/zap/zapcore" || t.Elem().Name() != "jsonEncoder" {
		return l
	}
	buf, ok1 := t.Elem().FieldByName("buf")
	spaced, ok2 := t.Elem().FieldByName("spaced")
	if !ok1 || !ok2 || buf.Type != reflect.TypeFor[*buffer.Buffer]() || spaced.Type.Kind() != reflect.Bool ||
		len(buf.Index) != 1 || len(spaced.Index) != 1 {
		return l
	}
	l.typ, l.bufOff, l.spacedOff = typeWordOf(enc), buf.Offset, spaced.Offset
	// Prove the offsets on a live encoder: a byte added through the
	// encoder's own method must land in the buffer found.
	probe := zapcore.NewJSONEncoder(zapcore.EncoderConfig{})
	b := bufferOf(probe, l.typ, l.bufOff, l.spacedOff)
	if b == nil {
		return l
	}
	probe.AddString("k", "v")
	if b.String() != `"k":"v"` {
		return l
	}
	l.ok = true
	return l
}()

// bufferOf returns the buffer of enc when enc is zap's JSON encoder in its
// compact form (the console encoder's spaced form is left to the general
// path), or nil.
func bufferOf(enc zapcore.ObjectEncoder, typ unsafe.Pointer, bufOff, spacedOff uintptr) *buffer.Buffer {
	x := any(enc)
	e := (*eface)(unsafe.Pointer(&x))
	if e.typ != typ || e.data == nil {
		return nil
	}
	if *(*bool)(unsafe.Add(e.data, spacedOff)) {
		return nil
	}
	return *(**buffer.Buffer)(unsafe.Add(e.data, bufOff))
}

// zapBuffer is bufferOf with the layout found at start-up, or nil when the
// fast path is off.
func zapBuffer(enc zapcore.ObjectEncoder) *buffer.Buffer {
	if !zapJSON.ok {
		return nil
	}
	return bufferOf(enc, zapJSON.typ, zapJSON.bufOff, zapJSON.spacedOff)
}

// maxFastDepth bounds the nesting the fast path recurses into; deeper
// messages are written the general way.
const maxFastDepth = 64

// placeholderJSON is Placeholder as a JSON string.
const placeholderJSON = `"` + Placeholder + `"`

// appendFields appends the populated fields of the message at c, as the
// members of a JSON object, to b. ok is false when some part of the message
// needs the general path.
func (w *walker) appendFields(b []byte, c *cursor, depth int) (_ []byte, ok bool) {
	p := c.p
	if c.base == nil || p.hasExt || p.wkt != wktNone || depth > maxFastDepth {
		return b, false
	}
	first := true
	for _, idx := range p.order {
		var f *fieldPlan
		fbase := c.base
		if idx >= 0 {
			f = &p.fields[idx]
		} else if f, fbase = c.field(idx); f == nil {
			continue
		}
		if fbase == nil {
			return b, false
		}
		ptr := unsafe.Add(fbase, f.off)
		switch f.acc {
		case accString:
			s := *(*string)(ptr)
			if s == "" && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = appendJSONString(b, s)
			}
		case accBytes:
			v := *(*[]byte)(ptr)
			if len(v) == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = appendJSONBytes(b, w.base64(v))
			}
		case accBool:
			v := *(*bool)(ptr)
			if !v && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = strconv.AppendBool(b, v)
			}
		case accInt32:
			n := *(*int32)(ptr)
			if n == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			switch {
			case f.secret:
				b = append(b, placeholderJSON...)
			case f.kind == protoreflect.EnumKind:
				b = appendEnum(b, f, protoreflect.EnumNumber(n))
			default:
				b = strconv.AppendInt(b, int64(n), 10)
			}
		case accInt64:
			n := *(*int64)(ptr)
			if n == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = strconv.AppendInt(b, n, 10)
			}
		case accUint32:
			n := *(*uint32)(ptr)
			if n == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = strconv.AppendUint(b, uint64(n), 10)
			}
		case accUint64:
			n := *(*uint64)(ptr)
			if n == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = strconv.AppendUint(b, n, 10)
			}
		case accFloat32:
			x := *(*float32)(ptr)
			if math.Float32bits(x) == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = appendJSONFloat(b, float64(x), 32)
			}
		case accFloat64:
			x := *(*float64)(ptr)
			if math.Float64bits(x) == 0 && !f.inOneof {
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
			} else {
				b = appendJSONFloat(b, x, 64)
			}
		case accMsg:
			mp := *(*unsafe.Pointer)(ptr)
			if mp == nil {
				if !f.inOneof {
					continue
				}
				// A set oneof member holding a nil message is an empty
				// one; the empty form of a well-known type is left to
				// the general path.
				if f.sub.wkt != wktNone {
					return b, false
				}
				b, first = appendMember(b, first, f), false
				if f.secret {
					b = append(b, placeholderJSON...)
				} else {
					b = append(b, '{', '}')
				}
				continue
			}
			b, first = appendMember(b, first, f), false
			if f.secret {
				b = append(b, placeholderJSON...)
				continue
			}
			if b, ok = w.jsonMessage(b, cursor{p: f.sub, base: mp}, depth); !ok {
				return b, false
			}
		case accStrMap:
			sm := *(*map[string]string)(ptr)
			if len(sm) == 0 {
				continue
			}
			b, first = appendMember(b, first, f), false
			b = w.appendStrMap(b, f, sm, depth)
		case accStrList:
			ss := *(*[]string)(ptr)
			if len(ss) == 0 {
				continue
			}
			b, first = appendMember(b, first, f), false
			b = w.appendStrList(b, f, ss)
		case accMsgList:
			ps := *(*[]unsafe.Pointer)(ptr)
			if len(ps) == 0 {
				continue
			}
			b, first = appendMember(b, first, f), false
			b = append(b, '[')
			for i, mp := range ps {
				if i > 0 {
					b = append(b, ',')
				}
				switch {
				case f.secret:
					b = append(b, placeholderJSON...)
				case mp == nil:
					return b, false // a nil element: rare, general path
				default:
					if b, ok = w.jsonMessage(b, cursor{p: f.sub, base: mp}, depth); !ok {
						return b, false
					}
				}
			}
			b = append(b, ']')
		default:
			return b, false
		}
	}
	return b, true
}

// appendMember starts an object member: the separator unless it is the
// first, and the field's quoted name with its colon.
func appendMember(b []byte, first bool, f *fieldPlan) []byte {
	if !first {
		b = append(b, ',')
	}
	return append(b, f.jkey...)
}

// jsonMessage appends a message value: a well-known type in its JSON
// form, any other message as an object.
func (w *walker) jsonMessage(b []byte, c cursor, depth int) (_ []byte, ok bool) {
	switch c.p.wkt {
	case wktNone:
		b = append(b, '{')
		if b, ok = w.appendFields(b, &c, depth+1); !ok {
			return b, false
		}
		return append(b, '}'), true
	case wktTimestamp:
		return appendJSONBytes(b, w.timestamp(&c)), true
	case wktDuration:
		return appendJSONBytes(b, w.duration(&c)), true
	case wktWrapper:
		f := &c.p.fields[0]
		v, _ := c.scalar(f, c.base)
		return w.jsonScalar(b, f, orDefault(v, f))
	}
	return b, false
}

// jsonScalar appends the scalar v of field f as addScalar writes it.
func (w *walker) jsonScalar(b []byte, f *fieldPlan, v protoreflect.Value) (_ []byte, ok bool) {
	switch f.kind {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case protoreflect.FloatKind:
		return appendJSONFloat(b, v.Float(), 32), true
	case protoreflect.DoubleKind:
		return appendJSONFloat(b, v.Float(), 64), true
	case protoreflect.StringKind:
		return appendJSONString(b, v.String()), true
	case protoreflect.BytesKind:
		return appendJSONBytes(b, w.base64(v.Bytes())), true
	case protoreflect.EnumKind:
		return appendEnum(b, f, v.Enum()), true
	}
	return b, false
}

// appendEnum appends an enum value by name, or by number when it has none.
func appendEnum(b []byte, f *fieldPlan, n protoreflect.EnumNumber) []byte {
	if en := f.enum; en != nil && n >= 0 && int(n) < len(en.quoted) && en.ok[n] {
		return append(b, en.quoted[n]...)
	}
	if name, ok := f.enumName(n); ok {
		return appendJSONString(b, name)
	}
	return strconv.AppendInt(b, int64(int32(n)), 10)
}

// appendStrMap appends a map<string,string> as an object sorted by key, as
// writeStrMap does.
func (w *walker) appendStrMap(b []byte, f *fieldPlan, sm map[string]string, depth int) []byte {
	b = append(b, '{')
	if len(sm) == 1 {
		for k, v := range sm {
			b = w.appendStrEntry(b, f, k, v)
		}
		return append(b, '}')
	}
	if len(sm) <= smallMap {
		// Sorted on the stack, as request maps are small: no write to the
		// heap, so no GC write barrier on every swap.
		var small [smallMap]strEntry
		kvs := small[:0]
		for k, v := range sm {
			kvs = append(kvs, strEntry{k, v})
		}
		return append(w.appendStrEntries(b, f, kvs), '}')
	}
	fr := w.frame(depth + 1)
	kvs := fr.kvs[:0]
	for k, v := range sm {
		kvs = append(kvs, strEntry{k, v})
	}
	fr.kvs = kvs
	return append(w.appendStrEntries(b, f, kvs), '}')
}

// smallMap is the most entries appendStrMap sorts on the stack.
const smallMap = 8

// appendStrEntries sorts kvs and appends them as object members.
func (w *walker) appendStrEntries(b []byte, f *fieldPlan, kvs []strEntry) []byte {
	sortStrEntries(kvs)
	for i, e := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.appendStrEntry(b, f, e.k, e.v)
	}
	return b
}

func (w *walker) appendStrEntry(b []byte, f *fieldPlan, k, v string) []byte {
	b = appendJSONString(b, k)
	b = append(b, ':')
	if f.secret || (w.heuristic && LooksSecret(k)) {
		return append(b, placeholderJSON...)
	}
	return appendJSONString(b, v)
}

// appendStrList appends a repeated string, as writeListElems does.
func (w *walker) appendStrList(b []byte, f *fieldPlan, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case f.secret:
			b = append(b, placeholderJSON...)
		case f.optionLike && hasOptionValue(s):
			w.scratch = appendRedactedOptions(w.scratch[:0], s)
			b = appendJSONBytes(b, w.scratch)
		default:
			b = appendJSONString(b, s)
		}
	}
	return append(b, ']')
}

// appendJSONFloat appends x as zap's JSON encoder does.
func appendJSONFloat(b []byte, x float64, bits int) []byte {
	switch {
	case math.IsNaN(x):
		return append(b, `"NaN"`...)
	case math.IsInf(x, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(x, -1):
		return append(b, `"-Inf"`...)
	}
	return strconv.AppendFloat(b, x, 'f', -1, bits)
}

// appendJSONKey appends the quoted key and a colon, escaped as zap escapes
// keys.
func appendJSONKey(b []byte, key string) []byte {
	return append(appendJSONString(b, key), ':')
}

// appendJSONString appends s quoted and escaped exactly as zap's JSON
// encoder escapes strings: `"` and `\` escaped, \n, \r and \t by name,
// other control characters as \u00XX, invalid UTF-8 replaced by \ufffd, and
// nothing else touched.
func appendJSONString(b []byte, s string) []byte {
	// Most strings need no escape at all. They are copied as they are
	// checked, eight bytes at a time and then one by one, into room made
	// for the whole string; the first byte that needs a look hands the rest
	// to appendEscapedRest.
	n := len(b)
	b = slices.Grow(b, len(s)+2)[:n+len(s)+2]
	b[n] = '"'
	dst := b[n+1 : n+1+len(s)]
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		if !plain8(x) {
			break
		}
		binary.LittleEndian.PutUint64(dst[i:], x)
	}
	for ; i < len(s); i++ {
		c := s[i]
		if !plainByte[c] {
			return appendEscapedRest(b[:n+1+i], s, i)
		}
		dst[i] = c
	}
	b[n+1+len(s)] = '"'
	return b
}

// plainByte[c] is true for the bytes a JSON string holds as they are:
// printable ASCII other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendEscapedRest appends s[i:], where s[i] needs a look, and the closing
// quote.
func appendEscapedRest(b []byte, s string, i int) []byte {
	last := i
	for i < len(s) {
		c := s[i]
		if plainByte[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[last:i]...)
			b = append(b, `\ufffd`...)
			i++
			last = i
			continue
		}
		b = append(b, s[last:i]...)
		b = appendEscaped(b, c)
		i++
		last = i
	}
	b = append(b, s[last:]...)
	return append(b, '"')
}

// Word-at-a-time byte tests (the classic "has zero byte" bit tricks).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether none of the eight bytes of x needs escaping or
// UTF-8 decoding: none is below 0x20, none is '"' or '\\', none has its
// high bit set.
func plain8(x uint64) bool {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	// A byte's high bit in lt is set when the byte is below 0x20; in zq
	// and zb when the byte of q or bs is zero. Borrows can only set high
	// bits above a byte that already answers, so "none" is exact.
	lt := (x - ones*0x20) &^ x
	zq := (q - ones) &^ q
	zb := (bs - ones) &^ bs
	return (x|lt|zq|zb)&highs == 0
}

// appendJSONBytes is appendJSONString for a byte slice.
func appendJSONBytes(b, s []byte) []byte {
	return appendJSONString(b, unsafe.String(unsafe.SliceData(s), len(s)))
}

const lowerHex = "0123456789abcdef"

// appendEscaped appends the escape of an ASCII byte that needs one.
func appendEscaped(b []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
}
