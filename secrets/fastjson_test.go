package secrets

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestFastPathFindsZapBuffer: the fast path is on with the zap this module builds with. A zap
// release that reshapes its JSON encoder turns it off (the output stays right, only slower);
// this test says so.
func TestFastPathFindsZapBuffer(t *testing.T) {
	if !zapJSON.ok {
		t.Fatal("zap's JSON encoder is not laid out as the fast path expects; redacted log lines take the general path")
	}
	if zapBuffer(zapcore.NewMapObjectEncoder()) != nil {
		t.Fatal("a map encoder was taken for zap's JSON encoder")
	}
	// A CSI request takes the fast path.
	var buf bytes.Buffer
	zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.DebugLevel)).
		Debug("call", Field("request", typicalCreateVolume()))
	for _, m := range []proto.Message{typicalCreateVolume(), &csi.NodePublishVolumeRequest{}, &csi.ListSnapshotsResponse{},
		&csi.GetCapacityResponse{}, &csi.ControllerGetCapabilitiesResponse{}} {
		if !current.Load().planFor(m.ProtoReflect().Descriptor()).fastable {
			t.Errorf("%T is not written the fast way", m)
		}
	}
	cfg := zap.NewDevelopmentEncoderConfig()
	if zapBuffer(zapcore.NewConsoleEncoder(cfg).(zapcore.ObjectEncoder)) != nil {
		t.Fatal("the console encoder's spaced form was given the fast path")
	}
}

// TestPlain8: the word test agrees with the byte-wise rule, for every byte value at every
// position and for random words.
func TestPlain8(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	var w [8]byte
	for pos := range 8 {
		for c := range 256 {
			for i := range w {
				w[i] = 'a'
			}
			w[pos] = byte(c)
			if got, want := plain8(binary.LittleEndian.Uint64(w[:])), plain(byte(c)); got != want {
				t.Fatalf("byte %#x at %d: plain8 = %v, want %v", c, pos, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		x := rng.Uint64()
		if rng.IntN(2) == 0 { // mostly printable ASCII, to reach the true answers often
			x = x&0x5f5f5f5f5f5f5f5f | 0x2020202020202020
		}
		binary.LittleEndian.PutUint64(w[:], x)
		want := true
		for _, c := range w {
			want = want && plain(c)
		}
		if plain8(x) != want {
			t.Fatalf("word %#x: plain8 = %v, want %v", x, !want, want)
		}
	}
}

// zapString is how zap's JSON encoder writes s as a value.
func zapString(s string) string {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{})
	enc.AddString("k", s)
	buf, _ := enc.EncodeEntry(zapcore.Entry{}, nil)
	out := strings.TrimSuffix(strings.TrimPrefix(buf.String(), `{"k":`), "}\n")
	buf.Free()
	return out
}

// TestAppendJSONStringMatchesZap: strings are escaped byte for byte as zap escapes them.
func TestAppendJSONStringMatchesZap(t *testing.T) {
	cases := []string{
		"", "a", "plain ascii text of some length", `quote " and backslash \ inside`,
		"\n\r\t\b\f\x00\x01\x1f\x7f", "é ü 漢字 \u2028 \U0001F600", "\xff", "a\xffb", "\xe2\x82", "\xed\xa0\x80",
		"<html>&amp;</html>", strings.Repeat("x", 7), strings.Repeat("y", 8), strings.Repeat("z", 9),
		strings.Repeat("abcdefg\"", 5), strings.Repeat("é", 20), "12345678\x0012345678", "\uFFFD",
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"a", "b", "\"", "\\", "\n", "\x00", "\x7f", "é", "\xff", "\xc3", "12345678", " "}
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		if got, want := string(appendJSONString(nil, s)), zapString(s); got != want {
			t.Fatalf("%q: got %s, zap writes %s", s, got, want)
		}
	}
}

// generalMarshaler writes a message the general way only.
type generalMarshaler struct {
	heuristic bool
	m         proto.Message
}

func (g generalMarshaler) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	encodeMessageVia(enc, g.m, g.heuristic, false)
	return nil
}

