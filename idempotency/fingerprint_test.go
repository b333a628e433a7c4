package idempotency

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func mountCap(fsType string, mode csi.VolumeCapability_AccessMode_Mode, flags ...string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType, MountFlags: flags}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func blockCap(mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func zone(z string) *csi.Topology {
	return &csi.Topology{Segments: map[string]string{"topology.kubernetes.io/zone": z, "example.com/rack": "r1"}}
}

// baseCreate is a fully populated CreateVolumeRequest; each case changes one
// thing in a copy.
func baseCreate() *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:          "pvc-1",
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 30, LimitBytes: 2 << 30},
		VolumeCapabilities: []*csi.VolumeCapability{
			mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, "noatime", "discard"),
			blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER),
			mountCap("xfs", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY),
		},
		Parameters: map[string]string{"type": "ssd", "replicas": "3"},
		Secrets:    map[string]string{"password": "hunter2", "user": "admin"},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "snap-1"},
		}},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{zone("a"), zone("b"), zone("c")},
			Preferred: []*csi.Topology{zone("b"), zone("a")},
		},
		MutableParameters: map[string]string{"iops": "3000"},
	}
}

func withCreate(f func(*csi.CreateVolumeRequest)) *csi.CreateVolumeRequest {
	r := baseCreate()
	f(r)
	return r
}

