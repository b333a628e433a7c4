package secrets

// Direct reads of generated structs depend on how protobuf-go lays them out:
// an interface value is two words (type, data); a generated message is a
// struct whose first field is protoimpl.MessageState named "state" and whose
// fields sit at the offsets reflect reports for their struct tags; a oneof is
// an interface field whose first word tells the member wrapper types apart
// and whose second points to the wrapper. None of that is protobuf-go's API.
// Every assumption is therefore checked rather than trusted: at start-up on
// well-known types (checkLayout; a failure turns direct reads off for the
// process), and for every type and field when its plan is built
// (verifyLayout; a field that does not read back what protoreflect wrote is
// read through protoreflect). A protobuf-go upgrade that changes the layout
// costs speed, never correctness, and TestLayoutAssumptions and
// TestPlanLayoutCSI fail loudly so the change is seen.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"unsafe"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/runtime/protoimpl"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/typepb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// directReads is false when the start-up layout check failed: every message
// is then read through protoreflect.
var directReads atomic.Bool

// layoutErr is why the start-up layout check failed, or nil.
var layoutErr error

func init() {
	directReads.Store(true)
	if layoutErr = checkLayout(); layoutErr != nil {
		directReads.Store(false)
	}
}

// checkLayout builds plans for well-known types that together use every
// direct accessor and a oneof, and reports any field or oneof that failed
// verification. It runs on a registry of its own, so the caches start clean.
func checkLayout() (err error) {
	defer func() {
		// A layout so different that reading it faults must still leave the
		// process running on protoreflect.
		if r := recover(); r != nil {
			err = fmt.Errorf("protobuf layout check panicked: %v", r)
		}
	}()
	if unsafe.Sizeof(any(nil)) != unsafe.Sizeof(eface{}) {
		return errors.New("an interface value is not two words")
	}
	reg := newRegistry(nil, nil)
	var errs []error
	for _, m := range []proto.Message{
		&typepb.Type{}, &typepb.Field{}, &structpb.Value{}, &structpb.ListValue{}, &timestamppb.Timestamp{},
		&wrapperspb.BytesValue{}, &wrapperspb.BoolValue{}, &wrapperspb.UInt32Value{}, &wrapperspb.UInt64Value{},
		&wrapperspb.FloatValue{}, &wrapperspb.DoubleValue{},
	} {
		md := m.ProtoReflect().Descriptor()
		p := reg.planFor(md)
		if p.goType == nil {
			errs = append(errs, fmt.Errorf("%s: generated struct not recognised", md.FullName()))
			continue
		}
		for i := range p.fields {
			if f := &p.fields[i]; f.acc == accReflect && !f.inOneof {
				errs = append(errs, fmt.Errorf("%s: not read directly", f.fd.FullName()))
			}
		}
		for _, o := range p.oneofs {
			if !o.direct {
				errs = append(errs, fmt.Errorf("%s: oneof not read directly", o.od.FullName()))
			}
		}
	}
	return errors.Join(errs...)
}

// verifyLayout writes a distinct sample into every directly read field of a
// fresh message through protoreflect and reads it back through the direct
// accessor; a field that does not match falls back to protoreflect. Each
// oneof member is checked the same way, alone in its message, and a oneof
// with any mismatch is read through WhichOneof.
func verifyLayout(p *plan) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(p.md.FullName())
	if err != nil || mt.Descriptor() != p.md {
		disableDirect(p)
		return
	}
	// Reading a struct at wrong offsets may touch memory that is not a Go
	// value; make that a panic this function recovers from, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			disableDirect(p)
		}
	}()
	m := mt.New()
	for i := range p.fields {
		if f := &p.fields[i]; !f.inOneof && f.acc != accReflect {
			setSample(m, f)
		}
	}
	base := reflect.ValueOf(m.Interface()).UnsafePointer()
	for i := range p.fields {
		if f := &p.fields[i]; !f.inOneof && f.acc != accReflect && !readsBack(m, f, base) {
			f.acc = accReflect
		}
	}
	for k := range p.oneofs {
		o := &p.oneofs[k]
		if !o.direct {
			continue
		}
		empty := cursor{p: p, base: reflect.ValueOf(mt.New().Interface()).UnsafePointer()}
		if f, _ := empty.field(-k - 1); f != nil {
			o.direct = false
			continue
		}
		fds := o.od.Fields()
		for j := range fds.Len() {
			want := &p.fields[fds.Get(j).Index()]
			mm := mt.New()
			setSample(mm, want)
			c := cursor{p: p, base: reflect.ValueOf(mm.Interface()).UnsafePointer()}
			got, fbase := c.field(-k - 1)
			if got != want || fbase == nil || (want.acc != accReflect && !readsBack(mm, want, fbase)) {
				o.direct = false
				break
			}
		}
	}
}

