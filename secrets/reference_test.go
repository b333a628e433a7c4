package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	cosi "sigs.k8s.io/container-object-storage-interface/proto"

	cosiv1alpha2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// The reference: what a redacted log line must hold, computed without any of this package's
// walking, planning or secret lookup. protojson writes the message (the JSON mapping of the
// protobuf specification, with proto field names), then the JSON is redacted field by field,
// guided by the descriptors: a field is secret when its options carry csi_secret (1059),
// vg_csi_secret (1101) or cosi_secret (1115) on the wire, or when it is one of COSI's credential
// fields listed below; with the heuristic, a map<string,string> value under a key that
// LooksSecret is secret too; mount_flags keep keys and bare flags and lose option values.
// checkAgainstReference then compares the zap line with the reference, in order, after
// writing numbers one way (protojson quotes 64-bit integers, zap does not) and reading map
// entries without their order (zap writes a key that is not valid UTF-8 with U+FFFD, so two
// keys can read alike and their order can change).

// referenceCOSI lists COSI's credential fields by message and field name, in any COSI package.
var referenceCOSI = map[string]bool{
	"CredentialDetails.secrets":          true,
	"S3CredentialInfo.access_key_id":     true,
	"S3CredentialInfo.access_secret_key": true,
	"AzureCredentialInfo.access_token":   true,
	"GcsCredentialInfo.access_id":        true,
	"GcsCredentialInfo.access_secret":    true,
	"GcsCredentialInfo.private_key_name": true,
}

// referenceSecret is the reference's definition of a secret field.
func referenceSecret(fd protoreflect.FieldDescriptor) bool {
	if md, ok := fd.Parent().(protoreflect.MessageDescriptor); ok && !fd.IsExtension() {
		pkg := string(md.ParentFile().Package())
		if (strings.HasPrefix(pkg, "cosi.") || strings.HasPrefix(pkg, "sigs.k8s.io.cosi.")) &&
			referenceCOSI[string(md.Name())+"."+string(fd.Name())] {
			return true
		}
	}
	b, err := proto.Marshal(fd.Options())
	if err != nil {
		panic(err)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if (num == 1059 || num == 1101 || num == 1115) && v != 0 {
				return true
			}
			b = b[m:]
			continue
		}
		b = b[protowire.ConsumeFieldValue(num, typ, b):]
	}
	return false
}

// jsonObject is a decoded JSON object that keeps its keys in order.
type jsonObject []jsonMember

type jsonMember struct {
	k string
	v any
}

func (o jsonObject) get(k string) any {
	for _, m := range o {
		if m.k == k {
			return m.v
		}
	}
	return nil
}

// decodeOrdered decodes JSON into strings, json.Number, bools, nil, []any and jsonObject.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := jsonObject{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, jsonMember{k.(string), v})
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return tok, nil
}

// validUTF8Copy returns a copy of m with every string (map keys included) written as zap
// writes it, invalid bytes as U+FFFD, because protojson refuses invalid UTF-8. Map keys that
// become equal keep the value of the greatest original key, the one a reader of zap's line
// (which holds both, in key order) ends up with.
func validUTF8Copy(m proto.Message) proto.Message {
	c := proto.Clone(m)
	fixStrings(c.ProtoReflect())
	return c
}

func fixStrings(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		fixValue := func(kind protoreflect.Kind, v protoreflect.Value) (protoreflect.Value, bool) {
			switch kind {
			case protoreflect.StringKind:
				return protoreflect.ValueOfString(zapSafe(v.String())), true
			case protoreflect.MessageKind, protoreflect.GroupKind:
				fixStrings(v.Message())
			}
			return v, false
		}
		switch {
		case fd.IsMap():
			mp := v.Map()
			type entry struct {
				k protoreflect.MapKey
				v protoreflect.Value
			}
			var ents []entry
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				ents = append(ents, entry{k, v})
				return true
			})
			if fd.MapKey().Kind() == protoreflect.StringKind {
				slices.SortFunc(ents, func(a, b entry) int { return strings.Compare(a.k.String(), b.k.String()) })
			}
			for _, e := range ents {
				mp.Clear(e.k)
			}
			for _, e := range ents {
				k := e.k
				if fd.MapKey().Kind() == protoreflect.StringKind {
					k = protoreflect.ValueOfString(zapSafe(k.String())).MapKey()
				}
				nv, _ := fixValue(fd.MapValue().Kind(), e.v)
				mp.Set(k, nv)
			}
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if nv, ok := fixValue(fd.Kind(), l.Get(i)); ok {
					l.Set(i, nv)
				}
			}
		default:
			if nv, ok := fixValue(fd.Kind(), v); ok {
				m.Set(fd, nv)
			}
		}
		return true
	})
}

