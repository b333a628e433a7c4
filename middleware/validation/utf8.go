package validation

import (
	"strconv"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxWireDepth bounds the nesting InvalidUTF8 follows; CSI messages nest a handful of levels.
const maxWireDepth = 64

// InvalidUTF8 finds the first string field of the encoded message wire (of type md) whose value
// is not valid UTF-8, and returns an INVALID_ARGUMENT status naming its path the way Request
// does:
//
//	CreateVolume: volume_capabilities[0].mount.mount_flags[1]: must be valid UTF-8
//
// It returns nil when it finds none, or when wire is malformed before one is found.
//
// It exists for the decode step, which runs before any interceptor: protobuf-go refuses such a
// message with "string field contains invalid UTF-8", naming no field, and gRPC turns that into
// INTERNAL. A server codec that gets that error can call InvalidUTF8 on the same bytes to answer
// the caller's mistake as the spec wants it (INVALID_ARGUMENT, naming the field). Values are
// never included; map keys are, quoted, as in Request's messages.
func InvalidUTF8(md protoreflect.MessageDescriptor, wire []byte) error {
	if md == nil {
		return nil
	}
	if v := invalidUTF8(md, wire, 0); v != nil {
		return status.Error(codes.InvalidArgument, v.message(string(md.Name())))
	}
	return nil
}

func invalidUTF8(md protoreflect.MessageDescriptor, b []byte, depth int) *violation {
	if depth > maxWireDepth {
		return nil
	}
	// seen counts earlier occurrences of each repeated field, which is the element's index.
	var seen map[protowire.Number]int
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		idx := -1
		if fd.IsList() {
			if seen == nil {
				seen = make(map[protowire.Number]int)
			}
			idx = seen[num]
			seen[num]++
		}
		var bad *violation
		switch {
		case fd.IsMap():
			bad = invalidUTF8Entry(fd, v, depth)
		case fd.Kind() == protoreflect.StringKind:
			if !utf8.Valid(v) {
				bad = newViolation("must be valid UTF-8")
			}
		case fd.Kind() == protoreflect.MessageKind:
			bad = invalidUTF8(fd.Message(), v, depth+1)
		}
		if bad != nil {
			if idx >= 0 {
				bad.atIndex(idx)
			}
			return bad.at("." + string(fd.Name()))
		}
	}
	return nil
}

// invalidUTF8Entry checks one map entry (key = 1, value = 2) and names a bad one by its key, as
// Request does: a position in the wire order would mean nothing to the reader. Like protobuf-go,
// it judges what it has read when the entry turns out malformed, so that an invalid string
// followed by garbage is still reported as invalid UTF-8.
func invalidUTF8Entry(fd protoreflect.FieldDescriptor, b []byte, depth int) *violation {
	kd, vd := fd.MapKey(), fd.MapValue()
	var key []byte
	var keyNum uint64
	hasKeyNum := false
	var bad *violation // about the first value that is bad; a value may repeat, each one counts
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 2):
			var v []byte
			v, n = protowire.ConsumeBytes(b)
			if n < 0 {
				break // out of the switch; the check below ends the loop
			}
			if num == 1 {
				key = v
				if kd.Kind() == protoreflect.StringKind && !utf8.Valid(key) {
					return newViolation("map key must be valid UTF-8").atKey(string(key))
				}
			} else if bad == nil {
				bad = invalidUTF8Value(vd, v, depth)
			}
		case typ == protowire.VarintType && num == 1:
			keyNum, n = protowire.ConsumeVarint(b)
			hasKeyNum = n >= 0
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			break
		}
		b = b[n:]
	}
	switch {
	case bad == nil:
		return nil
	case kd.Kind() == protoreflect.StringKind:
		return bad.atKey(string(key))
	case hasKeyNum:
		return bad.at("[" + varintKeyText(kd.Kind(), keyNum) + "]")
	default:
		return bad.at("[?]") // a fixed-width key: no package we check has one
	}
}

// invalidUTF8Value checks one occurrence of a map value.
func invalidUTF8Value(vd protoreflect.FieldDescriptor, v []byte, depth int) *violation {
	switch vd.Kind() {
	case protoreflect.StringKind:
		if !utf8.Valid(v) {
			return newViolation("must be valid UTF-8")
		}
	case protoreflect.MessageKind:
		return invalidUTF8(vd.Message(), v, depth+1)
	}
	return nil
}

// varintKeyText renders a non-string map key. CSI has none; packages a Config names may.
func varintKeyText(k protoreflect.Kind, x uint64) string {
	switch k {
	case protoreflect.BoolKind:
		return strconv.FormatBool(x != 0)
	case protoreflect.Int32Kind, protoreflect.Int64Kind:
		return strconv.FormatInt(int64(x), 10)
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return strconv.FormatInt(protowire.DecodeZigZag(x), 10)
	}
	return strconv.FormatUint(x, 10)
}
