package validation

import (
	"maps"
	"reflect"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	secretfields "github.com/csikit/csikit/secrets"
)

// A plan is the compiled list of checks for one message type. Plans are built once, when a Rules
// value is built, so that a call does no lookups by name.

type fieldKind uint8

const (
	kString fieldKind = iota + 1
	kBytes
	kEnum
	kSigned  // int32, int64, sint*, sfixed*
	kScalar  // bool, unsigned, float: nothing to check
	kMessage // singular message
	kStringList
	kMessageList
	kOtherList
	kStringMap
	kOtherMap
)

type ruleFlags uint16

const (
	fRequired ruleFlags = 1 << iota
	fAbsPath
	fName
	fSecret
	fNonNegative
	fPositive
	fOutOfRange
	fKnownEnum
	fPluginName
	fTopology
	fWrapperNonNegative
	fEmptyIsAbsent
	fDNSName  // a DNS subdomain, as Kubernetes object names are
	fObjectID // a bucket or account ID (see COSIObjectIDProblem)
)

type special uint8

const (
	specialNone special = iota
	specialCapacityRange
	specialTopologyRequirement
)

type fieldRule struct {
	fd      protoreflect.FieldDescriptor
	seg     string // "." + field name, ready to prefix a path
	kind    fieldKind
	flags   ruleFlags
	maxLen  int   // per string or per element; 0: no limit
	total   int   // limit of a map or of a totalled repeated string; 0: no limit
	sub     *plan // plan of the message, element or map value type; nil: not checked
	goIndex int   // index of the Go struct field, for allocation-free list and map access
}

type oneofRule struct {
	od      protoreflect.OneofDescriptor
	seg     string
	choices string // "block, mount"
}

type plan struct {
	md      protoreflect.MessageDescriptor
	name    string       // short message name, the root of a path
	goType  reflect.Type // *T of the generated Go type when every list/map field has a goIndex
	fields  []fieldRule
	oneofs  []oneofRule
	special special
	a, b    int // indexes into fields used by special (CapacityRange, TopologyRequirement)
}

// Rules is a compiled set of checks: csi.v1's rules, and those of the packages and fields a
// Config names. It is immutable once built and safe for concurrent use. NewRules builds one;
// CSIRules is csi.v1 alone. A nil *Rules, like the zero Rules, checks as CSIRules does.
type Rules struct {
	packages   map[protoreflect.FullName]bool
	required   map[protoreflect.FullName]map[protoreflect.Name]bool
	maxLen     map[protoreflect.FullName]int
	knownEnum  map[protoreflect.FullName]bool
	pluginName map[protoreflect.FullName]bool
	dnsName    map[protoreflect.FullName]bool
	objectID   map[protoreflect.FullName]bool
	plans      map[protoreflect.MessageDescriptor]*plan
	dynamic    sync.Map // protoreflect.MessageDescriptor -> *plan, for descriptors not in the global registry
}

// csiRules builds the rules of csi.proto: the fields its comments require, and the exceptions
// the spec's prose makes. NewRules adds a Config's tables to them before compiling.
func csiRules() *Rules {
	req := make(map[protoreflect.FullName]map[protoreflect.Name]bool)
	for msg, fields := range requiredGenerated {
		addRequired(req, msg, fields...)
	}
	for _, e := range requiredExceptions {
		switch e.kind {
		case alsoRequired:
			addRequired(req, e.msg, e.field)
		case notRequired:
			if s := req[e.msg]; s != nil {
				delete(s, e.field)
			}
		case emptyIsAbsent:
			// compileField reads emptyIsAbsentFields; nothing changes in the table.
		}
	}
	return &Rules{
		packages:   map[protoreflect.FullName]bool{csi.File_csi_proto.Package(): true},
		required:   req,
		maxLen:     maps.Clone(csiMaxLenOverrides),
		knownEnum:  maps.Clone(csiKnownEnumFields),
		pluginName: maps.Clone(csiPluginNameFields),
		dnsName:    map[protoreflect.FullName]bool{},
		objectID:   map[protoreflect.FullName]bool{},
	}
}

func addRequired(req map[protoreflect.FullName]map[protoreflect.Name]bool, msg protoreflect.FullName, fields ...protoreflect.Name) {
	s := req[msg]
	if s == nil {
		s = make(map[protoreflect.Name]bool)
		req[msg] = s
	}
	for _, f := range fields {
		s[f] = true
	}
}

func (r *Rules) compileAll() {
	r.plans = make(map[protoreflect.MessageDescriptor]*plan)
	for pkg := range r.packages {
		protoregistry.GlobalFiles.RangeFilesByPackage(pkg, func(fd protoreflect.FileDescriptor) bool {
			compileMessages(r, r.plans, fd.Messages())
			return true
		})
	}
}