// reference computes the expected redacted object for m.
type reference struct {
	t         testing.TB
	heuristic bool
}

func (r reference) of(m proto.Message) any {
	r.t.Helper()
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(validUTF8Copy(m))
	if err != nil {
		r.t.Fatalf("protojson: %v", err)
	}
	v, err := decodeOrdered(b)
	if err != nil {
		r.t.Fatalf("decode protojson output: %v\n%s", err, b)
	}
	return r.message(m.ProtoReflect().Descriptor(), v)
}

func (r reference) message(md protoreflect.MessageDescriptor, v any) any {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		ts, err := time.Parse(time.RFC3339Nano, v.(string))
		if err != nil {
			r.t.Fatalf("timestamp %v: %v", v, err)
		}
		return ts.UTC().Format(time.RFC3339Nano)
	case "google.protobuf.Duration":
		return v
	case "google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value", "google.protobuf.FloatValue",
		"google.protobuf.DoubleValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return r.scalar(md.Fields().ByNumber(1), v)
	case "google.protobuf.Any":
		obj := v.(jsonObject)
		url := obj.get("@type").(string)
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
		if err != nil {
			r.t.Fatalf("Any of %s: %v", url, err)
		}
		if inner := mt.Descriptor(); isWellKnown(inner.FullName()) {
			return jsonObject{{"@type", url}, {"value", r.message(inner, obj.get("value"))}}
		}
		fields := r.message(mt.Descriptor(), obj[1:]).(jsonObject)
		return append(jsonObject{{"@type", url}}, fields...)
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue",
		"google.protobuf.FieldMask", "google.protobuf.Empty":
		r.t.Fatalf("the reference does not model %s", md.FullName())
	}
	obj := v.(jsonObject)
	out := make(jsonObject, 0, len(obj))
	for _, mb := range obj {
		fd := md.Fields().ByName(protoreflect.Name(mb.k))
		if fd == nil {
			r.t.Fatalf("%s: no field %q", md.FullName(), mb.k)
		}
		out = append(out, jsonMember{mb.k, r.field(fd, mb.v)})
	}
	return out
}

func isWellKnown(n protoreflect.FullName) bool {
	return strings.HasPrefix(string(n), "google.protobuf.")
}

func (r reference) field(fd protoreflect.FieldDescriptor, v any) any {
	secret := referenceSecret(fd)
	switch {
	case fd.IsMap():
		obj := v.(jsonObject)
		out := make(jsonObject, 0, len(obj))
		for _, mb := range obj {
			vd := fd.MapValue()
			var nv any
			switch {
			case secret:
				nv = Placeholder
			case r.heuristic && fd.MapKey().Kind() == protoreflect.StringKind && vd.Kind() == protoreflect.StringKind && LooksSecret(mb.k):
				nv = Placeholder
			case vd.Message() != nil:
				nv = r.message(vd.Message(), mb.v)
			default:
				nv = r.scalar(vd, mb.v)
			}
			out = append(out, jsonMember{mb.k, nv})
		}
		return out
	case fd.IsList():
		arr := v.([]any)
		out := make([]any, len(arr))
		for i, e := range arr {
			switch {
			case secret:
				out[i] = Placeholder
			case fd.Message() != nil:
				out[i] = r.message(fd.Message(), e)
			case fd.FullName() == "csi.v1.VolumeCapability.MountVolume.mount_flags":
				out[i] = shownOptions(e.(string))
			default:
				out[i] = r.scalar(fd, e)
			}
		}
		return out
	case secret:
		return Placeholder
	case fd.Message() != nil:
		return r.message(fd.Message(), v)
	}
	return r.scalar(fd, v)
}

