package secrets

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
)

func benchLogger(level zapcore.Level) *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), level))
}

// BenchmarkLogCreateVolumeDebug logs a typical CreateVolumeRequest through a
// zap JSON core at debug level: the cost of request logging when it is on.
func BenchmarkLogCreateVolumeDebug(b *testing.B) {
	logger := benchLogger(zapcore.DebugLevel)
	req := typicalCreateVolume()
	logger.Debug("call", Field("request", req)) // build the plans outside the timing
	b.ReportAllocs()
	for b.Loop() {
		logger.Debug("call", Field("request", req))
	}
}

// BenchmarkLogCreateVolumeDebugOff is the same call guarded the way the
// logging middleware guards it, with the logger at info level.
func BenchmarkLogCreateVolumeDebugOff(b *testing.B) {
	logger := benchLogger(zapcore.InfoLevel)
	req := typicalCreateVolume()
	b.ReportAllocs()
	for b.Loop() {
		if ce := logger.Check(zap.DebugLevel, "call"); ce != nil {
			ce.Write(Field("request", req))
		}
	}
}

// BenchmarkString renders the redacted request as one line of JSON.
func BenchmarkString(b *testing.B) {
	req := typicalCreateVolume()
	_ = String(req)
	b.ReportAllocs()
	for b.Loop() {
		_ = String(req)
	}
}

// BenchmarkLogCreateVolumeHeuristic is BenchmarkLogCreateVolumeDebug with
// the key heuristic on.
func BenchmarkLogCreateVolumeHeuristic(b *testing.B) {
	logger := benchLogger(zapcore.DebugLevel)
	r := NewRedactor(WithHeuristic(true))
	req := typicalCreateVolume()
	logger.Debug("call", r.Field("request", req))
	b.ReportAllocs()
	for b.Loop() {
		logger.Debug("call", r.Field("request", req))
	}
}

// BenchmarkLogCreateVolumeReflective logs the request as a dynamicpb
// message, which can only be read through protoreflect: the fallback cost.
func BenchmarkLogCreateVolumeReflective(b *testing.B) {
	logger := benchLogger(zapcore.DebugLevel)
	raw, err := proto.Marshal(typicalCreateVolume())
	if err != nil {
		b.Fatal(err)
	}
	req := dynamicpb.NewMessage((&csi.CreateVolumeRequest{}).ProtoReflect().Descriptor())
	if err := proto.Unmarshal(raw, req); err != nil {
		b.Fatal(err)
	}
	logger.Debug("call", Field("request", req))
	b.ReportAllocs()
	for b.Loop() {
		logger.Debug("call", Field("request", req))
	}
}

// BenchmarkLogCreateVolumeHandWritten logs the same JSON through a
// hand-written, allocation-free marshaler for CreateVolumeRequest. It is the
// floor any generic walker is measured against: what zap itself costs.
func BenchmarkLogCreateVolumeHandWritten(b *testing.B) {
	logger := benchLogger(zapcore.DebugLevel)
	req := typicalCreateVolume()
	b.ReportAllocs()
	for b.Loop() {
		logger.Debug("call", zap.Object("request", (*handReq)(req)))
	}
}

// BenchmarkObjectDiscardEncoder is the redaction walk alone, writing into an
// encoder that discards everything.
func BenchmarkObjectDiscardEncoder(b *testing.B) {
	req := typicalCreateVolume()
	o := Object(req)
	b.ReportAllocs()
	for b.Loop() {
		_ = o.MarshalLogObject(discardEncoder{})
	}
}

func BenchmarkValues(b *testing.B) {
	req := typicalCreateVolume()
	b.ReportAllocs()
	for b.Loop() {
		_ = Values(req)
	}
}

// BenchmarkScrubClean scrubs an error message that holds no secret, the
// common case.
func BenchmarkScrubClean(b *testing.B) {
	req := typicalCreateVolume()
	const text = "rpc error: code = NotFound desc = pool fast-ssd not found on backend array-7"
	b.ReportAllocs()
	for b.Loop() {
		_ = Scrub(text, req)
	}
}

