package validation

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The walk follows a plan through one message. On the success path it allocates nothing and
// formats nothing: a violation, and the path it names, is only built once something is wrong,
// from the innermost field outwards as the recursion unwinds.

type violation struct {
	path    []string // path segments, innermost first
	problem string
	code    codes.Code
}

const problemMissing = "required field is missing"

func newViolation(problem string) *violation {
	return &violation{problem: problem, code: codes.InvalidArgument}
}

func (v *violation) at(seg string) *violation {
	v.path = append(v.path, seg)
	return v
}

func (v *violation) atIndex(i int) *violation { return v.at("[" + strconv.Itoa(i) + "]") }

// atKey names a map key. Keys may be named (values never are); a long key is cut so that a
// message stays readable.
func (v *violation) atKey(k string) *violation {
	if len(k) > maxKeyInError {
		return v.at("[" + strconv.Quote(k[:maxKeyInError]) + "...]")
	}
	return v.at("[" + strconv.Quote(k) + "]")
}

// message is the violation in the form every message of csikit takes, the RPC first, then the
// field, then the problem:
//
//	CreateVolume: volume_capabilities[1].access_mode.mode: required field is missing
//
// root is the message type's name. For a request (FooRequest) the RPC is Foo and the path is the
// field's path within the request; for any other message the path starts with the type's name.
func (v *violation) message(root string) string {
	var b strings.Builder
	if rpc, ok := strings.CutSuffix(root, "Request"); ok && rpc != "" {
		b.WriteString(rpc)
		b.WriteString(": ")
		if n := len(v.path); n > 0 {
			// The first segment is ".field"; without the type's name before it, it loses its dot.
			b.WriteString(strings.TrimPrefix(v.path[n-1], "."))
			for i := n - 2; i >= 0; i-- {
				b.WriteString(v.path[i])
			}
			b.WriteString(": ")
		}
	} else {
		b.WriteString(root)
		for i := len(v.path) - 1; i >= 0; i-- {
			b.WriteString(v.path[i])
		}
		b.WriteString(": ")
	}
	b.WriteString(v.problem)
	return b.String()
}

// responseMessage is a violation of a response, a plugin bug, named after its RPC when the type
// is a response (FooResponse):
//
//	CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_id: 300 bytes, the limit is 128
func (v *violation) responseMessage(root string) string {
	msg := "plugin bug: " + v.message(root)
	if rpc, ok := strings.CutSuffix(root, "Response"); ok && rpc != "" {
		return rpc + ": " + msg
	}
	return msg
}

func tooLong(n, limit int) *violation {
	return newViolation(fmt.Sprintf("%d bytes, the limit is %d", n, limit))
}

func tooLongTotal(n, limit int) *violation {
	return newViolation(fmt.Sprintf("%d bytes in total, the limit is %d", n, limit))
}

// goStruct returns the generated Go struct behind m when the plan has a fast accessor for it.
func goStruct(m protoreflect.Message, p *plan) (reflect.Value, bool) {
	if p.goType == nil || !m.IsValid() {
		return reflect.Value{}, false
	}
	i := m.Interface()
	if reflect.TypeOf(i) != p.goType {
		return reflect.Value{}, false // same descriptor, other implementation (dynamicpb)
	}
	return reflect.ValueOf(i).Elem(), true
}

func checkMessage(m protoreflect.Message, p *plan) *violation {
	sv, fast := goStruct(m, p)
	for i := range p.fields {
		if v := checkField(m, sv, fast, &p.fields[i]); v != nil {
			return v
		}
	}
	for i := range p.oneofs {
		o := &p.oneofs[i]
		if m.WhichOneof(o.od) == nil {
			return newViolation(problemMissing + " (set one of " + o.choices + ")").at(o.seg)
		}
	}
	switch p.special {
	case specialCapacityRange:
		return checkCapacityRange(m, p)
	case specialTopologyRequirement:
		return checkTopologyRequirement(m, sv, fast, p)
	}
	return nil
}

func checkField(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) *violation {
	switch r.kind {
	case kMessage:
		return checkSubMessage(m, sv, fast, r)
	case kMessageList:
		return checkSubList(m, sv, fast, r)
	}
	return checkLeaf(m, sv, fast, r)
}