func TestFingerprint(t *testing.T) {
	tests := []struct {
		name  string
		a, b  proto.Message
		omit  []protoreflect.Name
		equal bool
	}{
		{"identical", baseCreate(), baseCreate(), nil, true},
		{"different secret values", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.Secrets = map[string]string{"password": "correct horse", "user": "root"}
		}), nil, true},
		{"secrets absent", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.Secrets = nil }), nil, true},
		{"capabilities reordered", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			c := r.VolumeCapabilities
			c[0], c[1], c[2] = c[2], c[0], c[1]
		}), nil, true},
		{"requisite reordered", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			q := r.AccessibilityRequirements.Requisite
			q[0], q[2] = q[2], q[0]
		}), nil, true},
		{"preferred reordered", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			p := r.AccessibilityRequirements.Preferred
			p[0], p[1] = p[1], p[0]
		}), nil, false},
		{"mount flags reordered", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities[0].GetMount().MountFlags = []string{"discard", "noatime"}
		}), nil, false},
		{"name", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.Name = "pvc-2" }), nil, false},
		{"name omitted", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.Name = "pvc-2" }), []protoreflect.Name{"name"}, true},
		{"omit is top-level only", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities[0].GetMount().FsType = "btrfs"
		}), []protoreflect.Name{"fs_type"}, false},
		{"capacity required", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.CapacityRange.RequiredBytes++ }), nil, false},
		{"capacity limit", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.CapacityRange.LimitBytes = 0 }), nil, false},
		{"capacity range absent", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.CapacityRange = nil }), nil, false},
		{"parameter value", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.Parameters["type"] = "hdd" }), nil, false},
		{"parameter added", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.Parameters["x"] = "" }), nil, false},
		{"parameter key", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.Parameters = map[string]string{"typ": "essd", "replicas": "3"}
		}), nil, false},
		{"source snapshot ID", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource.GetSnapshot().SnapshotId = "snap-2"
		}), nil, false},
		{"source kind", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
				Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: "snap-1"},
			}}
		}), nil, false},
		{"source absent", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.VolumeContentSource = nil }), nil, false},
		{"topology segment", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements.Requisite[1] = zone("d")
		}), nil, false},
		{"topology absent", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.AccessibilityRequirements = nil }), nil, false},
		{"mutable parameters", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.MutableParameters["iops"] = "6000" }), nil, false},
		{"mutable parameters absent", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) { r.MutableParameters = nil }), nil, false},
		{"capability access mode", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities[1].AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		}), nil, false},
		{"capability fs type", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities[2].GetMount().FsType = "ext4"
		}), nil, false},
		{"capability removed", baseCreate(), withCreate(func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities = r.VolumeCapabilities[:2]
		}), nil, false},
		{
			"group snapshot: source order and secrets do not matter",
			&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v1", "v2", "v3"}, Secrets: map[string]string{"k": "1"}},
			&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v3", "v1", "v2"}, Secrets: map[string]string{"k": "2"}},
			nil, true,
		},
		{
			"group snapshot: different sources",
			&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v1", "v2"}},
			&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v1", "v3"}},
			nil, false,
		},
		{
			"group snapshot: parameters",
			&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v1"}, Parameters: map[string]string{"a": "1"}},
			&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v1"}, Parameters: map[string]string{"a": "2"}},
			nil, false,
		},
		{
			"validate: capability order does not matter",
			&csi.ValidateVolumeCapabilitiesRequest{VolumeId: "v", VolumeCapabilities: []*csi.VolumeCapability{
				blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER),
			}},
			&csi.ValidateVolumeCapabilitiesRequest{VolumeId: "v", VolumeCapabilities: []*csi.VolumeCapability{
				mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER), blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER),
			}},
			nil, true,
		},
		{
			"snapshot: secrets do not matter, source does",
			&csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v1", Secrets: map[string]string{"k": "1"}},
			&csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v1"},
			nil, true,
		},
		{
			"snapshot: different source",
			&csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v1"},
			&csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v2"},
			nil, false,
		},
		{"message type is part of the fingerprint", &csi.DeleteVolumeRequest{}, &csi.DeleteSnapshotRequest{}, nil, false},
		{"typed nil is the empty message", (*csi.CreateVolumeRequest)(nil), &csi.CreateVolumeRequest{}, nil, true},
		{"empty capacity range is no capacity range", &csi.CreateVolumeRequest{Name: "v", CapacityRange: &csi.CapacityRange{}}, &csi.CreateVolumeRequest{Name: "v"}, nil, true},
		{"empty topology requirement is no requirement", &csi.CreateVolumeRequest{Name: "v", AccessibilityRequirements: &csi.TopologyRequirement{}}, &csi.CreateVolumeRequest{Name: "v"}, nil, true},
		{"empty block capability still counts: it is a oneof choice",
			&csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}},
			&csi.VolumeCapability{}, nil, false},
		{"empty map is no map", &csi.CreateVolumeRequest{Parameters: map[string]string{}}, &csi.CreateVolumeRequest{}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fa, fb := Fingerprint(tt.a, tt.omit...), Fingerprint(tt.b, tt.omit...)
			if (fa == fb) != tt.equal {
				t.Errorf("Fingerprint a = %s, b = %s, want equal = %v", fa, fb, tt.equal)
			}
			for _, f := range []string{fa, fb} {
				if raw, err := base64.RawURLEncoding.DecodeString(f); err != nil || len(raw) != 16 {
					t.Errorf("fingerprint %q is not 16 bytes of base64url: %v", f, err)
				}
			}
		})
	}
}

// TestFingerprintGolden pins the encoding: if this fails, fingerprints that
// backends have stored would stop matching. Change fingerprintDomain (the
// version) together with the expected value, never the value alone.
func TestFingerprintGolden(t *testing.T) {
	const want = "FCrd_Ue5YnO6-bf9YzeFng"
	if got := Fingerprint(baseCreate()); got != want {
		t.Errorf("Fingerprint(baseCreate()) = %q, want %q", got, want)
	}
}

func TestFingerprintNil(t *testing.T) {
	if a, b := Fingerprint(nil), Fingerprint(nil); a != b || a == "" {
		t.Errorf("Fingerprint(nil) = %q, %q", a, b)
	}
}

