package secrets

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const typicalJSON = `{"name":"pvc-5f1c2a9e-8d1b-4c3e-9a7f-0b6d2e4c8a11",` +
	`"capacity_range":{"required_bytes":10737418240,"limit_bytes":21474836480},` +
	`"volume_capabilities":[` +
	`{"mount":{"fs_type":"ext4","mount_flags":["noatime","discard"]},"access_mode":{"mode":"SINGLE_NODE_WRITER"}},` +
	`{"mount":{"fs_type":"xfs","mount_flags":["nouuid"]},"access_mode":{"mode":"SINGLE_NODE_MULTI_WRITER"}}],` +
	`"parameters":{"encrypted":"true","pool":"fast-ssd","replicas":"3"},` +
	`"secrets":{"password":"***stripped***","username":"***stripped***"},` +
	`"volume_content_source":{"snapshot":{"snapshot_id":"snap-0123456789"}},` +
	`"accessibility_requirements":{"requisite":[{"segments":{"topology.example.com/zone":"zone-a"}},` +
	`{"segments":{"topology.example.com/zone":"zone-b"}}],"preferred":[{"segments":{"topology.example.com/zone":"zone-a"}}]}}`

// allMessage fills every field of the dynamic test message secretstest.All.
func allMessage() *dynamicpb.Message {
	m := testMsg("All")
	fd := func(n string) protoreflect.FieldDescriptor {
		return m.Descriptor().Fields().ByName(protoreflect.Name(n))
	}
	set := func(n string, v protoreflect.Value) { m.Set(fd(n), v) }
	leaf := func(tok, note string, pin int64) protoreflect.Value {
		l := testMsg("Leaf")
		lf := l.Descriptor().Fields()
		l.Set(lf.ByName("token"), protoreflect.ValueOfString(tok))
		l.Set(lf.ByName("note"), protoreflect.ValueOfString(note))
		if pin != 0 {
			l.Set(lf.ByName("pin"), protoreflect.ValueOfInt64(pin))
		}
		return protoreflect.ValueOfMessage(l)
	}
	set("s", protoreflect.ValueOfString("str"))
	set("b", protoreflect.ValueOfBytes([]byte{0, 1, 2, 0xff}))
	set("t", protoreflect.ValueOfBool(true))
	set("i32", protoreflect.ValueOfInt32(-5))
	set("s64", protoreflect.ValueOfInt64(-1<<40))
	set("u32", protoreflect.ValueOfUint32(7))
	set("f64", protoreflect.ValueOfUint64(1<<63))
	set("fl", protoreflect.ValueOfFloat32(1.5))
	set("db", protoreflect.ValueOfFloat64(-0.25))
	set("color", protoreflect.ValueOfEnum(1))
	l := m.Mutable(fd("colors")).List()
	for _, n := range []protoreflect.EnumNumber{0, 1, 7} {
		l.Append(protoreflect.ValueOfEnum(n))
	}
	m.Mutable(fd("blobs")).List().Append(protoreflect.ValueOfBytes([]byte("hi")))
	mp := m.Mutable(fd("by_num")).Map()
	mp.Set(protoreflect.ValueOfInt32(10).MapKey(), protoreflect.ValueOfString("ten"))
	mp.Set(protoreflect.ValueOfInt32(-2).MapKey(), protoreflect.ValueOfString("minus two"))
	mp.Set(protoreflect.ValueOfInt32(3).MapKey(), protoreflect.ValueOfString("three"))
	bm := m.Mutable(fd("by_bool")).Map()
	bm.Set(protoreflect.ValueOfBool(true).MapKey(), protoreflect.ValueOfString("yes"))
	bm.Set(protoreflect.ValueOfBool(false).MapKey(), protoreflect.ValueOfString("no"))
	um := m.Mutable(fd("by_u32")).Map()
	um.Set(protoreflect.ValueOfUint32(20).MapKey(), protoreflect.ValueOfString("twenty"))
	um.Set(protoreflect.ValueOfUint32(4).MapKey(), protoreflect.ValueOfString("four"))
	lm := m.Mutable(fd("leaves")).Map()
	lm.Set(protoreflect.ValueOfString("b").MapKey(), leaf("tokB", "noteB", 2))
	lm.Set(protoreflect.ValueOfString("a").MapKey(), leaf("tokA", "noteA", 1))
	set("at", protoreflect.ValueOfMessage(timestamppb.New(time.Date(2026, 11, 22, 8, 0, 0, 500, time.UTC)).ProtoReflect()))
	set("took", protoreflect.ValueOfMessage(durationpb.New(-1500*time.Millisecond).ProtoReflect()))
	set("maybe", protoreflect.ValueOfMessage(wrapperspb.String("perhaps").ProtoReflect()))
	a, err := anypb.New(&csi.NodeStageVolumeRequest{VolumeId: "v1", Secrets: map[string]string{"k": "anysecret"}})
	if err != nil {
		panic(err)
	}
	set("extra", protoreflect.ValueOfMessage(a.ProtoReflect()))
	set("leaf", leaf("tok", "note", 42))
	set("secret_leaf", leaf("tok2", "note2", 43))
	sl := m.Mutable(fd("secret_list")).List()
	sl.Append(protoreflect.ValueOfString("x1"))
	sl.Append(protoreflect.ValueOfString("x2"))
	set("secret_bytes", protoreflect.ValueOfBytes([]byte("sb")))
	m.Mutable(fd("secret_leaves")).Map().Set(protoreflect.ValueOfString("z").MapKey(), leaf("tokZ", "noteZ", 9))
	set("picked", leaf("ptok", "pnote", 0))
	set("opt", protoreflect.ValueOfString(""))
	c := testMsg("All")
	c.Set(fd("s"), protoreflect.ValueOfString("child"))
	m.Mutable(fd("children")).List().Append(protoreflect.ValueOfMessage(c))
	pm := m.Mutable(fd("params")).Map()
	pm.Set(protoreflect.ValueOfString("password").MapKey(), protoreflect.ValueOfString("pw"))
	pm.Set(protoreflect.ValueOfString("pool").MapKey(), protoreflect.ValueOfString("gold"))
	set("secret_num", protoreflect.ValueOfInt32(1234))
	return m
}