func BenchmarkScrub(b *testing.B) {
	req := typicalCreateVolume()
	const text = "login admin:hunter2-s3cr3t refused by backend array-7"
	b.ReportAllocs()
	for b.Loop() {
		_ = Scrub(text, req)
	}
}

func BenchmarkRedact(b *testing.B) {
	req := typicalCreateVolume()
	b.ReportAllocs()
	for b.Loop() {
		_ = Redact(req)
	}
}

// handReq and friends write a CreateVolumeRequest the way a person would by
// hand, with secrets stripped; every marshaler is pointer-shaped so that
// nothing allocates.
type (
	handReq      csi.CreateVolumeRequest
	handRange    csi.CapacityRange
	handCaps     []*csi.VolumeCapability
	handCap      csi.VolumeCapability
	handMount    csi.VolumeCapability_MountVolume
	handMode     csi.VolumeCapability_AccessMode
	handSource   csi.VolumeContentSource
	handSnapshot csi.VolumeContentSource_SnapshotSource
	handTopoReq  csi.TopologyRequirement
	handTopos    []*csi.Topology
	handTopo     csi.Topology
	handStrings  []string
	handMap      map[string]string
	handSecrets  map[string]string
)

func (h *handReq) MarshalLogObject(e zapcore.ObjectEncoder) error {
	e.AddString("name", h.Name)
	_ = e.AddObject("capacity_range", (*handRange)(h.CapacityRange))
	_ = e.AddArray("volume_capabilities", (*handCaps)(&h.VolumeCapabilities))
	_ = e.AddObject("parameters", handMap(h.Parameters))
	_ = e.AddObject("secrets", handSecrets(h.Secrets))
	_ = e.AddObject("volume_content_source", (*handSource)(h.VolumeContentSource))
	return e.AddObject("accessibility_requirements", (*handTopoReq)(h.AccessibilityRequirements))
}

func (h *handRange) MarshalLogObject(e zapcore.ObjectEncoder) error {
	e.AddInt64("required_bytes", h.RequiredBytes)
	e.AddInt64("limit_bytes", h.LimitBytes)
	return nil
}

func (h *handCaps) MarshalLogArray(e zapcore.ArrayEncoder) error {
	for _, c := range *h {
		_ = e.AppendObject((*handCap)(c))
	}
	return nil
}

func (h *handCap) MarshalLogObject(e zapcore.ObjectEncoder) error {
	_ = e.AddObject("mount", (*handMount)((*csi.VolumeCapability)(h).GetMount()))
	return e.AddObject("access_mode", (*handMode)(h.AccessMode))
}

func (h *handMount) MarshalLogObject(e zapcore.ObjectEncoder) error {
	e.AddString("fs_type", h.FsType)
	return e.AddArray("mount_flags", (*handStrings)(&h.MountFlags))
}

func (h *handMode) MarshalLogObject(e zapcore.ObjectEncoder) error {
	e.AddString("mode", h.Mode.String())
	return nil
}

func (h *handSource) MarshalLogObject(e zapcore.ObjectEncoder) error {
	return e.AddObject("snapshot", (*handSnapshot)((*csi.VolumeContentSource)(h).GetSnapshot()))
}

func (h *handSnapshot) MarshalLogObject(e zapcore.ObjectEncoder) error {
	e.AddString("snapshot_id", h.SnapshotId)
	return nil
}

func (h *handTopoReq) MarshalLogObject(e zapcore.ObjectEncoder) error {
	_ = e.AddArray("requisite", (*handTopos)(&h.Requisite))
	return e.AddArray("preferred", (*handTopos)(&h.Preferred))
}

func (h *handTopos) MarshalLogArray(e zapcore.ArrayEncoder) error {
	for _, t := range *h {
		_ = e.AppendObject((*handTopo)(t))
	}
	return nil
}

func (h *handTopo) MarshalLogObject(e zapcore.ObjectEncoder) error {
	return e.AddObject("segments", handMap(h.Segments))
}