func checkSubMessage(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) *violation {
	var sub protoreflect.Message
	if m.Has(r.fd) {
		sub = m.Get(r.fd).Message()
		if r.flags&fEmptyIsAbsent != 0 && isEmptyMessage(sub) {
			sub = nil // a CO's harmless deviation, see exceptions.go
		}
	}
	if sub == nil {
		if r.flags&fRequired != 0 {
			return newViolation(problemMissing).at(r.seg)
		}
		return nil
	}
	if r.flags&fWrapperNonNegative != 0 {
		if fd := sub.Descriptor().Fields().ByNumber(1); fd != nil && sub.Get(fd).Int() < 0 {
			return newViolation("must not be negative").at(r.seg)
		}
	}
	if r.sub != nil {
		if v := checkMessage(sub, r.sub); v != nil {
			return v.at(r.seg)
		}
	}
	return nil
}

// isEmptyMessage reports whether no known field of m is set. Unknown fields (from a newer spec)
// do not count: the plugin cannot act on them either.
func isEmptyMessage(m protoreflect.Message) bool {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if m.Has(fields.Get(i)) {
			return false
		}
	}
	return true
}

func checkSubList(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) *violation {
	l := messageList(m, sv, fast, r)
	if l.n == 0 {
		if r.flags&fRequired != 0 {
			return newViolation(problemMissing).at(r.seg)
		}
		return nil
	}
	if r.sub != nil {
		for i := 0; i < l.n; i++ {
			if v := checkMessage(l.at(i), r.sub); v != nil {
				return v.atIndex(i).at(r.seg)
			}
		}
	}
	return nil
}

// checkLeaf holds the checks of scalar, string and map fields. It is kept out of line so that the
// recursion through checkMessage, checkSubMessage and checkSubList stays small: a big recursive
// frame made every call's fresh goroutine stack grow, which cost more than the checks themselves.
//
//go:noinline
func checkLeaf(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) *violation {
	switch r.kind {
	case kString:
		s := m.Get(r.fd).String()
		if s == "" {
			if r.flags&fRequired != 0 {
				return newViolation(problemMissing).at(r.seg)
			}
			return nil
		}
		if len(s) > r.maxLen {
			return tooLong(len(s), r.maxLen).at(r.seg)
		}
		if r.flags&fAbsPath != 0 && !isAbsPath(s) {
			return newViolation("must be an absolute path").at(r.seg)
		}
		if r.flags&fName != 0 {
			if p := nameProblem(s); p != "" {
				return newViolation(p).at(r.seg)
			}
		}
		if r.flags&fPluginName != 0 {
			if p := pluginNameProblem(s); p != "" {
				return newViolation(p).at(r.seg)
			}
		}
		if r.flags&(fDNSName|fObjectID) != 0 {
			if v := checkDNSNameOrID(s, r.flags); v != nil {
				return v.at(r.seg)
			}
		}
	case kBytes:
		if r.flags&fRequired != 0 && len(m.Get(r.fd).Bytes()) == 0 {
			return newViolation(problemMissing).at(r.seg)
		}
	case kEnum:
		n := m.Get(r.fd).Enum()
		if n == 0 {
			if r.flags&fRequired != 0 {
				return newViolation(problemMissing).at(r.seg)
			}
			return nil
		}
		if r.flags&fKnownEnum != 0 && r.fd.Enum().Values().ByNumber(n) == nil {
			return newViolation("unknown enum value").at(r.seg)
		}
	case kSigned:
		n := m.Get(r.fd).Int()
		if n < 0 && r.flags&fNonNegative != 0 {
			v := newViolation("must not be negative")
			if r.flags&fOutOfRange != 0 {
				v.code = codes.OutOfRange
			}
			return v.at(r.seg)
		}
		if n <= 0 && r.flags&fPositive != 0 {
			return newViolation("must be greater than zero").at(r.seg)
		}
	case kStringList:
		list := stringList(m, sv, fast, r)
		if list.n == 0 {
			if r.flags&fRequired != 0 {
				return newViolation(problemMissing).at(r.seg)
			}
			return nil
		}
		if v := stringListSizes(list, r); v != nil {
			return v.at(r.seg)
		}
	case kOtherList:
		if r.flags&fRequired != 0 && !m.Has(r.fd) {
			return newViolation(problemMissing).at(r.seg)
		}
	case kStringMap:
		mp := stringMap(m, sv, fast, r)
		if len(mp) == 0 {
			if r.flags&fRequired != 0 {
				return newViolation(problemMissing).at(r.seg)
			}
			return nil
		}
		if v := checkStringMap(mp, r); v != nil {
			return v.at(r.seg)
		}
	case kOtherMap:
		if !m.Has(r.fd) {
			if r.flags&fRequired != 0 {
				return newViolation(problemMissing).at(r.seg)
			}
			return nil
		}
		if r.sub != nil {
			if v := checkMessageMap(m.Get(r.fd).Map(), r.sub, checkMessage); v != nil {
				return v.at(r.seg)
			}
		}
	}
	return nil
}

