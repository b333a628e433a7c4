package secrets

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Redact returns a deep copy of m with every secret value replaced and every
// key kept; m itself is not modified. Secret strings become Placeholder and
// secret bytes the bytes of Placeholder; secret numbers, booleans and enums
// become zero (cleared when singular); in a secret message every value is
// treated so. With the heuristic on, map<string,string> values under keys
// that LooksSecret become Placeholder too.
//
// Unknown fields are dropped throughout the copy, because whether they hold
// secrets cannot be known, and an Any whose packed type is not linked in
// loses its payload for the same reason; a resolvable Any is unpacked,
// redacted and packed again.
func (r *Redactor) Redact(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	c := proto.Clone(m)
	pm := c.ProtoReflect()
	if !pm.IsValid() {
		return c
	}
	reg := r.registry()
	rd := redaction{reg: reg, heuristic: r.orDefault().heuristic}
	rd.message(reg.planFor(pm.Descriptor()), pm, false)
	return c
}

// Redact is Redactor.Redact on the default Redactor (heuristic off).
func Redact(m proto.Message) proto.Message { return defaultRedactor.Redact(m) }

type redaction struct {
	reg       *registry
	heuristic bool
}

func (rd redaction) message(p *plan, m protoreflect.Message, all bool) {
	if len(m.GetUnknown()) > 0 {
		m.SetUnknown(nil)
	}
	if p.wkt == wktAny {
		rd.any(p, m, all)
		return
	}
	for _, idx := range p.order {
		if f := p.field(m, idx); f != nil && f.populated(m) {
			rd.field(f, m, all)
		}
	}
	if p.hasExt {
		for _, f := range rd.reg.extensions(m) {
			rd.field(&f, m, all)
		}
	}
}

func (rd redaction) field(f *fieldPlan, m protoreflect.Message, all bool) {
	secret := all || f.secret
	isMsg := f.isMessage()
	switch f.card {
	case cardMap:
		mp := m.Mutable(f.fd).Map()
		var keys []protoreflect.MapKey
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k)
			return true
		})
		for _, k := range keys {
			switch {
			case isMsg:
				rd.message(f.sub, mp.Mutable(k).Message(), secret)
			case secret:
				mp.Set(k, redactedScalar(f.kind))
			case f.strMap && rd.heuristic && LooksSecret(k.String()):
				mp.Set(k, protoreflect.ValueOfString(Placeholder))
			}
		}
	case cardList:
		l := m.Mutable(f.fd).List()
		for i := range l.Len() {
			switch {
			case isMsg:
				rd.message(f.sub, l.Get(i).Message(), secret)
			case secret:
				l.Set(i, redactedScalar(f.kind))
			case f.optionLike:
				l.Set(i, protoreflect.ValueOfString(redactOption(l.Get(i).String())))
			}
		}
	case cardMessage:
		rd.message(f.sub, m.Mutable(f.fd).Message(), secret)
	default:
		if !secret {
			return
		}
		switch f.kind {
		case protoreflect.StringKind, protoreflect.BytesKind:
			m.Set(f.fd, redactedScalar(f.kind))
		default:
			m.Clear(f.fd)
		}
	}
}

// redactedScalar is what replaces a secret value of the given kind.
func redactedScalar(kind protoreflect.Kind) protoreflect.Value {
	switch kind {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(Placeholder)
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(Placeholder))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(false)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(0)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(0)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(0)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(0)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(0)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(0)
	}
	return protoreflect.Value{}
}

func (rd redaction) any(p *plan, m protoreflect.Message, all bool) {
	url, val := anyParts(p, m)
	if len(val) == 0 {
		return
	}
	valFd := p.fields[1].fd
	inner, ip := rd.reg.unpackAny(url, val)
	if inner == nil {
		m.Clear(valFd)
		return
	}
	rd.message(ip, inner, all)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner.Interface())
	if err != nil {
		m.Clear(valFd)
		return
	}
	m.Set(valFd, protoreflect.ValueOfBytes(b))
}
