package main

import (
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// Table cells of the COSI commands. The two wire versions describe a bucket with different
// messages (v1alpha1: a Protocol oneof; v1alpha2: ObjectProtocolAndBucketInfo with one field per
// protocol), so the cells are drawn by walking the message rather than by naming its fields: one
// walk serves both versions, and a field a later revision adds shows up without a change here.

// protocolInfo is what a bucket reports for one protocol: "S3" and "endpoint=...,region=...".
type protocolInfo struct{ protocol, info string }

// protocolLabel names a protocol as v1alpha2's enum does (S3, AZURE, GCS), whatever the field or
// map key it came from (v1alpha1's oneof says azureBlob, its credentials map says s3).
func protocolLabel(name string) string {
	if strings.EqualFold(name, "azureBlob") {
		return cosi2.ObjectProtocol_AZURE.String()
	}
	return strings.ToUpper(name)
}

// protocolInfos lists the protocols a bucket-info message reports, in field order.
func protocolInfos(m proto.Message) []protocolInfo {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	var out []protocolInfo
	eachField(m.ProtoReflect(), func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			out = append(out, protocolInfo{protocolLabel(string(fd.Name())), flat(v.Message())})
		}
	})
	return out
}

// eachField calls f for every populated field of m in declaration order (protoreflect's Range
// order is undefined, and a table must not change between runs).
func eachField(m protoreflect.Message, f func(protoreflect.FieldDescriptor, protoreflect.Value)) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); m.Has(fd) {
			f(fd, m.Get(fd))
		}
	}
}

// flat renders a message's populated fields as name=value,... with the proto names. A message
// holding one field (v1alpha2 wraps each enum in one, e.g. S3AddressingStyle) shows as that
// field's value, so the cell reads addressing_style=PATH rather than addressing_style={style=PATH}.
func flat(m protoreflect.Message) string {
	var parts []string
	eachField(m, func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
		parts = append(parts, string(fd.Name())+"="+value(fd, v))
	})
	return strings.Join(parts, ",")
}

func value(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch {
	case fd.IsList() || fd.IsMap():
		return v.String()
	case fd.Enum() != nil:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return v.String()
	case fd.Message() != nil:
		sub := v.Message()
		if sub.Descriptor().Fields().Len() == 1 {
			only := sub.Descriptor().Fields().Get(0)
			return value(only, sub.Get(only))
		}
		return "{" + flat(sub) + "}"
	}
	return v.String()
}

// credentialKeysV2 names, per protocol, the credentials a v1alpha2 grant answered with: the field
// names of what is set, never a value.
func credentialKeysV2(c *cosi2.CredentialInfo) map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	eachField(c.ProtoReflect(), func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
		var names []string
		eachField(v.Message(), func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) {
			names = append(names, string(fd.Name()))
		})
		out[protocolLabel(string(fd.Name()))] = strings.Join(names, ",")
	})
	return out
}

// credentialKeysV1 is credentialKeysV2 for v1alpha1's map of protocol to secrets: the map keys.
func credentialKeysV1(c map[string]*cosi1.CredentialDetails) map[string]string {
	out := map[string]string{}
	for protocol, d := range c {
		out[protocolLabel(protocol)] = strings.Join(slices.Sorted(maps.Keys(d.GetSecrets())), ",")
	}
	return out
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
