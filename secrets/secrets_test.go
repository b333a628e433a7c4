package secrets

import (
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func fieldOf(m proto.Message, name protoreflect.Name) protoreflect.FieldDescriptor {
	return m.ProtoReflect().Descriptor().Fields().ByName(name)
}

func TestIsSecretFieldCSI(t *testing.T) {
	tests := []struct {
		msg   proto.Message
		field protoreflect.Name
		want  bool
	}{
		{&csi.CreateVolumeRequest{}, "secrets", true},
		{&csi.CreateVolumeRequest{}, "parameters", false},
		{&csi.CreateVolumeRequest{}, "name", false},
		{&csi.CreateVolumeRequest{}, "mutable_parameters", false},
		{&csi.DeleteVolumeRequest{}, "secrets", true},
		{&csi.NodeStageVolumeRequest{}, "secrets", true},
		{&csi.NodeStageVolumeRequest{}, "volume_context", false},
		{&csi.NodePublishVolumeRequest{}, "secrets", true},
		{&csi.ControllerPublishVolumeRequest{}, "secrets", true},
		{&csi.CreateSnapshotRequest{}, "secrets", true},
		{&csi.ControllerExpandVolumeRequest{}, "secrets", true},
		{&csi.NodeExpandVolumeRequest{}, "secrets", true},
		{&csi.ListSnapshotsRequest{}, "secrets", true},
		{&csi.VolumeCapability_MountVolume{}, "mount_flags", false},
	}
	for _, tt := range tests {
		fd := fieldOf(tt.msg, tt.field)
		if got := IsSecretField(fd); got != tt.want {
			t.Errorf("IsSecretField(%s) = %v, want %v", fd.FullName(), got, tt.want)
		}
	}
	if IsSecretField(nil) {
		t.Error("IsSecretField(nil) = true")
	}
}

func TestIsSecretFieldOptions(t *testing.T) {
	md := optionsFile(t)
	tests := []struct {
		field protoreflect.Name
		want  bool
	}{
		{"ext_true", true},        // resolved extension vgtest.vg_csi_secret = true
		{"ext_false", false},      // ... = false
		{"ext_wrong_name", false}, // extension 1059 not named csi_secret
		{"raw_vg", true},          // unknown 1101 varint 1
		{"raw_vg_zero", false},    // unknown 1101 varint 0
		{"raw_csi", true},         // unknown 1059 varint 1
		{"raw_cosi", true},        // unknown 1115 varint 1
		{"raw_bytes", false},      // 1101 with the wrong wire type
		{"raw_other", false},
		{"plain", false},
	}
	for _, tt := range tests {
		fd := md.Fields().ByName(tt.field)
		if got := IsSecretField(fd); got != tt.want {
			t.Errorf("IsSecretField(%s) = %v, want %v", tt.field, got, tt.want)
		}
	}
}

func TestHasSecrets(t *testing.T) {
	tests := []struct {
		name string
		md   protoreflect.MessageDescriptor
		want bool
	}{
		{"CreateVolumeRequest", (&csi.CreateVolumeRequest{}).ProtoReflect().Descriptor(), true},
		{"NodeStageVolumeRequest", (&csi.NodeStageVolumeRequest{}).ProtoReflect().Descriptor(), true},
		{"CreateVolumeResponse", (&csi.CreateVolumeResponse{}).ProtoReflect().Descriptor(), false},
		{"Topology", (&csi.Topology{}).ProtoReflect().Descriptor(), false},
		{"VolumeCapability (mount option values are sensitive)", (&csi.VolumeCapability{}).ProtoReflect().Descriptor(), true},
		{"Topology", (&csi.Topology{}).ProtoReflect().Descriptor(), false},
		{"Timestamp", (&timestamppb.Timestamp{}).ProtoReflect().Descriptor(), false},
		{"recursive Struct", (&structpb.Struct{}).ProtoReflect().Descriptor(), false},
		{"Leaf", testFile.Messages().ByName("Leaf"), true},
		{"All", testFile.Messages().ByName("All"), true},
		{"recursive Node, secret via Leaf", testFile.Messages().ByName("Node"), true},
		{"recursive Loop", testFile.Messages().ByName("Loop"), false},
		{"mutual recursion Ping", testFile.Messages().ByName("Ping"), true},
		{"mutual recursion Pong", testFile.Messages().ByName("Pong"), true},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := HasSecrets(tt.md); got != tt.want {
			t.Errorf("HasSecrets(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWithSecretFields(t *testing.T) {
	params := fieldOf(&csi.CreateVolumeRequest{}, "parameters")
	topo := (&csi.Topology{}).ProtoReflect().Descriptor()
	req := &csi.CreateVolumeRequest{Parameters: map[string]string{"pool": "gold"}}
	if IsSecretField(params) || HasSecrets(topo) {
		t.Fatal("parameters or Topology sensitive by default")
	}
	if got, want := String(req), `{"parameters":{"pool":"gold"}}`; got != want {
		t.Fatalf("default: String = %s, want %s", got, want)
	}

	r := NewRedactor(WithSecretFields("csi.v1.CreateVolumeRequest.parameters", "csi.v1.Topology.segments"))
	if !r.IsSecretField(params) {
		t.Error("parameters not sensitive WithSecretFields")
	}
	if !r.HasSecrets(topo) {
		t.Error("Topology has no secrets WithSecretFields")
	}
	if got, want := r.String(req), `{"parameters":{"pool":"***stripped***"}}`; got != want {
		t.Errorf("WithSecretFields: String = %s, want %s (default plan used?)", got, want)
	}
	if got := r.Values(req); len(got) != 1 || got[0] != "gold" {
		t.Errorf("WithSecretFields: Values = %q", got)
	}

	// The fields are the Redactor's alone: the built-in definition is unchanged.
	if IsSecretField(params) || HasSecrets(topo) {
		t.Error("WithSecretFields left parameters or Topology sensitive by default")
	}
	if got, want := String(req), `{"parameters":{"pool":"gold"}}`; got != want {
		t.Errorf("default after WithSecretFields: String = %s, want %s", got, want)
	}
}

func TestDefaultSensitiveCOSI(t *testing.T) {
	// The COSI packages are not linked in; the names alone must be listed.
	r := builtin
	for _, n := range []protoreflect.FullName{
		"cosi.v1alpha1.CredentialDetails.secrets",
		"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo.access_key_id",
		"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo.access_secret_key",
		"sigs.k8s.io.cosi.v1alpha2.AzureCredentialInfo.access_token",
		"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.access_id",
		"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.access_secret",
		"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.private_key_name",
	} {
		if _, ok := r.marked[n]; !ok {
			t.Errorf("%s is not marked sensitive by default", n)
		}
	}
}

// cosiLikeFile builds, in package pkg, the COSI credential messages with their credential
// fields and a public neighbour each, as a future COSI version would declare them.
func cosiLikeFile(t *testing.T, pkg string) protoreflect.FileDescriptor {
	t.Helper()
	msg := func(name string, fields ...string) *descriptorpb.DescriptorProto {
		d := &descriptorpb.DescriptorProto{Name: proto.String(name)}
		for i, f := range append(fields, "public") {
			d.Field = append(d.Field, field(f, int32(i+1), tString, opt, "", nil))
		}
		return d
	}
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String(strings.ReplaceAll(pkg, ".", "/") + "/cosi.proto"),
		Package: proto.String(pkg),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			msg("S3CredentialInfo", "access_key_id", "access_secret_key"),
			msg("AzureCredentialInfo", "access_token"),
			msg("GcsCredentialInfo", "access_id", "access_secret", "private_key_name"),
		},
	}
	fd, err := protodesc.NewFile(fdp, new(protoregistry.Files))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestIsSecretFieldCOSIByType checks that COSI credentials are secret by message and field
// name in any COSI package, so a new COSI version is covered before anyone lists it, and that
// a look-alike outside COSI is not.
func TestIsSecretFieldCOSIByType(t *testing.T) {
	tests := []struct {
		pkg    string
		secret bool
	}{
		{"sigs.k8s.io.cosi.v1alpha2", true},
		{"sigs.k8s.io.cosi.v1beta1", true},
		{"cosi.v1alpha1", true},
		{"example.storage.v1", false},
	}
	for _, tt := range tests {
		fd := cosiLikeFile(t, tt.pkg)
		msgs := fd.Messages()
		for i := range msgs.Len() {
			fields := msgs.Get(i).Fields()
			for j := range fields.Len() {
				f := fields.Get(j)
				want := tt.secret && f.Name() != "public"
				if got := IsSecretField(f); got != want {
					t.Errorf("IsSecretField(%s) = %v, want %v", f.FullName(), got, want)
				}
			}
		}
	}
}

// TestConcurrentSensitiveFields races walks of the built-in set against
// Redactors with sets of their own being built and used; run with -race.
func TestConcurrentSensitiveFields(t *testing.T) {
	req := typicalCreateVolume()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := NewRedactor()
			for i := range 200 {
				if g == 0 && i%20 == 0 {
					r = NewRedactor(WithSecretFields(protoreflect.FullName("test.unused.field" + string(rune('a'+i%26)))))
				}
				s := r.String(req)
				if len(r.Values(req)) != 2 || r.Scrub("hunter2-s3cr3t", req) != Placeholder || len(s) == 0 {
					t.Error("inconsistent result while Redactors with sensitive fields are built")
					return
				}
				_ = r.HasSecrets(req.ProtoReflect().Descriptor())
				_ = HasSecrets(req.ProtoReflect().Descriptor())
			}
		}()
	}
	wg.Wait()
}

// TestPlansBuiltOncePerType: descriptors are read when a message type is first seen, never
// again per call: logging, scrubbing and redacting known types builds no plan.
func TestPlansBuiltOncePerType(t *testing.T) {
	req := typicalCreateVolume()
	// A set of its own: no plan cached yet.
	r := NewRedactor(WithHeuristic(true), WithSecretFields("test.unused.plans.field"))
	use := func() {
		_ = r.String(req)
		_ = r.Values(req)
		_ = r.Scrub("hunter2-s3cr3t", req)
		_ = r.Redact(req)
	}
	start := plansBuilt.Load()
	use()
	if plansBuilt.Load() == start {
		t.Fatal("no plan built on first use: the counter cannot show anything")
	}
	before := plansBuilt.Load()
	for range 10 {
		use()
	}
	if n := plansBuilt.Load() - before; n != 0 {
		t.Errorf("%d plans built for types already seen", n)
	}
	// A type seen for the first time does build its plan: the counter above can move.
	_ = r.String(&csi.NodeGetCapabilitiesResponse{})
	if plansBuilt.Load() == before {
		t.Error("no plan built for a new type")
	}
}