// stringListSizes checks a repeated string field's total and per-element limits.
func stringListSizes(list strList, r *fieldRule) *violation {
	if r.total > 0 {
		n := 0
		for i := 0; i < list.n; i++ {
			n += len(list.at(i))
		}
		if n > r.total {
			return tooLongTotal(n, r.total)
		}
	}
	if r.maxLen > 0 {
		for i := 0; i < list.n; i++ {
			if s := list.at(i); len(s) > r.maxLen {
				return tooLong(len(s), r.maxLen).atIndex(i)
			}
		}
	}
	return nil
}

// mapSize is what the spec's map limit counts: the bytes of every key and value.
func mapSize(mp map[string]string) int {
	n := 0
	for k, v := range mp {
		n += len(k) + len(v)
	}
	return n
}

// checkSizes is checkMessage restricted to the size limits: string lengths, map totals and
// totalled lists, through every nested message. ResponseSizes runs it on every response, so it
// reads fields the same allocation-free way and checks nothing else.
func checkSizes(m protoreflect.Message, p *plan) *violation {
	sv, fast := goStruct(m, p)
	for i := range p.fields {
		r := &p.fields[i]
		var v *violation
		switch r.kind {
		case kString:
			if s := m.Get(r.fd).String(); r.maxLen > 0 && len(s) > r.maxLen {
				v = tooLong(len(s), r.maxLen)
			}
		case kStringList:
			v = stringListSizes(stringList(m, sv, fast, r), r)
		case kStringMap:
			if r.total > 0 {
				if n := mapSize(stringMap(m, sv, fast, r)); n > r.total {
					v = tooLongTotal(n, r.total)
				}
			}
		case kMessage:
			if r.sub != nil && m.Has(r.fd) {
				v = checkSizes(m.Get(r.fd).Message(), r.sub)
			}
		case kMessageList:
			if r.sub != nil {
				l := messageList(m, sv, fast, r)
				for j := 0; j < l.n && v == nil; j++ {
					if v = checkSizes(l.at(j), r.sub); v != nil {
						v = v.atIndex(j)
					}
				}
			}
		case kOtherMap:
			if r.sub != nil && m.Has(r.fd) {
				v = checkMessageMap(m.Get(r.fd).Map(), r.sub, checkSizes)
			}
		}
		if v != nil {
			return v.at(r.seg)
		}
	}
	return nil
}

// strList is a repeated string field, read from the Go slice when possible (no allocation).
type strList struct {
	n  int
	rv reflect.Value     // the Go []string, fast path
	pl protoreflect.List // otherwise
}

func stringList(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) strList {
	if fast {
		rv := sv.Field(r.goIndex)
		return strList{n: rv.Len(), rv: rv}
	}
	if !m.Has(r.fd) {
		return strList{}
	}
	pl := m.Get(r.fd).List()
	return strList{n: pl.Len(), pl: pl}
}

func (l strList) at(i int) string {
	if l.pl != nil {
		return l.pl.Get(i).String()
	}
	return l.rv.Index(i).String()
}

// stringMap reads a map<string, string> field; allocation-free for generated messages.
func stringMap(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) map[string]string {
	if fast {
		// A map is pointer-shaped: Interface does not allocate.
		return sv.Field(r.goIndex).Interface().(map[string]string)
	}
	if !m.Has(r.fd) {
		return nil
	}
	pm := m.Get(r.fd).Map()
	out := make(map[string]string, pm.Len())
	pm.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		out[k.String()] = v.String()
		return true
	})
	return out
}