// disableDirect makes p read every field through protoreflect.
func disableDirect(p *plan) {
	for i := range p.fields {
		p.fields[i].acc = accReflect
	}
	for i := range p.oneofs {
		p.oneofs[i].direct = false
	}
}

// sample is the value setSample writes into f: distinct per field number,
// so fields whose offsets were swapped do not read back each other's value.
func sampleString(f *fieldPlan) string { return fmt.Sprintf("csikit-%d", f.fd.Number()) }

// setSample sets f in m to a non-zero sample through protoreflect.
func setSample(m protoreflect.Message, f *fieldPlan) {
	fd, n := f.fd, int64(f.fd.Number())
	var v protoreflect.Value
	switch f.acc {
	case accString:
		v = protoreflect.ValueOfString(sampleString(f))
	case accBytes:
		v = protoreflect.ValueOfBytes([]byte(sampleString(f)))
	case accBool:
		v = protoreflect.ValueOfBool(true)
	case accInt32:
		if f.kind == protoreflect.EnumKind {
			v = protoreflect.ValueOfEnum(protoreflect.EnumNumber(n))
		} else {
			v = protoreflect.ValueOfInt32(int32(-n))
		}
	case accInt64:
		v = protoreflect.ValueOfInt64(-n << 33)
	case accUint32:
		v = protoreflect.ValueOfUint32(uint32(n))
	case accUint64:
		v = protoreflect.ValueOfUint64(uint64(n) << 33)
	case accFloat32:
		v = protoreflect.ValueOfFloat32(float32(n) + 0.5)
	case accFloat64:
		v = protoreflect.ValueOfFloat64(float64(n) + 0.25)
	case accMsg:
		v = m.NewField(fd)
	case accStrMap:
		m.Mutable(fd).Map().Set(protoreflect.ValueOfString(sampleString(f)).MapKey(), protoreflect.ValueOfString(sampleString(f)))
		return
	case accStrList:
		m.Mutable(fd).List().Append(protoreflect.ValueOfString(sampleString(f)))
		return
	case accMsgList:
		l := m.Mutable(fd).List()
		l.Append(l.NewElement())
		return
	default:
		// A member read through protoreflect still needs setting, so the
		// oneof check sees which member is set.
		m.Set(fd, m.NewField(fd))
		return
	}
	m.Set(fd, v)
}

// readsBack reports whether the direct accessor of f, on the struct at
// fbase, sees what protoreflect holds for f in m.
func readsBack(m protoreflect.Message, f *fieldPlan, fbase unsafe.Pointer) bool {
	want := m.Get(f.fd)
	ptr := unsafe.Add(fbase, f.off)
	ptrOf := func(v protoreflect.Value) unsafe.Pointer {
		return reflect.ValueOf(v.Message().Interface()).UnsafePointer()
	}
	switch f.acc {
	case accMsg:
		got := *(*unsafe.Pointer)(ptr)
		return got != nil && got == ptrOf(want)
	case accStrMap:
		got := *(*map[string]string)(ptr)
		k := sampleString(f)
		return len(got) == 1 && got[k] == k && want.Map().Len() == 1
	case accStrList:
		got := *(*[]string)(ptr)
		return len(got) == 1 && got[0] == sampleString(f) && want.List().Len() == 1
	case accMsgList:
		got := *(*[]unsafe.Pointer)(ptr)
		return len(got) == 1 && want.List().Len() == 1 && got[0] == ptrOf(want.List().Get(0))
	}
	c := cursor{p: nil, base: fbase}
	v, ok := c.scalar(f, fbase)
	if !ok || !v.IsValid() {
		return false
	}
	switch f.acc {
	case accBytes:
		return bytes.Equal(v.Bytes(), want.Bytes())
	case accFloat32, accFloat64:
		return math.Float64bits(v.Float()) == math.Float64bits(want.Float())
	case accString:
		return v.String() == want.String() && strings.HasPrefix(v.String(), "csikit-")
	}
	return v.Interface() == want.Interface()
}

// eface is the layout of an empty interface value: the runtime's type word
// and a pointer to the data. checkLayout proves it at start-up.
type eface struct {
	typ, data unsafe.Pointer
}

func typeWordOf(x any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&x)).typ }

// ifaceAt builds the interface value holding pointer data of the pointer
// type whose type word is typ.
func ifaceAt(typ, data unsafe.Pointer) any {
	return *(*any)(unsafe.Pointer(&eface{typ: typ, data: data}))
}