// TestCanonicalIsProtoEncoding checks that, for messages with no secret and
// no multi-element set field, the canonical encoding is a faithful protobuf
// encoding of the message (it parses back to an equal message) and a fixed
// point: the encoder only leaves things out or sorts set elements; it has no
// format of its own. (It is not byte-identical to proto.Marshal, which puts
// oneof members after the other fields; canonical order is by field number.)
func TestCanonicalIsProtoEncoding(t *testing.T) {
	tests := []struct {
		name string
		m    proto.Message
	}{
		{"create volume", withCreate(func(r *csi.CreateVolumeRequest) {
			r.Secrets = nil
			r.VolumeCapabilities = r.VolumeCapabilities[:1]
			r.AccessibilityRequirements.Requisite = r.AccessibilityRequirements.Requisite[:1]
		})},
		{"map with empty key and value", &csi.CreateVolumeRequest{Parameters: map[string]string{"": "", "a": ""}}},
		{"node stage", &csi.NodeStageVolumeRequest{
			VolumeId: "v", StagingTargetPath: "/s", PublishContext: map[string]string{"dev": "/dev/sda"},
			VolumeCapability: blockCap(csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER),
			VolumeContext:    map[string]string{"b": "2", "a": "1"},
		}},
		{"stats response: enums, int64", &csi.NodeGetVolumeStatsResponse{
			Usage: []*csi.VolumeUsage{
				{Available: 1, Total: 3, Used: 2, Unit: csi.VolumeUsage_BYTES},
				{Available: -1, Total: 1 << 40, Unit: csi.VolumeUsage_INODES},
			},
		}},
		{"bool", &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n", Readonly: true}},
		{"snapshot with timestamp", &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
			SnapshotId: "s", SourceVolumeId: "v", ReadyToUse: true, SizeBytes: 7,
			CreationTime: timestamppb.New(time.Unix(1700000000, 5)),
		}}},
		{"list volumes response", &csi.ListVolumesResponse{
			Entries: []*csi.ListVolumesResponse_Entry{
				{Volume: &csi.Volume{VolumeId: "b", CapacityBytes: 5}, Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: []string{"n2", "n1"}}},
				{Volume: &csi.Volume{VolumeId: "a"}},
			},
			NextToken: "t",
		}},
		{"capabilities", &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
			{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME}}},
			{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{}}},
		}}},
		{"group snapshot, one source", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"v"}}},
		{"empty", &csi.CreateVolumeRequest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := appendCanonical(nil, tt.m.ProtoReflect(), nil)
			back := tt.m.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(enc, back); err != nil {
				t.Fatalf("canonical encoding does not parse: %v", err)
			}
			if !proto.Equal(back, tt.m) {
				t.Errorf("canonical encoding parses to %v, want %v", back, tt.m)
			}
			if again := appendCanonical(nil, back.ProtoReflect(), nil); !bytes.Equal(again, enc) {
				t.Errorf("re-encoding differs:\n%x\n%x", again, enc)
			}
		})
	}
}

// nestedSecretType builds, at run time, a message type whose secret sits one
// level down (CSI itself only has top-level secret maps), to show secrets
// are excluded at every depth.
func nestedSecretType(t testing.TB) (outer, inner protoreflect.MessageDescriptor) {
	t.Helper()
	secret := &descriptorpb.FieldOptions{}
	proto.SetExtension(secret, csi.E_CsiSecret, true)
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	msg := descriptorpb.FieldDescriptorProto_TYPE_MESSAGE.Enum()
	optional := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("csikit_fingerprint_test.proto"),
		Package:    proto.String("csikit.test"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"csi.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			{
				Name: proto.String("Inner"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("token"), Number: proto.Int32(1), Type: str, Label: optional, JsonName: proto.String("token"), Options: secret},
					{Name: proto.String("plain"), Number: proto.Int32(2), Type: str, Label: optional, JsonName: proto.String("plain")},
				},
			},
			{
				Name: proto.String("Outer"),
				Field: []*descriptorpb.FieldDescriptorProto{
					{Name: proto.String("inner"), Number: proto.Int32(1), Type: msg, Label: optional, TypeName: proto.String(".csikit.test.Inner"), JsonName: proto.String("inner")},
				},
			},
		},
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatalf("build test descriptor: %v", err)
	}
	return fd.Messages().ByName("Outer"), fd.Messages().ByName("Inner")
}