const allJSON = `{"s":"str","b":"AAEC/w==","t":true,"i32":-5,"s64":-1099511627776,"u32":7,` +
	`"f64":9223372036854775808,"fl":1.5,"db":-0.25,"color":"GREEN","colors":["RED","GREEN",7],` +
	`"blobs":["aGk="],"by_num":{"-2":"minus two","3":"three","10":"ten"},"by_bool":{"false":"no","true":"yes"},` +
	`"leaves":{"a":{"token":"***stripped***","note":"noteA","pin":"***stripped***"},` +
	`"b":{"token":"***stripped***","note":"noteB","pin":"***stripped***"}},` +
	`"at":"2026-11-22T08:00:00.0000005Z","took":"-1.500s","maybe":"perhaps",` +
	`"extra":{"@type":"type.googleapis.com/csi.v1.NodeStageVolumeRequest","volume_id":"v1","secrets":{"k":"***stripped***"}},` +
	`"leaf":{"token":"***stripped***","note":"note","pin":"***stripped***"},"secret_leaf":"***stripped***",` +
	`"secret_list":["***stripped***","***stripped***"],"secret_bytes":"***stripped***",` +
	`"secret_leaves":{"z":"***stripped***"},"picked":{"token":"***stripped***","note":"pnote"},"opt":"",` +
	`"children":[{"s":"child"}],"params":{"password":"pw","pool":"gold"},"secret_num":"***stripped***",` +
	`"by_u32":{"4":"four","20":"twenty"}}`