// generatedType returns the pointer type of the generated Go struct for md
// and its runtime type word, or nils when md has no generated type whose
// descriptor is exactly md.
//
// It also checks, on a fresh message of the type, that an interface value
// rebuilt from the type word and a pointer is that very message, which is
// what msgAt relies on. Direct reads are off altogether when the start-up
// check failed.
func generatedType(md protoreflect.MessageDescriptor) (reflect.Type, unsafe.Pointer) {
	if !directReads.Load() {
		return nil, nil
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
	if err != nil || mt.Descriptor() != md {
		return nil, nil
	}
	zero := mt.Zero().Interface()
	pt := reflect.TypeOf(zero)
	if pt == nil || pt.Kind() != reflect.Pointer || pt.Elem().Kind() != reflect.Struct || !openStruct(pt.Elem()) {
		return nil, nil
	}
	typ := typeWordOf(zero)
	x := mt.New().Interface()
	ptr := reflect.ValueOf(x).UnsafePointer()
	back := ifaceAt(typ, ptr)
	if reflect.TypeOf(back) != pt || reflect.ValueOf(back).UnsafePointer() != ptr || back != any(x) {
		return nil, nil
	}
	return pt, typ
}

var messageStateType = reflect.TypeFor[protoimpl.MessageState]()

// openStruct reports whether st is a struct generated with the open struct
// API, whose fields hold the values directly. The opaque and hybrid APIs
// may keep presence in bitmaps and decode sub-messages lazily, and legacy
// messages are wrapped, so those are read through protoreflect only.
func openStruct(st reflect.Type) bool {
	if st.NumField() == 0 {
		return false
	}
	state := st.Field(0)
	if state.Name != "state" || state.Type != messageStateType {
		return false
	}
	if api := state.Tag.Get("protogen"); api != "" && api != "open.v1" {
		return false
	}
	for i := range st.NumField() {
		if strings.HasPrefix(st.Field(i).Name, "XXX_") {
			return false
		}
	}
	return true
}

// layout records how each field of p is stored in the generated struct.
// Every offset is trusted only after checking the Go field's type against
// the descriptor; the walkers use them only for messages whose dynamic type
// is p.goType.
func layout(p *plan) {
	st := p.goType.Elem()
	byNumber := make(map[protoreflect.FieldNumber]reflect.StructField, st.NumField())
	byOneof := map[string]reflect.StructField{}
	for i := range st.NumField() {
		sf := st.Field(i)
		if n, ok := tagNumber(sf.Tag.Get("protobuf")); ok {
			byNumber[n] = sf
		}
		if name := sf.Tag.Get("protobuf_oneof"); name != "" {
			byOneof[name] = sf
		}
	}
	for i := range p.fields {
		f := &p.fields[i]
		if f.inOneof {
			continue
		}
		if sf, ok := byNumber[f.fd.Number()]; ok {
			f.acc, f.off = accFor(f, sf.Type), sf.Offset
		}
	}
	for i := range p.oneofs {
		o := &p.oneofs[i]
		if sf, ok := byOneof[string(o.od.Name())]; ok && sf.Type.Kind() == reflect.Interface {
			oneofLayout(p, o, sf)
		}
	}
	verifyLayout(p)
}

// oneofLayout learns, for each member of o, the itab of its wrapper type in
// the oneof interface field and where the value sits in the wrapper. It sets
// each member through protoreflect on a scratch message and looks at what
// protobuf-go stored.
func oneofLayout(p *plan, o *oneofPlan, sf reflect.StructField) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(p.md.FullName())
	if err != nil {
		return
	}
	fds := o.od.Fields()
	members := make([]oneofMember, 0, fds.Len())
	for i := range fds.Len() {
		fd := fds.Get(i)
		x := mt.New()
		x.Set(fd, x.NewField(fd))
		xv := reflect.ValueOf(x.Interface())
		if xv.Type() != p.goType {
			return
		}
		iv := xv.Elem().FieldByIndex(sf.Index)
		if iv.IsNil() || iv.Elem().Kind() != reflect.Pointer || iv.Elem().Elem().Kind() != reflect.Struct {
			return
		}
		wt := iv.Elem().Elem().Type()
		if wt.NumField() != 1 {
			return
		}
		wf := wt.Field(0)
		if n, ok := tagNumber(wf.Tag.Get("protobuf")); !ok || n != fd.Number() {
			return
		}
		f := &p.fields[fd.Index()]
		f.acc, f.off = accFor(f, wf.Type), wf.Offset
		words := (*[2]unsafe.Pointer)(unsafe.Add(xv.UnsafePointer(), sf.Offset))
		members = append(members, oneofMember{itab: words[0], field: fd.Index()})
	}
	o.direct, o.off, o.members = true, sf.Offset, members
}
