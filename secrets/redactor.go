package secrets

import (
	"bytes"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Redactor writes and copies protobuf messages with their secret values
// replaced. The zero value is ready to use and equals NewRedactor(); a
// Redactor is safe for concurrent use.
type Redactor struct {
	heuristic bool
	reg       *registry // nil: builtin
}

// Option configures a Redactor.
type Option func(*Redactor)

// WithHeuristic makes the Redactor also treat as secret the values of any
// map<string,string> entry whose key LooksSecret, because users do put
// passwords into StorageClass parameters and volume contexts. Keys are still
// written.
func WithHeuristic(on bool) Option {
	return func(r *Redactor) { r.heuristic = on }
}

// WithSecretFields makes the Redactor also treat as secret the fields
// named, by full field name ("example.v1.Credentials.secret_key"), for a
// protocol that does not annotate its secrets. They are the Redactor's
// alone: IsSecretField, HasSecrets and the rest of the library keep the
// built-in definition. The Redactor caches plans of its own for them.
// Names are not checked: one that names no field hides nothing, so assert
// each with r.IsSecretField in a test. To scrub errors with the same fields,
// pass r.ScrubAny to sanitize.WithScrubber and recovery.WithScrubber, and r
// to logging.WithRedactor.
func WithSecretFields(fields ...protoreflect.FullName) Option {
	return func(r *Redactor) { r.reg = r.registry().with(fields) }
}

// NewRedactor returns a Redactor with the given options.
func NewRedactor(opts ...Option) *Redactor {
	r := &Redactor{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// registry is the set of sensitive fields r uses: builtin unless r was
// built WithSecretFields.
func (r *Redactor) registry() *registry {
	if r == nil || r.reg == nil {
		return builtin
	}
	return r.reg
}

// IsSecretField is the package's IsSecretField, with the fields of
// WithSecretFields secret too.
func (r *Redactor) IsSecretField(fd protoreflect.FieldDescriptor) bool {
	if fd == nil {
		return false
	}
	return r.registry().isSecret(fd)
}

// HasSecrets is the package's HasSecrets, with the fields of
// WithSecretFields secret too.
func (r *Redactor) HasSecrets(md protoreflect.MessageDescriptor) bool {
	if md == nil {
		return false
	}
	return r.registry().planFor(md).hasSecrets
}

// defaultRedactor backs the package-level functions; its heuristic is off.
var defaultRedactor = &Redactor{}

func (r *Redactor) orDefault() *Redactor {
	if r == nil {
		return defaultRedactor
	}
	return r
}

// objectMarshaler is what Object returns. It holds only the message and how
// to redact it; all work happens when (and if) the encoder asks for the
// object.
type objectMarshaler struct {
	reg       *registry
	heuristic bool
	m         proto.Message
}

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (o *objectMarshaler) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	encodeMessage(enc, o.m, o.reg, o.heuristic)
	return nil
}

type nopMarshaler struct{}

func (nopMarshaler) MarshalLogObject(zapcore.ObjectEncoder) error { return nil }

// encodeMessage writes the fields of m, redacted, into enc.
func encodeMessage(enc zapcore.ObjectEncoder, m proto.Message, reg *registry, heuristic bool) {
	if m == nil {
		return
	}
	pm := m.ProtoReflect()
	if !pm.IsValid() {
		return
	}
	w := getWalker(reg, heuristic)
	w.writeFields(enc, reg.planFor(pm.Descriptor()), pm, 0)
	w.release()
}

// Object returns a zap ObjectMarshaler that writes m field by field with
// every secret value replaced by Placeholder and every key kept. Field names
// are the proto names (volume_id), fields appear in declaration order, map
// entries in key order, and only populated fields are written. A nil message
// writes nothing. Nothing is computed until the encoder asks for the object,
// so a disabled log level costs only the call.
func (r *Redactor) Object(m proto.Message) zapcore.ObjectMarshaler {
	if m == nil {
		return nopMarshaler{}
	}
	return &objectMarshaler{reg: r.registry(), heuristic: r.orDefault().heuristic, m: m}
}

// Object is Redactor.Object on the default Redactor (heuristic off).
func Object(m proto.Message) zapcore.ObjectMarshaler { return defaultRedactor.Object(m) }

// Field returns zap.Object(key, r.Object(m)).
func (r *Redactor) Field(key string, m proto.Message) zap.Field {
	return zap.Object(key, r.Object(m))
}

// Field returns zap.Object(key, Object(m)), the usual way to log a request:
//
//	logger.Debug("call", secrets.Field("request", req))
func Field(key string, m proto.Message) zap.Field { return defaultRedactor.Field(key, m) }

// stringEncoder writes only the fields it is given: every entry key is empty.
var stringEncoder = zapcore.NewJSONEncoder(zapcore.EncoderConfig{})

// String returns m, redacted, as one line of JSON: exactly the object that
// Object writes to a zap JSON encoder. A nil message gives "{}".
func (r *Redactor) String(m proto.Message) string {
	w := getWalker(r.registry(), r.orDefault().heuristic)
	w.inline = objectMarshaler{reg: w.reg, heuristic: w.heuristic, m: m}
	w.fields[0] = zap.Inline(&w.inline)
	buf, err := stringEncoder.EncodeEntry(zapcore.Entry{}, w.fields[:])
	w.fields[0] = zap.Field{}
	w.inline = objectMarshaler{}
	w.release()
	if err != nil {
		// The JSON encoder only fails on field errors, which our marshaler
		// never reports; keep the contract of returning valid JSON anyway.
		return "{}"
	}
	s := string(bytes.TrimRight(buf.Bytes(), "\n"))
	buf.Free()
	return s
}

// String is Redactor.String on the default Redactor (heuristic off).
func String(m proto.Message) string { return defaultRedactor.String(m) }