func TestFingerprintNestedSecret(t *testing.T) {
	outerD, innerD := nestedSecretType(t)
	build := func(token, plain string) proto.Message {
		inner := dynamicpb.NewMessage(innerD)
		inner.Set(innerD.Fields().ByName("token"), protoreflect.ValueOfString(token))
		inner.Set(innerD.Fields().ByName("plain"), protoreflect.ValueOfString(plain))
		outer := dynamicpb.NewMessage(outerD)
		outer.Set(outerD.Fields().ByName("inner"), protoreflect.ValueOfMessage(inner))
		return outer
	}
	if a, b := Fingerprint(build("secret-1", "x")), Fingerprint(build("secret-2", "x")); a != b {
		t.Errorf("nested secret changed the fingerprint: %s != %s", a, b)
	}
	if a, b := Fingerprint(build("s", "x")), Fingerprint(build("s", "y")); a == b {
		t.Errorf("nested plain field did not change the fingerprint")
	}
}

func shuffled[T any](rng *rand.Rand, s []T) []T {
	out := append([]T(nil), s...)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func FuzzFingerprint(f *testing.F) {
	f.Add("pvc-1", int64(1<<30), "ext4", "noatime", "hunter2", "other", "type", "ssd", uint64(1))
	f.Add("", int64(0), "", "", "", "", "", "", uint64(0))
	f.Add("名前", int64(-1), "xfs", "ro,discard", "a\x00b", "\xff\xfe", "k", "\x80", uint64(42))
	f.Fuzz(func(t *testing.T, name string, capacity int64, fsType, flag, secret1, secret2, pk, pv string, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
		caps := []*csi.VolumeCapability{
			mountCap(fsType, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, flag, fsType),
			blockCap(csi.VolumeCapability_AccessMode_Mode(capacity % 7)),
			mountCap(fsType+flag, csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER),
			mountCap(fsType, csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, flag, fsType),
		}
		requisite := []*csi.Topology{zone(pv), zone(pk), zone(name)}
		build := func(secrets map[string]string, caps []*csi.VolumeCapability, requisite []*csi.Topology) *csi.CreateVolumeRequest {
			return &csi.CreateVolumeRequest{
				Name:                      name,
				CapacityRange:             &csi.CapacityRange{RequiredBytes: capacity},
				VolumeCapabilities:        caps,
				Parameters:                map[string]string{pk: pv, pv: pk},
				Secrets:                   secrets,
				AccessibilityRequirements: &csi.TopologyRequirement{Requisite: requisite, Preferred: []*csi.Topology{zone(pk), zone(pv)}},
				MutableParameters:         map[string]string{pk: secret1},
			}
		}
		want := Fingerprint(build(map[string]string{pk: secret1}, caps, requisite))
		if again := Fingerprint(build(map[string]string{pk: secret1}, caps, requisite)); again != want {
			t.Fatalf("unstable: %s then %s", want, again)
		}
		if got := Fingerprint(build(map[string]string{pk: secret2, secret1: secret2}, caps, requisite)); got != want {
			t.Fatalf("secret values changed the fingerprint: %s != %s", got, want)
		}
		if got := Fingerprint(build(nil, shuffled(rng, caps), shuffled(rng, requisite))); got != want {
			t.Fatalf("capability or requisite order changed the fingerprint: %s != %s", got, want)
		}
		if got := Fingerprint(build(nil, caps, requisite), "name"); name != "" && got == want {
			t.Fatalf("omitting a set name did not change the fingerprint")
		}
	})
}