func compileMessages(r *Rules, memo map[protoreflect.MessageDescriptor]*plan, mds protoreflect.MessageDescriptors) {
	for i := 0; i < mds.Len(); i++ {
		md := mds.Get(i)
		if md.IsMapEntry() {
			continue
		}
		r.compile(memo, md)
		compileMessages(r, memo, md.Messages())
	}
}

// planFor returns the plan of a message, or nil when its package is not checked.
func (r *Rules) planFor(md protoreflect.MessageDescriptor) *plan {
	if p, ok := r.plans[md]; ok {
		return p
	}
	if f := md.ParentFile(); f == nil || !r.packages[f.Package()] {
		return nil
	}
	// A descriptor built at run time (dynamicpb, protodesc) for a checked package.
	if p, ok := r.dynamic.Load(md); ok {
		return p.(*plan)
	}
	p := r.compile(make(map[protoreflect.MessageDescriptor]*plan), md)
	r.dynamic.Store(md, p)
	return p
}

func (r *Rules) compile(memo map[protoreflect.MessageDescriptor]*plan, md protoreflect.MessageDescriptor) *plan {
	if p, ok := memo[md]; ok {
		return p
	}
	if f := md.ParentFile(); f == nil || !r.packages[f.Package()] {
		memo[md] = nil
		return nil
	}
	p := &plan{md: md, name: string(md.Name()), a: -1, b: -1}
	memo[md] = p // before the fields: messages may be recursive
	req := r.required[md.FullName()]
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		rule, keep := r.compileField(memo, fd, req[fd.Name()])
		if keep {
			p.fields = append(p.fields, rule)
		}
	}
	oneofs := md.Oneofs()
	for i := 0; i < oneofs.Len(); i++ {
		od := oneofs.Get(i)
		if od.IsSynthetic() || !req[od.Name()] {
			continue
		}
		var names []string
		for j := 0; j < od.Fields().Len(); j++ {
			names = append(names, string(od.Fields().Get(j).Name()))
		}
		p.oneofs = append(p.oneofs, oneofRule{od: od, seg: "." + string(od.Name()), choices: strings.Join(names, ", ")})
	}
	p.special = messageRules[md.FullName()]
	switch p.special {
	case specialCapacityRange:
		p.a, p.b = p.index("required_bytes"), p.index("limit_bytes")
	case specialTopologyRequirement:
		p.a, p.b = p.index("requisite"), p.index("preferred")
	}
	if p.special != specialNone && (p.a < 0 || p.b < 0) {
		p.special = specialNone // a future spec renamed the fields; the field rules still apply
	}
	p.goType = goTypeOf(md, p.fields)
	return p
}

func (p *plan) index(name protoreflect.Name) int {
	for i := range p.fields {
		if p.fields[i].fd.Name() == name {
			return i
		}
	}
	return -1
}

func (r *Rules) compileField(memo map[protoreflect.MessageDescriptor]*plan, fd protoreflect.FieldDescriptor, required bool) (fieldRule, bool) {
	rule := fieldRule{fd: fd, seg: "." + string(fd.Name())}
	if required {
		rule.flags |= fRequired
	}
	switch {
	case fd.IsMap():
		r.compileMap(memo, &rule)
	case fd.IsList():
		r.compileList(memo, &rule)
	default:
		r.compileSingular(memo, &rule)
	}
	keep := rule.flags != 0 || rule.sub != nil || rule.maxLen != 0 || rule.total != 0
	return rule, keep
}

// compileMap fills the rule of a map field: a string-to-string map is bounded as a whole.
func (r *Rules) compileMap(memo map[protoreflect.MessageDescriptor]*plan, rule *fieldRule) {
	fd := rule.fd
	k, v := fd.MapKey(), fd.MapValue()
	if k.Kind() != protoreflect.StringKind || v.Kind() != protoreflect.StringKind {
		rule.kind = kOtherMap
		if v.Message() != nil {
			rule.sub = r.compile(memo, v.Message())
		}
		return
	}
	rule.kind = kStringMap
	rule.total = maxMap
	if isSecret(fd) {
		rule.flags |= fSecret
	}
	if topologySegmentFields[fd.FullName()] {
		rule.flags |= fTopology
	}
}