// checkFastPath logs m through zap's JSON encoder both ways and fails unless the lines are
// identical.
func checkFastPath(t *testing.T, m proto.Message) {
	t.Helper()
	for _, heuristic := range []bool{false, true} {
		var fast, general bytes.Buffer
		cfg := zap.NewProductionEncoderConfig()
		cfg.TimeKey = ""
		line := func(w *bytes.Buffer, f zap.Field) {
			zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(w), zapcore.DebugLevel)).
				Debug("call", zap.String("before", "x"), f, zap.Int("after", 1))
		}
		line(&fast, NewRedactor(WithHeuristic(heuristic)).Field("request", m))
		line(&general, zap.Object("request", generalMarshaler{heuristic, m}))
		if fast.String() != general.String() {
			t.Fatalf("%T (heuristic %v):\nfast    %s\ngeneral %s", m, heuristic, fast.Bytes(), general.Bytes())
		}
		// The console encoder's spaced JSON is left to the general path.
		fast.Reset()
		general.Reset()
		console := func(w *bytes.Buffer, f zap.Field) {
			zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(cfg), zapcore.AddSync(w), zapcore.DebugLevel)).Debug("call", f)
		}
		console(&fast, NewRedactor(WithHeuristic(heuristic)).Field("request", m))
		console(&general, zap.Object("request", generalMarshaler{heuristic, m}))
		if fast.String() != general.String() {
			t.Fatalf("%T (heuristic %v), console:\nfast    %s\ngeneral %s", m, heuristic, fast.Bytes(), general.Bytes())
		}
	}
}

// TestFastPathMatchesEncoder: the fast path writes exactly the bytes the general path writes
// through zap's JSON encoder, for messages of every shape the tests know, including those it
// hands to the general path.
func TestFastPathMatchesEncoder(t *testing.T) {
	msgs := []proto.Message{
		typicalCreateVolume(),
		&csi.CreateVolumeRequest{},
		&csi.NodeStageVolumeRequest{
			VolumeId: "v", Secrets: map[string]string{"a": "b"}, PublishContext: map[string]string{"x": "y"},
			VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}},
		},
		&csi.NodePublishVolumeRequest{VolumeId: "v\x00\"\\é\xff", TargetPath: "/t", Readonly: true, Secrets: map[string]string{"password": "pw"},
			VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
				MountFlags: []string{"ro", "user=bob,password=hunter2", "a\"b"}, VolumeMountGroup: "1000"}}}},
		&csi.GetCapacityResponse{AvailableCapacity: 1, MaximumVolumeSize: wrapperspb.Int64(0), MinimumVolumeSize: wrapperspb.Int64(-5)},
		&csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{
			{Snapshot: &csi.Snapshot{CreationTime: timestamppb.New(time.Unix(5, 7)), SizeBytes: math.MaxInt64, ReadyToUse: true}},
			{Snapshot: &csi.Snapshot{SnapshotId: "s2"}},
		}, NextToken: "t"},
		&csi.CreateVolumeRequest{VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "src"}}}},
		&csi.CreateVolumeRequest{VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{}}},
		&csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeContext: map[string]string{"a": "b"}, Parameters: map[string]string{"secret-key": "v", "": "", "\"q\"": "\n"},
		}, Message: "m"},
		&csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Available: 1, Total: 2, Used: 1, Unit: csi.VolumeUsage_BYTES}, {Unit: csi.VolumeUsage_Unit(99)}}},
		&csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
			{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}}},
		}},
		mustStruct(map[string]any{"n": 1.5, "s": "x", "l": []any{false, nil}}),
		mustAny(&csi.DeleteVolumeRequest{VolumeId: "v", Secrets: map[string]string{"k": "v"}}),
		allMessage(),
	}
	for _, m := range msgs {
		checkFastPath(t, m)
		// The same message as a dynamic one, which takes the general path (where its strings
		// are valid UTF-8: otherwise it cannot be copied through the wire form).
		if b, err := proto.Marshal(m); err == nil {
			d := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
			if err := proto.Unmarshal(b, d); err != nil {
				t.Fatal(err)
			}
			checkFastPath(t, d)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []string{"a", "password", "\xff", "\"", "é", "=", ",", "\x00", "token", "12345678"}
	word := func() string {
		var b strings.Builder
		for range rng.IntN(5) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 300 {
		checkFastPath(t, fuzzRequest(uint8(rng.IntN(3)), word(), word(), word(), word(), word(), word(), word()))
	}
}