// scalar turns protojson's spelling of a scalar into zap's: 64-bit integers are numbers, and
// infinities are "+Inf" and "-Inf".
func (r reference) scalar(fd protoreflect.FieldDescriptor, v any) any {
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if s, ok := v.(string); ok {
			return json.Number(s)
		}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		switch v {
		case "Infinity":
			return "+Inf"
		case "-Infinity":
			return "-Inf"
		}
	}
	return v
}

// shownOptions is a mount_flags element as a reader may see it: every non-empty value of a
// key=value option (options split at commas outside double quotes) replaced by Placeholder.
func shownOptions(s string) string {
	var secrets, public []string
	oracleOptions(s, &secrets, &public)
	return public[0]
}

// canonical prepares a decoded redacted object for comparison: numbers are written one way
// for their field's kind, and map entries are sorted by key with a repeated key keeping its
// last value. Messages keep their field order.
func canonical(md protoreflect.MessageDescriptor, v any) any {
	switch {
	case md.FullName() == "google.protobuf.Timestamp" || md.FullName() == "google.protobuf.Duration":
		return v
	case isWellKnown(md.FullName()) && md.FullName() != "google.protobuf.Any":
		return canonicalScalar(md.Fields().ByNumber(1), v)
	}
	obj, ok := v.(jsonObject)
	if !ok {
		return v // a secret message, written as Placeholder
	}
	out := make(jsonObject, 0, len(obj))
	if md.FullName() == "google.protobuf.Any" && len(obj) > 0 && obj[0].k == "@type" {
		url, _ := obj[0].v.(string)
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
		if err != nil {
			return v
		}
		out = append(out, obj[0])
		if isWellKnown(mt.Descriptor().FullName()) {
			return append(out, jsonMember{"value", canonical(mt.Descriptor(), obj.get("value"))})
		}
		md, obj = mt.Descriptor(), obj[1:]
	}
	for _, mb := range obj {
		fd := md.Fields().ByName(protoreflect.Name(mb.k))
		if fd == nil {
			out = append(out, mb) // left as is: the comparison fails on it
			continue
		}
		out = append(out, jsonMember{mb.k, canonicalField(fd, mb.v)})
	}
	return out
}

func canonicalField(fd protoreflect.FieldDescriptor, v any) any {
	elem := func(vd protoreflect.FieldDescriptor, e any) any {
		if vd.Message() != nil {
			return canonical(vd.Message(), e)
		}
		return canonicalScalar(vd, e)
	}
	switch {
	case fd.IsMap():
		obj, ok := v.(jsonObject)
		if !ok {
			return v
		}
		byKey := map[string]any{}
		for _, mb := range obj {
			byKey[mb.k] = elem(fd.MapValue(), mb.v)
		}
		out := make(jsonObject, 0, len(byKey))
		for k, e := range byKey {
			out = append(out, jsonMember{k, e})
		}
		slices.SortFunc(out, func(a, b jsonMember) int { return strings.Compare(a.k, b.k) })
		return out
	case fd.IsList():
		arr, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			out[i] = elem(fd, e)
		}
		return out
	}
	return elem(fd, v)
}

func canonicalScalar(fd protoreflect.FieldDescriptor, v any) any {
	n, ok := v.(json.Number)
	if !ok {
		return v
	}
	switch fd.Kind() {
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return v
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
			return json.Number(strconv.FormatUint(u, 10))
		}
	default:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
	}
	return v
}

// checkAgainstReference logs m through a zap JSON logger and fails unless the redacted object
// in the line is the reference's, field for field and in the same order.
func checkAgainstReference(t testing.TB, m proto.Message) {
	t.Helper()
	md := m.ProtoReflect().Descriptor()
	for _, heuristic := range []bool{false, true} {
		var buf bytes.Buffer
		cfg := zap.NewProductionEncoderConfig()
		cfg.TimeKey = ""
		zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(&buf), zapcore.DebugLevel)).
			Debug("call", zap.String("before", "x"), NewRedactor(WithHeuristic(heuristic)).Field("request", m), zap.Int("after", 1))
		line, err := decodeOrdered(buf.Bytes())
		if err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, buf.Bytes())
		}
		obj := line.(jsonObject)
		if len(obj) != 5 || obj[2].k != "before" || obj[3].k != "request" || obj[4].k != "after" {
			t.Fatalf("log line does not hold the request between its neighbours:\n%s", buf.Bytes())
		}
		got := canonical(md, obj[3].v)
		want := canonical(md, reference{t, heuristic}.of(m))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s (heuristic %v):\nlogged    %s\nreference %#v\ngot       %#v", md.FullName(), heuristic, buf.Bytes(), want, got)
		}
	}
}

