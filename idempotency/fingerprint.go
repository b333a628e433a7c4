package idempotency

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"math"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/secrets"
)

// fingerprintDomain separates fingerprints from any other SHA-256 use and
// versions the canonical encoding: change it whenever the encoding changes,
// since stored fingerprints would otherwise silently stop matching.
const fingerprintDomain = "csikit.idempotency.fingerprint.v2\x00"

// unorderedFields are repeated fields whose element order carries no meaning
// in the spec: a CO may send the same set in any order, and a retry must
// still match. Every other repeated field keeps its order
// (TopologyRequirement.preferred, for one, is a preference order).
var unorderedFields = map[protoreflect.FullName]bool{
	"csi.v1.CreateVolumeRequest.volume_capabilities":               true,
	"csi.v1.TopologyRequirement.requisite":                         true,
	"csi.v1.CreateVolumeGroupSnapshotRequest.source_volume_ids":    true,
	"csi.v1.ValidateVolumeCapabilitiesRequest.volume_capabilities": true,
}

// Fingerprint returns a short stable string that identifies the content of
// m, for telling a retried create-by-name call from an incompatible one.
// Store it with the resource; when the same name arrives again, an equal
// fingerprint means "return the existing resource" and a different one means
// ALREADY_EXISTS.
//
// The fingerprint is the first 16 bytes of SHA-256, base64url-encoded (22
// characters), over the message's full name and a canonical encoding of it:
//   - the deterministic protobuf wire encoding (fields by number, map
//     entries sorted by key);
//   - without the fields secrets.IsSecretField reports (csi_secret,
//     vg_csi_secret, COSI credentials), at any depth, so that rotating a
//     secret does not turn a retry into a conflict, and no secret can be
//     recovered by guessing it against a stored fingerprint;
//   - with a singular message field that is set but empty (capacity_range
//     {}) treated as absent, since it states no more than leaving it out;
//   - without the top-level fields named in omit (for example "name", which
//     the caller already matched on);
//   - with the elements of CreateVolumeRequest.volume_capabilities,
//     ValidateVolumeCapabilitiesRequest.volume_capabilities,
//     TopologyRequirement.requisite and
//     CreateVolumeGroupSnapshotRequest.source_volume_ids sorted, since
//     those are sets. Every other list keeps its order.
//
// Unknown fields and extensions are left out: an unknown field may be a
// secret whose annotation this binary cannot see.
//
// The encoding is versioned; fingerprints are stable across processes and
// releases of this package unless the version changes (which the release
// notes would say).
func Fingerprint(m proto.Message, omit ...protoreflect.Name) string {
	bp := encodeBufs.Get().(*[]byte)
	b := append((*bp)[:0], fingerprintDomain...)
	if m != nil {
		mr := m.ProtoReflect()
		b = append(b, mr.Descriptor().FullName()...)
		b = append(b, 0)
		b = appendCanonical(b, mr, omit)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= 64<<10 {
		*bp = b
		encodeBufs.Put(bp)
	}
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// fieldPlan is what the encoder needs to know about one field, worked out
// once per message type rather than once per call.
type fieldPlan struct {
	fd        protoreflect.FieldDescriptor
	unordered bool
}

var plans sync.Map // protoreflect.MessageDescriptor -> []fieldPlan

// planFor lists md's non-secret fields in field-number order.
func planFor(md protoreflect.MessageDescriptor) []fieldPlan {
	if p, ok := plans.Load(md); ok {
		return p.([]fieldPlan)
	}
	fields := md.Fields()
	plan := make([]fieldPlan, 0, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		if secrets.IsSecretField(fd) {
			continue
		}
		plan = append(plan, fieldPlan{fd: fd, unordered: unorderedFields[fd.FullName()]})
	}
	slices.SortFunc(plan, func(a, b fieldPlan) int { return cmp.Compare(a.fd.Number(), b.fd.Number()) })
	p, _ := plans.LoadOrStore(md, plan)
	return p.([]fieldPlan)
}

// appendCanonical appends the canonical encoding of m's fields to b,
// skipping the top-level fields named in omit.
func appendCanonical(b []byte, m protoreflect.Message, omit []protoreflect.Name) []byte {
	for _, fp := range planFor(m.Descriptor()) {
		fd := fp.fd
		if !m.Has(fd) || slices.Contains(omit, fd.Name()) {
			continue
		}
		v := m.Get(fd)
		if isEmptyOptionalMessage(fd, v) {
			continue
		}
		switch {
		case fd.IsList():
			b = appendList(b, fd, v.List(), fp.unordered)
		case fd.IsMap():
			b = appendMap(b, fd, v.Map())
		default:
			b = appendField(b, fd, v)
		}
	}
	return b
}

// isEmptyOptionalMessage reports a singular message field that is set but holds nothing, such as
// capacity_range {}. It means the same as the field left out (no bound, no requirement), so both
// must give one fingerprint. A oneof member is different: VolumeCapability's block {} is the whole
// choice, so it counts even when empty.
func isEmptyOptionalMessage(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	if fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap() || fd.ContainingOneof() != nil {
		return false
	}
	empty := true
	v.Message().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
		empty = false
		return false
	})
	return empty
}