// msgList is a repeated message field, read from the Go slice when possible.
type msgList struct {
	n  int
	rv reflect.Value     // the Go slice, fast path
	pl protoreflect.List // otherwise
}

func messageList(m protoreflect.Message, sv reflect.Value, fast bool, r *fieldRule) msgList {
	if fast && r.sub != nil {
		rv := sv.Field(r.goIndex)
		return msgList{n: rv.Len(), rv: rv}
	}
	if !m.Has(r.fd) {
		return msgList{}
	}
	pl := m.Get(r.fd).List()
	return msgList{n: pl.Len(), pl: pl}
}

func (l msgList) at(i int) protoreflect.Message {
	if l.pl != nil {
		return l.pl.Get(i).Message()
	}
	return l.rv.Index(i).Interface().(proto.Message).ProtoReflect()
}

func checkStringMap(mp map[string]string, r *fieldRule) *violation {
	if r.total > 0 {
		if n := mapSize(mp); n > r.total {
			return tooLongTotal(n, r.total)
		}
	}
	if r.flags&(fSecret|fTopology) == 0 {
		return nil
	}
	// Report the smallest bad key, so that the message does not depend on map order.
	var badKey, problem string
	for k, v := range mp {
		p := entryProblem(k, v, r.flags)
		if p != "" && (problem == "" || k < badKey) {
			badKey, problem = k, p
		}
	}
	if problem != "" {
		return newViolation(problem).atKey(badKey)
	}
	if r.flags&fTopology != 0 && len(mp) > 1 {
		if k, ok := duplicateKey(mp); ok {
			return newViolation("duplicate topology key: keys are case-insensitive").atKey(k)
		}
	}
	return nil
}

func entryProblem(k, v string, flags ruleFlags) string {
	if flags&fSecret != 0 {
		if !isSecretKey(k) {
			return "secret key must be non-empty and contain only [A-Za-z0-9._-]"
		}
		if !utf8.ValidString(v) {
			return "secret value must be valid UTF-8"
		}
	}
	if flags&fTopology != 0 {
		if p := topologyKeyProblem(k); p != "" {
			return p
		}
		if p := topologyValueProblem(v); p != "" {
			return p
		}
	}
	return ""
}

// duplicateKey finds keys of a Topology that differ only in case. The keys have passed
// topologyKeyProblem, so they are ASCII. It returns the smallest key that has a twin.
func duplicateKey(mp map[string]string) (string, bool) {
	upper := false
	for k := range mp {
		for i := 0; i < len(k) && !upper; i++ {
			upper = isUpper(k[i])
		}
		if upper {
			break
		}
	}
	if !upper {
		return "", false // distinct lower-case keys cannot collide
	}
	var buf [16]string
	keys := buf[:0]
	for k := range mp {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareFold)
	dup, found := "", false
	for i := 1; i < len(keys); i++ {
		if strings.EqualFold(keys[i-1], keys[i]) && (!found || keys[i] < dup) {
			dup, found = keys[i], true
		}
	}
	return dup, found
}

// compareFold orders ASCII strings case-insensitively, ties broken by bytes.
func compareFold(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := lowerASCII(a[i]), lowerASCII(b[i])
		if ca != cb {
			return int(ca) - int(cb)
		}
	}
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

func lowerASCII(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

// checkMessageMap checks the message values of a map field with check (checkMessage or
// checkSizes), in key order so that the reported key does not depend on map order. No csi.v1 map
// has message values; packages a Config names may.
func checkMessageMap(pm protoreflect.Map, sub *plan, check func(protoreflect.Message, *plan) *violation) *violation {
	type entry struct {
		k protoreflect.MapKey
		v protoreflect.Message
	}
	var entries []entry
	pm.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		entries = append(entries, entry{k, v.Message()})
		return true
	})
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.k.String(), b.k.String()) })
	for _, e := range entries {
		if v := check(e.v, sub); v != nil {
			if s, ok := e.k.Interface().(string); ok {
				return v.atKey(s)
			}
			return v.at("[" + e.k.String() + "]")
		}
	}
	return nil
}

