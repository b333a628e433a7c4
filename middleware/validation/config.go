package validation

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Config names what a Rules value checks beyond csi.v1. It is data only: every key and list
// entry is a proto full name (Required's values are field or oneof names), looked up once by
// NewRules. Naming a message or field in any table also turns
// checking on for its package, with csi.v1's generic rules (size limits, no negative integers,
// secret maps, path fields).
type Config struct {
	// Packages are proto packages checked with the generic rules alone, e.g. one with no
	// required field.
	Packages []protoreflect.FullName
	// Required lists, per message, the fields that must be set, and the oneofs of which one
	// field must be set.
	Required map[protoreflect.FullName][]protoreflect.Name
	// MaxLen replaces the general 128-byte limit of a string field (of each element, for a
	// repeated one). A field in DNSNames or ObjectIDs keeps that syntax's own limit instead.
	MaxLen map[protoreflect.FullName]int
	// DNSNames are string fields that hold a Kubernetes object name: a DNS subdomain (RFC 1123)
	// of at most 253 characters. That is also their length limit.
	DNSNames []protoreflect.FullName
	// ObjectIDs are IDs with the COSI sidecar's syntax: string fields that hold an ID the peer
	// stores as given, checked by
	// COSIObjectIDProblem: at most 2048 characters of [A-Za-z0-9._/-]. That is also their
	// length limit.
	ObjectIDs []protoreflect.FullName
	// KnownEnums are enum fields that must hold a value their enum declares.
	KnownEnums []protoreflect.FullName
	// PluginNames are string fields that hold the plugin's name, checked by PluginName.
	PluginNames []protoreflect.FullName
}

// CSIRules returns the rules of csi.v1 alone: the middleware's own contract, built on first use
// and shared. The package-level functions and interceptors check with it.
func CSIRules() *Rules { return csiDefault() }

var csiDefault = sync.OnceValue(func() *Rules {
	r := csiRules()
	r.compileAll()
	return r
})

// NewRules compiles csi.v1's rules and those cfg names, once; checking with the result does no
// lookup by name. It fails when cfg names a message, field or package the linked protos do not
// declare, or a field of the wrong kind for its table.
func NewRules(cfg Config) (*Rules, error) {
	r := csiRules()
	for _, pkg := range cfg.Packages {
		if protoregistry.GlobalFiles.NumFilesByPackage(pkg) == 0 {
			return nil, fmt.Errorf("validation: package %s: no file of it is linked", pkg)
		}
		r.packages[pkg] = true
	}
	for msg, fields := range cfg.Required {
		md, err := lookupMessage(msg)
		if err != nil {
			return nil, fmt.Errorf("validation: required fields: %w", err)
		}
		for _, f := range fields {
			if md.Fields().ByName(f) == nil && md.Oneofs().ByName(f) == nil {
				return nil, fmt.Errorf("validation: required fields: %s has no field or oneof %q", msg, f)
			}
		}
		r.packages[md.ParentFile().Package()] = true
		addRequired(r.required, msg, fields...)
	}
	for name, n := range cfg.MaxLen {
		if err := r.addField("length limits", name, protoreflect.StringKind, true); err != nil {
			return nil, err
		}
		if n <= 0 {
			return nil, fmt.Errorf("validation: length limits: %s: %d is not a limit", name, n)
		}
		r.maxLen[name] = n
	}
	for _, t := range []struct {
		what   string
		names  []protoreflect.FullName
		kind   protoreflect.Kind
		set    map[protoreflect.FullName]bool
		maxLen int
	}{
		{"DNS names", cfg.DNSNames, protoreflect.StringKind, r.dnsName, maxCOSIName},
		{"object IDs", cfg.ObjectIDs, protoreflect.StringKind, r.objectID, maxCOSIObjectID},
		{"known enums", cfg.KnownEnums, protoreflect.EnumKind, r.knownEnum, 0},
		{"plugin names", cfg.PluginNames, protoreflect.StringKind, r.pluginName, 0},
	} {
		for _, name := range t.names {
			if err := r.addField(t.what, name, t.kind, false); err != nil {
				return nil, err
			}
			t.set[name] = true
			if t.maxLen != 0 {
				r.maxLen[name] = t.maxLen // the syntax's own limit, whatever MaxLen says
			}
		}
	}
	r.compileAll()
	return r, nil
}

// addField checks that name is a singular field of kind k (or a repeated one, with list) and
// turns checking on for its package.
func (r *Rules) addField(what string, name protoreflect.FullName, k protoreflect.Kind, list bool) error {
	md, err := lookupMessage(name.Parent())
	if err != nil {
		return fmt.Errorf("validation: %s: field %s: %w", what, name, err)
	}
	fd := md.Fields().ByName(name.Name())
	if fd == nil {
		return fmt.Errorf("validation: %s: %s has no field %q", what, md.FullName(), name.Name())
	}
	if fd.Kind() != k || fd.IsMap() || (fd.IsList() && !list) {
		want := "a single " + k.String()
		if list {
			want = "a " + k.String() + " or a list of them"
		}
		return fmt.Errorf("validation: %s: field %s is not %s", what, name, want)
	}
	r.packages[md.ParentFile().Package()] = true
	return nil
}

// lookupMessage looks up a message descriptor in the global registry.
func lookupMessage(name protoreflect.FullName) (protoreflect.MessageDescriptor, error) {
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		return nil, fmt.Errorf("message %s: %w", name, err)
	}
	md, ok := d.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a message", name)
	}
	return md, nil
}