func appendList(b []byte, fd protoreflect.FieldDescriptor, l protoreflect.List, unordered bool) []byte {
	n := l.Len()
	if unordered && n > 1 {
		// Encode the elements after b, sort their spans, then write them
		// back in order over the scratch area.
		start := len(b)
		spans := make([][2]int, n)
		for i := range n {
			spans[i][0] = len(b)
			b = appendField(b, fd, l.Get(i))
			spans[i][1] = len(b)
		}
		scratch := b[start:]
		slices.SortFunc(spans, func(x, y [2]int) int {
			return bytes.Compare(b[x[0]:x[1]], b[y[0]:y[1]])
		})
		for _, sp := range spans {
			b = append(b, b[sp[0]:sp[1]]...)
		}
		// Move the sorted copy down over the unsorted one.
		copy(b[start:], b[start+len(scratch):])
		return b[:start+len(scratch)]
	}
	if fd.IsPacked() {
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		start := len(b)
		for i := range n {
			b = appendScalar(b, fd.Kind(), l.Get(i))
		}
		return prefixLength(b, start)
	}
	for i := range n {
		b = appendField(b, fd, l.Get(i))
	}
	return b
}

// prefixLength inserts, at start, the varint length of b[start:]. Encoding a
// submessage in place and inserting its length afterwards avoids a buffer per
// nesting level.
func prefixLength(b []byte, start int) []byte {
	var tmp [binary.MaxVarintLen64]byte
	return slices.Insert(b, start, protowire.AppendVarint(tmp[:0], uint64(len(b)-start))...)
}

type mapEntry struct {
	k protoreflect.MapKey
	v protoreflect.Value
}

func appendMap(b []byte, fd protoreflect.FieldDescriptor, m protoreflect.Map) []byte {
	entries := make([]mapEntry, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		entries = append(entries, mapEntry{k, v})
		return true
	})
	kd, vd := fd.MapKey(), fd.MapValue()
	switch kd.Kind() {
	case protoreflect.StringKind:
		slices.SortFunc(entries, func(x, y mapEntry) int { return cmp.Compare(x.k.String(), y.k.String()) })
	case protoreflect.BoolKind:
		slices.SortFunc(entries, func(x, y mapEntry) int { return cmp.Compare(b2i(x.k.Bool()), b2i(y.k.Bool())) })
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		slices.SortFunc(entries, func(x, y mapEntry) int { return cmp.Compare(x.k.Uint(), y.k.Uint()) })
	default: // the signed integer kinds
		slices.SortFunc(entries, func(x, y mapEntry) int { return cmp.Compare(x.k.Int(), y.k.Int()) })
	}
	for _, e := range entries {
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		start := len(b)
		b = appendField(b, kd, e.k.Value())
		b = appendField(b, vd, e.v)
		b = prefixLength(b, start)
	}
	return b
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// appendField appends one tagged value of fd (one element, for a list).
func appendField(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) []byte {
	switch fd.Kind() {
	case protoreflect.MessageKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
		start := len(b)
		b = appendCanonical(b, v.Message(), nil)
		return prefixLength(b, start)
	case protoreflect.GroupKind:
		b = protowire.AppendTag(b, fd.Number(), protowire.StartGroupType)
		b = appendCanonical(b, v.Message(), nil)
		return protowire.AppendTag(b, fd.Number(), protowire.EndGroupType)
	}
	b = protowire.AppendTag(b, fd.Number(), wireType(fd.Kind()))
	return appendScalar(b, fd.Kind(), v)
}

func wireType(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.StringKind, protoreflect.BytesKind:
		return protowire.BytesType
	default:
		return protowire.VarintType
	}
}

// appendScalar appends an untagged scalar exactly as the wire format does.
func appendScalar(b []byte, k protoreflect.Kind, v protoreflect.Value) []byte {
	switch k {
	case protoreflect.BoolKind:
		return protowire.AppendVarint(b, protowire.EncodeBool(v.Bool()))
	case protoreflect.EnumKind:
		return protowire.AppendVarint(b, uint64(v.Enum()))
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		return protowire.AppendVarint(b, uint64(v.Int()))
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return protowire.AppendVarint(b, protowire.EncodeZigZag(v.Int()))
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind:
		return protowire.AppendVarint(b, v.Uint())
	case protoreflect.Fixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Uint()))
	case protoreflect.Sfixed32Kind:
		return protowire.AppendFixed32(b, uint32(v.Int()))
	case protoreflect.FloatKind:
		return protowire.AppendFixed32(b, math.Float32bits(float32(v.Float())))
	case protoreflect.Fixed64Kind:
		return protowire.AppendFixed64(b, v.Uint())
	case protoreflect.Sfixed64Kind:
		return protowire.AppendFixed64(b, uint64(v.Int()))
	case protoreflect.DoubleKind:
		return protowire.AppendFixed64(b, math.Float64bits(v.Float()))
	case protoreflect.StringKind:
		return protowire.AppendString(b, v.String())
	case protoreflect.BytesKind:
		return protowire.AppendBytes(b, v.Bytes())
	}
	return b
}