func TestString(t *testing.T) {
	heur := NewRedactor(WithHeuristic(true))
	tests := []struct {
		name string
		r    *Redactor
		msg  proto.Message
		want string
	}{
		{"typical CreateVolume", nil, typicalCreateVolume(), typicalJSON},
		{
			"NodeStageVolume", nil,
			&csi.NodeStageVolumeRequest{
				VolumeId:          "vol-1",
				PublishContext:    map[string]string{"devicePath": "/dev/sdb"},
				StagingTargetPath: "/var/lib/kubelet/staging/vol-1",
				VolumeCapability: &csi.VolumeCapability{
					AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
					AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
				},
				Secrets:       map[string]string{"chap-secret": "s3cr3t", "chap-user": "iqn.user"},
				VolumeContext: map[string]string{"iqn": "iqn.2026-11.com.example:vol-1", "token": "t0k"},
			},
			`{"volume_id":"vol-1","publish_context":{"devicePath":"/dev/sdb"},` +
				`"staging_target_path":"/var/lib/kubelet/staging/vol-1",` +
				`"volume_capability":{"block":{},"access_mode":{"mode":"MULTI_NODE_MULTI_WRITER"}},` +
				`"secrets":{"chap-secret":"***stripped***","chap-user":"***stripped***"},` +
				`"volume_context":{"iqn":"iqn.2026-11.com.example:vol-1","token":"t0k"}}`,
		},
		{
			"NodeStageVolume with heuristic", heur,
			&csi.NodeStageVolumeRequest{
				VolumeId:      "vol-1",
				VolumeContext: map[string]string{"iqn": "iqn.x", "token": "t0k", "encryptionKey": "k"},
			},
			`{"volume_id":"vol-1","volume_context":{"encryptionKey":"***stripped***","iqn":"iqn.x","token":"***stripped***"}}`,
		},
		{
			"ControllerPublishVolume", nil,
			&csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n", Readonly: true, Secrets: map[string]string{"a": ""}},
			`{"volume_id":"v","node_id":"n","readonly":true,"secrets":{"a":"***stripped***"}}`,
		},
		{
			"wrappers", nil,
			&csi.GetCapacityResponse{AvailableCapacity: 5, MaximumVolumeSize: wrapperspb.Int64(100), MinimumVolumeSize: wrapperspb.Int64(0)},
			`{"available_capacity":5,"maximum_volume_size":100,"minimum_volume_size":0}`,
		},
		{
			"timestamps", nil,
			&csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{{Snapshot: &csi.Snapshot{
				SnapshotId: "s", SourceVolumeId: "v", CreationTime: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.UTC)), ReadyToUse: true,
			}}}, NextToken: "n"},
			`{"entries":[{"snapshot":{"snapshot_id":"s","source_volume_id":"v","creation_time":"2026-01-02T03:04:05.006Z","ready_to_use":true}}],"next_token":"n"}`,
		},
		{"unknown enum", nil, &csi.VolumeCapability_AccessMode{Mode: 99}, `{"mode":99}`},
		{"nil element", nil, &csi.CreateVolumeRequest{VolumeCapabilities: []*csi.VolumeCapability{nil}}, `{"volume_capabilities":[{}]}`},
		{"oneof with nil message", nil, &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{}}, `{"mount":{}}`},
		{"empty", nil, &csi.CreateVolumeRequest{}, `{}`},
		{"nil", nil, nil, `{}`},
		{"typed nil", nil, (*csi.CreateVolumeRequest)(nil), `{}`},
		{"recursive struct", nil, mustStruct(map[string]any{"b": []any{1.5, "x", nil, true}, "a": map[string]any{"k": "v"}}),
			`{"fields":{"a":{"struct_value":{"fields":{"k":{"string_value":"v"}}}},"b":{"list_value":{"values":[{"number_value":1.5},{"string_value":"x"},{"null_value":"NULL_VALUE"},{"bool_value":true}]}}}}`},
		{"all kinds (reflective path)", nil, allMessage(), allJSON},
		{"unresolvable Any", nil, &anypb.Any{TypeUrl: "example.com/unknown.Type", Value: []byte("\x0a\x03abc")},
			`{"@type":"example.com/unknown.Type","value":"***stripped***"}`},
		{"Any holding a well-known type", nil, mustAny(durationpb.New(time.Second)), `{"@type":"type.googleapis.com/google.protobuf.Duration","value":"1s"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 10 { // map order must not leak into the output
				if got := tt.r.String(tt.msg); got != tt.want {
					t.Fatalf("String =\n%s\nwant\n%s", got, tt.want)
				}
			}
			if !json.Valid([]byte(tt.r.String(tt.msg))) {
				t.Fatal("String is not valid JSON")
			}
		})
	}
}

func mustStruct(v map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(v)
	if err != nil {
		panic(err)
	}
	return s
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}

func TestDuration(t *testing.T) {
	tests := []struct {
		sec   int64
		nanos int32
		want  string
	}{
		{0, 0, "0s"},
		{1, 0, "1s"},
		{1, 500000000, "1.500s"},
		{1, 1000, "1.000001s"},
		{1, 1, "1.000000001s"},
		{-1, -500000000, "-1.500s"},
		{0, -1000000, "-0.001s"},
		{-9223372036854775808, 0, "-9223372036854775808s"},
	}
	w := &walker{}
	for _, tt := range tests {
		d := &durationpb.Duration{Seconds: tt.sec, Nanos: tt.nanos}
		p := builtin.planFor(d.ProtoReflect().Descriptor())
		if got := string(w.duration(p, d.ProtoReflect())); got != tt.want {
			t.Errorf("duration(%d, %d) = %s, want %s", tt.sec, tt.nanos, got, tt.want)
		}
	}
}

// toDynamic copies a generated message into a dynamicpb message of the same
// descriptor, which the walkers can only read through protoreflect.
func toDynamic(t *testing.T, m proto.Message) *dynamicpb.Message {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
	if err := proto.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDynamicMatchesGenerated checks that a generated message and the same
// message as a dynamicpb one, whose protoreflect implementations share no
// code, give exactly the same outputs.
func TestDynamicMatchesGenerated(t *testing.T) {
	msgs := []proto.Message{
		typicalCreateVolume(),
		&csi.NodeStageVolumeRequest{
			VolumeId: "v", Secrets: map[string]string{"a": "b"}, PublishContext: map[string]string{"x": "y"},
			VolumeCapability: &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}},
		},
		&csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", Readonly: true, Secrets: map[string]string{"password": "pw"}},
		&csi.GetCapacityResponse{AvailableCapacity: 1, MaximumVolumeSize: wrapperspb.Int64(0)},
		&csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{{Snapshot: &csi.Snapshot{CreationTime: timestamppb.New(time.Unix(5, 7))}}}},
		&csi.CreateVolumeRequest{VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "src"}}}},
		&csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
			VolumeContext: map[string]string{"a": "b"}, Parameters: map[string]string{"secret-key": "v"},
		}, Message: "m"},
		mustStruct(map[string]any{"n": 1.0, "s": "x", "l": []any{false}}),
		mustAny(&csi.DeleteVolumeRequest{VolumeId: "v", Secrets: map[string]string{"k": "v"}}),
	}
	for _, r := range []*Redactor{NewRedactor(), NewRedactor(WithHeuristic(true))} {
		for _, m := range msgs {
			d := toDynamic(t, m)
			if got, want := r.String(d), r.String(m); got != want {
				t.Errorf("%T: dynamic\n%s\ngenerated\n%s", m, got, want)
			}
			if got, want := r.Values(d), r.Values(m); !reflect.DeepEqual(got, want) {
				t.Errorf("%T: Values dynamic %q, generated %q", m, got, want)
			}
			if got, want := r.Redact(d), r.Redact(m); !proto.Equal(toDynamic(t, want), got) {
				t.Errorf("%T: Redact dynamic %v, generated %v", m, got, want)
			}
		}
	}
}

// TestZapEncoders checks the marshaler against the JSON encoder (the log
// line carries exactly String's object) and the map encoder that zap's
// observer uses.
func TestZapEncoders(t *testing.T) {
	var buf bytes.Buffer
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(&buf), zapcore.DebugLevel))
	req := typicalCreateVolume()
	logger.Debug("call", Field("request", req), NewRedactor().Field("again", req))
	want := `{"level":"debug","msg":"call","request":` + typicalJSON + `,"again":` + typicalJSON + "}\n"
	if got := buf.String(); got != want {
		t.Errorf("log line\n%s\nwant\n%s", got, want)
	}

	enc := zapcore.NewMapObjectEncoder()
	if err := Object(req).MarshalLogObject(enc); err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(typicalJSON), &decoded); err != nil {
		t.Fatal(err)
	}
	// Round the map encoder's output through JSON to compare like types.
	b, err := json.Marshal(enc.Fields)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, decoded) {
		t.Errorf("map encoder gave\n%s\nwant\n%s", b, typicalJSON)
	}
}