// TestMatchesReference: the redacted log line of messages of every shape the tests know is the
// reference's, for generated messages and for the same messages as dynamicpb ones.
func TestMatchesReference(t *testing.T) {
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
			{Snapshot: &csi.Snapshot{SnapshotId: "s2", CreationTime: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.UTC))}},
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
		mustAny(&csi.DeleteVolumeRequest{VolumeId: "v", Secrets: map[string]string{"k": "v"}}),
		mustAny(durationpb.New(-1500 * time.Millisecond)),
		allMessage(),
		// COSI marks no field; its credentials are secret by message and field name.
		&cosi.DriverGrantBucketAccessResponse{AccountId: "acct-1", Credentials: map[string]*cosi.CredentialDetails{
			"s3": {Secrets: map[string]string{"accessKeyID": "AKIA1", "accessSecretKey": "s3cr3t"}}}},
		&cosiv1alpha2.DriverGrantBucketAccessResponse{AccountId: "acct-2",
			Buckets: []*cosiv1alpha2.DriverGrantBucketAccessResponse_BucketInfo{{BucketId: "b1"}},
			Credentials: &cosiv1alpha2.CredentialInfo{
				S3:    &cosiv1alpha2.S3CredentialInfo{AccessKeyId: "AKIA2", AccessSecretKey: "s3cr3t2"},
				Azure: &cosiv1alpha2.AzureCredentialInfo{AccessToken: "tok"},
				Gcs:   &cosiv1alpha2.GcsCredentialInfo{AccessId: "id", AccessSecret: "gs", PrivateKeyName: "pk"},
			}},
	}
	for _, m := range msgs {
		checkAgainstReference(t, m)
		if b, err := proto.Marshal(m); err == nil {
			d := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
			if err := proto.Unmarshal(b, d); err != nil {
				t.Fatal(err)
			}
			checkAgainstReference(t, d)
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
		checkAgainstReference(t, fuzzRequest(uint8(rng.IntN(3)), word(), word(), word(), word(), word(), word(), word()))
	}
}

// TestReferenceCatchesMistakes: the comparison fails on a log line that leaks a secret, drops a
// field, reorders fields or misspells a number, so a pass above means something.
func TestReferenceCatchesMistakes(t *testing.T) {
	req := typicalCreateVolume()
	md := req.ProtoReflect().Descriptor()
	want := canonical(md, reference{t, false}.of(req))
	good, err := decodeOrdered([]byte(typicalJSON))
	if err != nil {
		t.Fatal(err)
	}
	if got := canonical(md, good); !reflect.DeepEqual(got, want) {
		t.Fatalf("the golden line does not match the reference:\n%#v\n%#v", got, want)
	}
	for name, line := range map[string]string{
		"secret leaked":    strings.Replace(typicalJSON, `"password":"***stripped***"`, `"password":"hunter2-s3cr3t"`, 1),
		"secret key lost":  strings.Replace(typicalJSON, `"password":"***stripped***",`, ``, 1),
		"field dropped":    strings.Replace(typicalJSON, `"name":"pvc-5f1c2a9e-8d1b-4c3e-9a7f-0b6d2e4c8a11",`, ``, 1),
		"fields reordered": `{"capacity_range":{"required_bytes":10737418240,"limit_bytes":21474836480},"name":"pvc-5f1c2a9e-8d1b-4c3e-9a7f-0b6d2e4c8a11",` + strings.SplitN(typicalJSON, `"limit_bytes":21474836480},`, 2)[1],
		"number as string": strings.Replace(typicalJSON, `"required_bytes":10737418240`, `"required_bytes":"10737418240"`, 1),
		"flag value shown": strings.Replace(typicalJSON, `"noatime"`, `"noatime=1"`, 1),
	} {
		bad, err := decodeOrdered([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if reflect.DeepEqual(canonical(md, bad), want) {
			t.Errorf("%s: the reference comparison did not notice", name)
		}
	}
}