// compileList fills the rule of a repeated field.
func (r *Rules) compileList(memo map[protoreflect.MessageDescriptor]*plan, rule *fieldRule) {
	fd := rule.fd
	full := fd.FullName()
	switch fd.Kind() {
	case protoreflect.StringKind:
		rule.kind = kStringList
		if n, ok := totalLimitFields[full]; ok {
			rule.total = n
		} else if n, ok := r.maxLen[full]; ok {
			rule.maxLen = n
		} else {
			rule.maxLen = maxString
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		rule.kind = kMessageList
		rule.sub = r.compile(memo, fd.Message())
	default:
		rule.kind = kOtherList
	}
}

// compileSingular fills the rule of a field that is neither a map nor a list.
func (r *Rules) compileSingular(memo map[protoreflect.MessageDescriptor]*plan, rule *fieldRule) {
	fd := rule.fd
	full := fd.FullName()
	switch fd.Kind() {
	case protoreflect.StringKind:
		r.compileString(rule)
	case protoreflect.BytesKind:
		rule.kind = kBytes
	case protoreflect.EnumKind:
		rule.kind = kEnum
		if r.knownEnum[full] {
			rule.flags |= fKnownEnum
		}
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind,
		protoreflect.Sint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
		rule.kind = kSigned
		rule.flags &^= fRequired // zero is a legal value: nothing to check
		rule.flags |= fNonNegative
		if positiveFields[full] {
			rule.flags |= fPositive
		}
		if outOfRangeFields[full] {
			rule.flags |= fOutOfRange
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		rule.kind = kMessage
		if emptyIsAbsentFields[full] {
			rule.flags |= fEmptyIsAbsent
		}
		switch fd.Message().FullName() {
		case "google.protobuf.Int64Value", "google.protobuf.Int32Value":
			rule.flags |= fWrapperNonNegative
		}
		rule.sub = r.compile(memo, fd.Message())
	default:
		rule.kind = kScalar
		rule.flags &^= fRequired // bool, unsigned, float: zero is a legal value
	}
}

// compileString fills the rule of a singular string field: its length limit and what its value
// must look like (a path, a name, a DNS name or object ID, the plugin's name).
func (r *Rules) compileString(rule *fieldRule) {
	fd := rule.fd
	full := fd.FullName()
	rule.kind = kString
	rule.maxLen = maxString
	if n, ok := r.maxLen[full]; ok {
		rule.maxLen = n
	}
	if isPathField(fd) {
		rule.maxLen = maxPath
		if !relativeIsNotFound[full] {
			rule.flags |= fAbsPath
		}
	}
	for _, f := range []struct {
		set  map[protoreflect.FullName]bool
		flag ruleFlags
	}{{nameFields, fName}, {r.dnsName, fDNSName}, {r.objectID, fObjectID}, {r.pluginName, fPluginName}} {
		if f.set[full] {
			rule.flags |= f.flag
		}
	}
}

// isSecret reports a secret field as the secrets package, the one owner of "secret", defines it:
// csi_secret, vg_csi_secret, cosi_secret and the COSI credential types.
func isSecret(fd protoreflect.FieldDescriptor) bool { return secretfields.IsSecretField(fd) }

// goTypeOf finds the generated Go type of md and the struct field of every list and map rule,
// so that the walk reads them without the allocations of protoreflect's list and map views.
// It returns nil (walk through protoreflect only) when the message has no such field, or when
// anything does not look as expected.
func goTypeOf(md protoreflect.MessageDescriptor, rules []fieldRule) reflect.Type {
	needed := false
	for i := range rules {
		switch rules[i].kind {
		case kStringList, kStringMap:
			needed = true
		case kMessageList:
			needed = needed || rules[i].sub != nil
		}
	}
	if !needed {
		return nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil || mt.Descriptor() != md {
		return nil
	}
	t := reflect.TypeOf(mt.Zero().Interface())
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	st := t.Elem()
	byName := make(map[string][]int)
	for i := 0; i < st.NumField(); i++ {
		sf := st.Field(i)
		for _, part := range strings.Split(sf.Tag.Get("protobuf"), ",") {
			if name, ok := strings.CutPrefix(part, "name="); ok && sf.IsExported() {
				byName[name] = sf.Index
			}
		}
	}
	for i := range rules {
		r := &rules[i]
		var want reflect.Type
		switch r.kind {
		case kStringList:
			want = reflect.TypeOf([]string(nil))
		case kStringMap:
			want = reflect.TypeOf(map[string]string(nil))
		case kMessageList:
			if r.sub == nil {
				continue // elements are not checked
			}
		default:
			continue
		}
		idx, ok := byName[string(r.fd.Name())]
		if !ok || len(idx) != 1 {
			return nil
		}
		ft := st.Field(idx[0]).Type
		if want != nil && ft != want {
			return nil
		}
		if r.kind == kMessageList && (ft.Kind() != reflect.Slice || ft.Elem().Kind() != reflect.Pointer ||
			!ft.Elem().Implements(reflect.TypeOf((*proto.Message)(nil)).Elem())) {
			return nil
		}
		r.goIndex = idx[0]
	}
	return t
}