func (h *handStrings) MarshalLogArray(e zapcore.ArrayEncoder) error {
	for _, s := range *h {
		e.AppendString(s)
	}
	return nil
}

func sortedKeys(m map[string]string, buf []string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

func (h handMap) MarshalLogObject(e zapcore.ObjectEncoder) error {
	var buf [8]string
	for _, k := range sortedKeys(h, buf[:0]) {
		e.AddString(k, h[k])
	}
	return nil
}

func (h handSecrets) MarshalLogObject(e zapcore.ObjectEncoder) error {
	var buf [8]string
	for _, k := range sortedKeys(h, buf[:0]) {
		e.AddString(k, Placeholder)
	}
	return nil
}

// discardEncoder is a zapcore.ObjectEncoder and ArrayEncoder that calls
// nested marshalers and drops every value.
type discardEncoder struct{}

func (discardEncoder) AddArray(_ string, m zapcore.ArrayMarshaler) error {
	return m.MarshalLogArray(discardEncoder{})
}
func (discardEncoder) AddObject(_ string, m zapcore.ObjectMarshaler) error {
	return m.MarshalLogObject(discardEncoder{})
}
func (discardEncoder) AddBinary(string, []byte)          {}
func (discardEncoder) AddByteString(string, []byte)      {}
func (discardEncoder) AddBool(string, bool)              {}
func (discardEncoder) AddComplex128(string, complex128)  {}
func (discardEncoder) AddComplex64(string, complex64)    {}
func (discardEncoder) AddDuration(string, time.Duration) {}
func (discardEncoder) AddFloat64(string, float64)        {}
func (discardEncoder) AddFloat32(string, float32)        {}
func (discardEncoder) AddInt(string, int)                {}
func (discardEncoder) AddInt64(string, int64)            {}
func (discardEncoder) AddInt32(string, int32)            {}
func (discardEncoder) AddInt16(string, int16)            {}
func (discardEncoder) AddInt8(string, int8)              {}
func (discardEncoder) AddString(string, string)          {}
func (discardEncoder) AddTime(string, time.Time)         {}
func (discardEncoder) AddUint(string, uint)              {}
func (discardEncoder) AddUint64(string, uint64)          {}
func (discardEncoder) AddUint32(string, uint32)          {}
func (discardEncoder) AddUint16(string, uint16)          {}
func (discardEncoder) AddUint8(string, uint8)            {}
func (discardEncoder) AddUintptr(string, uintptr)        {}
func (discardEncoder) AddReflected(string, any) error    { return nil }
func (discardEncoder) OpenNamespace(string)              {}
func (discardEncoder) AppendBool(bool)                   {}
func (discardEncoder) AppendByteString([]byte)           {}
func (discardEncoder) AppendComplex128(complex128)       {}
func (discardEncoder) AppendComplex64(complex64)         {}
func (discardEncoder) AppendFloat64(float64)             {}
func (discardEncoder) AppendFloat32(float32)             {}
func (discardEncoder) AppendInt(int)                     {}
func (discardEncoder) AppendInt64(int64)                 {}
func (discardEncoder) AppendInt32(int32)                 {}
func (discardEncoder) AppendInt16(int16)                 {}
func (discardEncoder) AppendInt8(int8)                   {}
func (discardEncoder) AppendString(string)               {}
func (discardEncoder) AppendUint(uint)                   {}
func (discardEncoder) AppendUint64(uint64)               {}
func (discardEncoder) AppendUint32(uint32)               {}
func (discardEncoder) AppendUint16(uint16)               {}
func (discardEncoder) AppendUint8(uint8)                 {}
func (discardEncoder) AppendUintptr(uintptr)             {}
func (discardEncoder) AppendDuration(time.Duration)      {}
func (discardEncoder) AppendTime(time.Time)              {}
func (discardEncoder) AppendArray(m zapcore.ArrayMarshaler) error {
	return m.MarshalLogArray(discardEncoder{})
}
func (discardEncoder) AppendObject(m zapcore.ObjectMarshaler) error {
	return m.MarshalLogObject(discardEncoder{})
}
func (discardEncoder) AppendReflected(any) error { return nil }