func checkCapacityRange(m protoreflect.Message, p *plan) *violation {
	req := m.Get(p.fields[p.a].fd).Int()
	lim := m.Get(p.fields[p.b].fd).Int()
	if req == 0 && lim == 0 {
		return newViolation("at least one of required_bytes and limit_bytes must be set")
	}
	if req > 0 && lim > 0 && lim < req {
		return newViolation("must not be less than required_bytes").at(p.fields[p.b].seg)
	}
	return nil
}

// checkTopologyRequirement: requisite or preferred must be given, and when requisite is given
// every preferred topology must also be one of the requisite ones. The Topology messages have
// been checked by the field rules already, so their keys are valid and unique.
func checkTopologyRequirement(m protoreflect.Message, sv reflect.Value, fast bool, p *plan) *violation {
	rr, pr := &p.fields[p.a], &p.fields[p.b]
	req := messageList(m, sv, fast, rr)
	pref := messageList(m, sv, fast, pr)
	if req.n == 0 && pref.n == 0 {
		return newViolation("at least one of requisite and preferred must be set")
	}
	if req.n == 0 || pref.n == 0 || rr.sub == nil || rr.sub != pr.sub {
		return nil
	}
	seg := segmentsRule(rr.sub)
	if seg == nil {
		return nil
	}
	if req.n*pref.n > 256 {
		return preferredInRequisiteLarge(req, pref, rr.sub, seg, pr.seg)
	}
	for i := 0; i < pref.n; i++ {
		pt := segmentsOf(pref.at(i), rr.sub, seg)
		found := false
		for j := 0; j < req.n && !found; j++ {
			same, folded := sameTopology(pt, segmentsOf(req.at(j), rr.sub, seg))
			if folded {
				return preferredInRequisiteLarge(req, pref, rr.sub, seg, pr.seg)
			}
			found = same
		}
		if !found {
			return newViolation("must also be one of the requisite topologies").atIndex(i).at(pr.seg)
		}
	}
	return nil
}

// preferredInRequisiteLarge is the same check through canonical forms, each topology encoded
// once: O(n log n) for big lists, so that a request with thousands of topologies, or with keys
// that differ in case, cannot make validation quadratic.
func preferredInRequisiteLarge(req, pref msgList, tp *plan, seg *fieldRule, prefSeg string) *violation {
	set := make(map[string]struct{}, req.n)
	for j := 0; j < req.n; j++ {
		set[canonicalTopology(segmentsOf(req.at(j), tp, seg))] = struct{}{}
	}
	for i := 0; i < pref.n; i++ {
		if _, ok := set[canonicalTopology(segmentsOf(pref.at(i), tp, seg))]; !ok {
			return newViolation("must also be one of the requisite topologies").atIndex(i).at(prefSeg)
		}
	}
	return nil
}

func segmentsRule(tp *plan) *fieldRule {
	for i := range tp.fields {
		if tp.fields[i].flags&fTopology != 0 {
			return &tp.fields[i]
		}
	}
	return nil
}

func segmentsOf(m protoreflect.Message, tp *plan, seg *fieldRule) map[string]string {
	sv, fast := goStruct(m, tp)
	return stringMap(m, sv, fast, seg)
}

// sameTopology compares two Topologies, keys case-insensitively (the spec makes topology keys
// case-insensitive), values exactly. When a key of a is not in b as written, the two may still be
// equal up to case: folded is true and the caller compares canonical forms instead, which is
// rare and costs allocations but never a quadratic scan.
func sameTopology(a, b map[string]string) (same, folded bool) {
	if len(a) != len(b) {
		return false, false
	}
	for k, v := range a {
		bv, ok := b[k]
		if !ok {
			return false, true
		}
		if bv != v {
			return false, false
		}
	}
	return true, false
}

// canonicalTopology encodes a Topology so that equal ones (as sameTopology defines it) encode
// equally. Valid keys and values contain neither '=' nor ';'.
func canonicalTopology(t map[string]string) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareFold)
	var b strings.Builder
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			b.WriteByte(lowerASCII(k[i]))
		}
		b.WriteByte('=')
		b.WriteString(t[k])
		b.WriteByte(';')
	}
	return b.String()
}
