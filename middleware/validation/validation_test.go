package validation

import (
	"strconv"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func cv(f func(*csi.CreateVolumeRequest)) proto.Message {
	r := validCreateVolume()
	f(r)
	return r
}

func cp(f func(*csi.ControllerPublishVolumeRequest)) proto.Message {
	r := validControllerPublish()
	f(r)
	return r
}

func np(f func(*csi.NodePublishVolumeRequest)) proto.Message {
	r := &csi.NodePublishVolumeRequest{VolumeId: volID, TargetPath: "/mnt/t", VolumeCapability: mountCap()}
	f(r)
	return r
}

func rep(c byte, n int) string { return strings.Repeat(string(c), n) }

// mapOfSize returns a map whose keys and values add up to n bytes.
func mapOfSize(n int) map[string]string {
	m := map[string]string{}
	for i := 0; n > 0; i++ {
		k := string(rune('a'+i%26)) + string(rune('a'+i/26))
		v := rep('v', min(100, max(0, n-len(k))))
		m[k] = v
		n -= len(k) + len(v)
	}
	return m
}

func flagsOfSize(n int) []string {
	var out []string
	for n > 0 {
		l := min(n, 500)
		out = append(out, rep('f', l))
		n -= l
	}
	return out
}

func withTopology(segs map[string]string) proto.Message {
	return cv(func(r *csi.CreateVolumeRequest) {
		r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: segs}}}
	})
}

func manyTopologies(n int, zone func(i int) string) []*csi.Topology {
	out := make([]*csi.Topology, n)
	for i := range out {
		out[i] = topo(zone(i))
	}
	return out
}

type violationCase struct {
	name string
	msg  proto.Message
	resp bool // check with Response instead of Request
	code codes.Code
	want string // substring of the status message; "" means the message must be valid
}

func requestCases() []violationCase {
	ia, oor := codes.InvalidArgument, codes.OutOfRange
	return []violationCase{
		// REQUIRED, by kind.
		{"name missing", cv(func(r *csi.CreateVolumeRequest) { r.Name = "" }), false, ia, "CreateVolume: name: required field is missing"},
		{"capabilities missing", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities = nil }), false, ia, "CreateVolume: volume_capabilities: required field is missing"},
		{"access mode missing", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[1].AccessMode = nil }), false, ia, "CreateVolume: volume_capabilities[1].access_mode: required field is missing"},
		{"access mode unknown", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[1].AccessMode.Mode = 0 }), false, ia, "CreateVolume: volume_capabilities[1].access_mode.mode: required field is missing"},
		{"access mode undeclared", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].AccessMode.Mode = 99 }), false, ia, "CreateVolume: volume_capabilities[0].access_mode.mode: unknown enum value"},
		{"access type missing", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].AccessType = nil }), false, ia, "CreateVolume: volume_capabilities[0].access_type: required field is missing (set one of block, mount)"},
		{"nil capability element", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[1] = nil }), false, ia, "CreateVolume: volume_capabilities[1].access_mode: required field is missing"},
		{"content source empty", cv(func(r *csi.CreateVolumeRequest) { r.VolumeContentSource = &csi.VolumeContentSource{} }), false, ia, "CreateVolume: volume_content_source.type: required field is missing (set one of snapshot, volume)"},
		{"content source snapshot id", cv(func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{}}}
		}), false, ia, "CreateVolume: volume_content_source.snapshot.snapshot_id: required field is missing"},
		{"content source volume id", cv(func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{}}}
		}), false, ia, "CreateVolume: volume_content_source.volume.volume_id: required field is missing"},
		{"delete volume id", &csi.DeleteVolumeRequest{}, false, ia, "DeleteVolume: volume_id: required field is missing"},
		{"publish node id", cp(func(r *csi.ControllerPublishVolumeRequest) { r.NodeId = "" }), false, ia, "ControllerPublishVolume: node_id: required field is missing"},
		{"publish capability", cp(func(r *csi.ControllerPublishVolumeRequest) { r.VolumeCapability = nil }), false, ia, "ControllerPublishVolume: volume_capability: required field is missing"},
		{"publish readonly false is fine", cp(func(r *csi.ControllerPublishVolumeRequest) { r.Readonly = false }), false, 0, ""},
		{"unpublish from all nodes", &csi.ControllerUnpublishVolumeRequest{VolumeId: volID}, false, 0, ""},
		{"publish to a 256-byte node id", cp(func(r *csi.ControllerPublishVolumeRequest) { r.NodeId = rep('n', 256) }), false, 0, ""},
		{"publish to a 257-byte node id", cp(func(r *csi.ControllerPublishVolumeRequest) { r.NodeId = rep('n', 257) }), false, ia, "ControllerPublishVolume: node_id: 257 bytes, the limit is 256"},
		{"unpublish from a 256-byte node id", &csi.ControllerUnpublishVolumeRequest{VolumeId: volID, NodeId: rep('n', 256)}, false, 0, ""},
		{"unpublish volume id", &csi.ControllerUnpublishVolumeRequest{NodeId: nodeID}, false, ia, "ControllerUnpublishVolume: volume_id: required field is missing"},
		{"validate capabilities", &csi.ValidateVolumeCapabilitiesRequest{VolumeId: volID}, false, ia, "ValidateVolumeCapabilities: volume_capabilities: required field is missing"},
		{"modify mutable parameters", &csi.ControllerModifyVolumeRequest{VolumeId: volID}, false, ia, "ControllerModifyVolume: mutable_parameters: required field is missing"},
		{"group snapshot sources", &csi.CreateVolumeGroupSnapshotRequest{Name: "g"}, false, ia, "CreateVolumeGroupSnapshot: source_volume_ids: required field is missing"},
		{"group snapshot name", &csi.CreateVolumeGroupSnapshotRequest{SourceVolumeIds: []string{"v"}}, false, ia, "CreateVolumeGroupSnapshot: name: required field is missing"},
		{"delete group snapshot ids left to the backend", &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: groupID}, false, 0, ""},
		{"get group snapshot ids left to the backend", &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: groupID}, false, 0, ""},
		{"get group snapshot id", &csi.GetVolumeGroupSnapshotRequest{SnapshotIds: []string{"s"}}, false, ia, "GetVolumeGroupSnapshot: group_snapshot_id: required field is missing"},
		{"snapshot source", &csi.CreateSnapshotRequest{Name: "s"}, false, ia, "CreateSnapshot: source_volume_id: required field is missing"},
		{"snapshot name", &csi.CreateSnapshotRequest{SourceVolumeId: volID}, false, ia, "CreateSnapshot: name: required field is missing"},
		{"delete snapshot id", &csi.DeleteSnapshotRequest{}, false, ia, "DeleteSnapshot: snapshot_id: required field is missing"},
		{"get snapshot id", &csi.GetSnapshotRequest{}, false, ia, "GetSnapshot: snapshot_id: required field is missing"},
		{"expand capacity", &csi.ControllerExpandVolumeRequest{VolumeId: volID}, false, ia, "ControllerExpandVolume: capacity_range: required field is missing"},
		{"get volume id", &csi.ControllerGetVolumeRequest{}, false, ia, "ControllerGetVolume: volume_id: required field is missing"},
		{"volume health id", &csi.ControllerGetVolumeHealthRequest{}, false, ia, "ControllerGetVolumeHealth: volume_id: required field is missing"},
		{"node volume health id", &csi.NodeGetVolumeHealthRequest{}, false, ia, "NodeGetVolumeHealth: volume_id: required field is missing"},
		{"stage path", &csi.NodeStageVolumeRequest{VolumeId: volID, VolumeCapability: mountCap()}, false, ia, "NodeStageVolume: staging_target_path: required field is missing"},
		{"stage capability", &csi.NodeStageVolumeRequest{VolumeId: volID, StagingTargetPath: "/s"}, false, ia, "NodeStageVolume: volume_capability: required field is missing"},
		{"unstage path", &csi.NodeUnstageVolumeRequest{VolumeId: volID}, false, ia, "NodeUnstageVolume: staging_target_path: required field is missing"},
		{"publish target", np(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "" }), false, ia, "NodePublishVolume: target_path: required field is missing"},
		{"publish without staging path", np(func(r *csi.NodePublishVolumeRequest) {}), false, 0, ""},
		{"unpublish target", &csi.NodeUnpublishVolumeRequest{VolumeId: volID}, false, ia, "NodeUnpublishVolume: target_path: required field is missing"},
		{"stats path", &csi.NodeGetVolumeStatsRequest{VolumeId: volID}, false, ia, "NodeGetVolumeStats: volume_path: required field is missing"},
		{"node expand path", &csi.NodeExpandVolumeRequest{VolumeId: volID}, false, ia, "NodeExpandVolume: volume_path: required field is missing"},
		{"delta target", &csi.GetMetadataDeltaRequest{BaseSnapshotId: "a"}, false, ia, "GetMetadataDelta: target_snapshot_id: required field is missing"},
		{"allocated snapshot", &csi.GetMetadataAllocatedRequest{}, false, ia, "GetMetadataAllocated: snapshot_id: required field is missing"},
		{"typed nil request", (*csi.DeleteVolumeRequest)(nil), false, ia, "DeleteVolume: volume_id: required field is missing"},

		// Size limits.
		{"name 128", cv(func(r *csi.CreateVolumeRequest) { r.Name = rep('n', 128) }), false, 0, ""},
		{"name 129", cv(func(r *csi.CreateVolumeRequest) { r.Name = rep('n', 129) }), false, ia, "CreateVolume: name: 129 bytes, the limit is 128"},
		{"id 129", &csi.DeleteVolumeRequest{VolumeId: rep('v', 129)}, false, ia, "DeleteVolume: volume_id: 129 bytes, the limit is 128"},
		{"nested id 129", cv(func(r *csi.CreateVolumeRequest) {
			r.VolumeContentSource.Type = &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: rep('v', 129)}}
		}), false, ia, "CreateVolume: volume_content_source.volume.volume_id: 129 bytes, the limit is 128"},
		{"fs type 129", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].GetMount().FsType = rep('x', 129) }), false, ia, "CreateVolume: volume_capabilities[0].mount.fs_type: 129 bytes, the limit is 128"},
		{"token 129", &csi.ListVolumesRequest{StartingToken: rep('t', 129)}, false, ia, "ListVolumes: starting_token: 129 bytes, the limit is 128"},
		{"parameters 4096", cv(func(r *csi.CreateVolumeRequest) { r.Parameters = mapOfSize(4096) }), false, 0, ""},
		{"parameters 4120", cv(func(r *csi.CreateVolumeRequest) { r.Parameters = mapOfSize(4120) }), false, ia, "CreateVolume: parameters: 4120 bytes in total, the limit is 4096"},
		{"map entry over 128 is fine", cv(func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{rep('k', 200): rep('v', 1000)} }), false, 0, ""},
		{"secrets too big", cv(func(r *csi.CreateVolumeRequest) { r.Secrets = mapOfSize(5000) }), false, ia, "CreateVolume: secrets: 5000 bytes in total, the limit is 4096"},
		{"volume context too big", cp(func(r *csi.ControllerPublishVolumeRequest) { r.VolumeContext = mapOfSize(4097) }), false, ia, "ControllerPublishVolume: volume_context: 4097 bytes in total, the limit is 4096"},
		{"mount flag 200 bytes", cv(func(r *csi.CreateVolumeRequest) {
			r.VolumeCapabilities[0].GetMount().MountFlags = []string{rep('f', 200)}
		}), false, 0, ""},
		{"mount flags 4096", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].GetMount().MountFlags = flagsOfSize(4096) }), false, 0, ""},
		{"mount flags 4097", cv(func(r *csi.CreateVolumeRequest) { r.VolumeCapabilities[0].GetMount().MountFlags = flagsOfSize(4097) }), false, ia, "CreateVolume: volume_capabilities[0].mount.mount_flags: 4097 bytes in total, the limit is 4096"},
		{"repeated id 129", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"a", rep('v', 129)}}, false, ia, "CreateVolumeGroupSnapshot: source_volume_ids[1]: 129 bytes, the limit is 128"},
		{"snapshot ids 129", &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: "g", SnapshotIds: []string{rep('s', 129)}}, false, ia, "DeleteVolumeGroupSnapshot: snapshot_ids[0]: 129 bytes, the limit is 128"},
		{"target path 4096", np(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "/" + rep('p', 4095) }), false, 0, ""},
		{"target path 4097", np(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "/" + rep('p', 4096) }), false, ia, "NodePublishVolume: target_path: 4097 bytes, the limit is 4096"},
		{"target path relative", np(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = "var/lib/x" }), false, ia, "NodePublishVolume: target_path: must be an absolute path"},
		{"staging path relative", np(func(r *csi.NodePublishVolumeRequest) { r.StagingTargetPath = "./s" }), false, ia, "NodePublishVolume: staging_target_path: must be an absolute path"},
		{"stage path relative", &csi.NodeStageVolumeRequest{VolumeId: volID, StagingTargetPath: "s", VolumeCapability: mountCap()}, false, ia, "NodeStageVolume: staging_target_path: must be an absolute path"},
		{"stats path relative is left to the driver (NOT_FOUND)", &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: "v"}, false, 0, ""},
		{"node expand path relative is left to the driver (NOT_FOUND)", &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: "v"}, false, 0, ""},
		{"stats staging relative", &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: "/v", StagingTargetPath: "s"}, false, ia, "NodeGetVolumeStats: staging_target_path: must be an absolute path"},
		{"health publish path relative", &csi.NodeGetVolumeHealthRequest{VolumeId: volID, VolumePublishPath: "p"}, false, ia, "NodeGetVolumeHealth: volume_publish_path: must be an absolute path"},
		{"node expand path relative", &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: "/v", StagingTargetPath: "s"}, false, ia, "NodeExpandVolume: staging_target_path: must be an absolute path"},

		// CapacityRange.
		{"capacity empty", cv(func(r *csi.CreateVolumeRequest) { r.CapacityRange = &csi.CapacityRange{} }), false, ia, "CreateVolume: capacity_range: at least one of required_bytes and limit_bytes must be set"},
		{"capacity required negative", cv(func(r *csi.CreateVolumeRequest) { r.CapacityRange.RequiredBytes = -1 }), false, ia, "CreateVolume: capacity_range.required_bytes: must not be negative"},
		{"capacity limit negative", cv(func(r *csi.CreateVolumeRequest) { r.CapacityRange.LimitBytes = -5 }), false, ia, "CreateVolume: capacity_range.limit_bytes: must not be negative"},
		{"capacity limit below required", cv(func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 10, LimitBytes: 9}
		}), false, ia, "CreateVolume: capacity_range.limit_bytes: must not be less than required_bytes"},
		{"capacity exact", cv(func(r *csi.CreateVolumeRequest) {
			r.CapacityRange = &csi.CapacityRange{RequiredBytes: 10, LimitBytes: 10}
		}), false, 0, ""},
		{"capacity limit only", cv(func(r *csi.CreateVolumeRequest) { r.CapacityRange = &csi.CapacityRange{LimitBytes: 10} }), false, 0, ""},
		{"capacity omitted", cv(func(r *csi.CreateVolumeRequest) { r.CapacityRange = nil }), false, 0, ""},
		{"expand capacity empty", &csi.ControllerExpandVolumeRequest{VolumeId: volID, CapacityRange: &csi.CapacityRange{}}, false, ia, "ControllerExpandVolume: capacity_range: at least one of"},
		{"node expand capacity", &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: "/v", CapacityRange: &csi.CapacityRange{RequiredBytes: 5, LimitBytes: 1}}, false, ia, "NodeExpandVolume: capacity_range.limit_bytes: must not be less than required_bytes"},

		// No negatives; starting_offset is OUT_OF_RANGE.
		{"max entries", &csi.ListVolumesRequest{MaxEntries: -1}, false, ia, "ListVolumes: max_entries: must not be negative"},
		{"snapshots max entries", &csi.ListSnapshotsRequest{MaxEntries: -1}, false, ia, "ListSnapshots: max_entries: must not be negative"},
		{"health max entries", &csi.ControllerListVolumeHealthRequest{MaxEntries: -3}, false, ia, "ControllerListVolumeHealth: max_entries: must not be negative"},
		{"max results", &csi.GetMetadataAllocatedRequest{SnapshotId: "s", MaxResults: -1}, false, ia, "GetMetadataAllocated: max_results: must not be negative"},
		{"allocated offset", &csi.GetMetadataAllocatedRequest{SnapshotId: "s", StartingOffset: -1}, false, oor, "GetMetadataAllocated: starting_offset: must not be negative"},
		{"delta offset", &csi.GetMetadataDeltaRequest{BaseSnapshotId: "a", TargetSnapshotId: "b", StartingOffset: -4096}, false, oor, "GetMetadataDelta: starting_offset: must not be negative"},
		{"offset zero", &csi.GetMetadataDeltaRequest{BaseSnapshotId: "a", TargetSnapshotId: "b"}, false, 0, ""},

		// Names.
		{"name NUL", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\x00b" }), false, ia, "CreateVolume: name: must not contain control characters"},
		{"name ESC", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\x1bb" }), false, ia, "CreateVolume: name: must not contain control characters"},
		{"name VT", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\vb" }), false, ia, "CreateVolume: name: must not contain control characters"},
		{"name DEL", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\x7f" }), false, ia, "CreateVolume: name: must not contain control characters"},
		{"name C1", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\u0085b" }), false, ia, "CreateVolume: name: must not contain control characters"},
		{"name U+00A0 fine", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\u00a0b \t\r\n\u4e2d" }), false, 0, ""},
		{"name bad UTF-8", cv(func(r *csi.CreateVolumeRequest) { r.Name = "a\xffb" }), false, ia, "CreateVolume: name: must be valid UTF-8"},
		{"snapshot name control", &csi.CreateSnapshotRequest{SourceVolumeId: volID, Name: "\x01"}, false, ia, "CreateSnapshot: name: must not contain control characters"},
		{"group name control", &csi.CreateVolumeGroupSnapshotRequest{Name: "g\u009f", SourceVolumeIds: []string{"v"}}, false, ia, "CreateVolumeGroupSnapshot: name: must not contain control characters"},
		{"ids may hold controls", &csi.DeleteVolumeRequest{VolumeId: "a\x00b"}, false, 0, ""},

		// Secrets.
		{"secret key empty", cv(func(r *csi.CreateVolumeRequest) { r.Secrets[""] = "x" }), false, ia, `CreateVolume: secrets[""]: secret key must be non-empty and contain only [A-Za-z0-9._-]`},
		{"secret key space", cp(func(r *csi.ControllerPublishVolumeRequest) { r.Secrets["bad key"] = "x" }), false, ia, `ControllerPublishVolume: secrets["bad key"]: secret key`},
		{"secret key slash", &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: "/v", Secrets: map[string]string{"a/b": "x"}}, false, ia, `NodeExpandVolume: secrets["a/b"]: secret key`},
		{"secret key long", &csi.DeleteVolumeRequest{VolumeId: volID, Secrets: map[string]string{rep('k', 70) + "!": "x"}}, false, ia, `DeleteVolume: secrets["` + rep('k', 64) + `"...]: secret key`},
		{"secret value UTF-8", cv(func(r *csi.CreateVolumeRequest) { r.Secrets["password"] = "pa\xffss-word-1234" }), false, ia, `CreateVolume: secrets["password"]: secret value must be valid UTF-8`},
		{"smallest bad key named", &csi.DeleteVolumeRequest{VolumeId: volID, Secrets: map[string]string{"z z": "", "b b": "", "a": "", "c c": ""}}, false, ia, `DeleteVolume: secrets["b b"]`},
		{"parameters keys are free", cv(func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{"bad key/\u00fc": "\x00"} }), false, 0, ""},
		{"empty secret value fine", &csi.DeleteVolumeRequest{VolumeId: volID, Secrets: map[string]string{"k": ""}}, false, 0, ""},

		// Topology.
		{"topology good", withTopology(map[string]string{"topology.kubernetes.io/zone": "us-east-1a", "Rack_1.x": "R-3_b.c", "z": "9"}), false, 0, ""},
		{"topology duplicate", withTopology(map[string]string{"Zone": "a", "zone": "b"}), false, ia, `CreateVolume: accessibility_requirements.requisite[0].segments["zone"]: duplicate topology key: keys are case-insensitive`},
		{"topology duplicate prefix", withTopology(map[string]string{"ex.com/Zone": "a", "ex.com/ZONE": "b", "x": "y"}), false, ia, `segments["ex.com/Zone"]: duplicate topology key`},
		{"topology name start", withTopology(map[string]string{"-zone": "a"}), false, ia, `segments["-zone"]: topology key name must begin and end with`},
		{"topology name empty", withTopology(map[string]string{"example.com/": "a"}), false, ia, `segments["example.com/"]: topology key name must not be empty`},
		{"topology key empty", withTopology(map[string]string{"": "a"}), false, ia, `segments[""]: topology key name must not be empty`},
		{"topology prefix empty", withTopology(map[string]string{"/zone": "a"}), false, ia, `segments["/zone"]: topology key prefix before '/' must not be empty`},
		{"topology prefix upper", withTopology(map[string]string{"Example.com/zone": "a"}), false, ia, `topology key prefix must be a lower-case domain name`},
		{"topology prefix label", withTopology(map[string]string{"a..b/zone": "a"}), false, ia, `topology key prefix must be a lower-case domain name`},
		{"topology prefix dash end", withTopology(map[string]string{"a-.b/zone": "a"}), false, ia, `topology key prefix must be a lower-case domain name`},
		{"topology prefix 63", withTopology(map[string]string{rep('p', 63) + "/zone": "a"}), false, 0, ""},
		{"topology prefix 64", withTopology(map[string]string{rep('p', 64) + "/zone": "a"}), false, ia, `topology key prefix must be 63 characters or less`},
		{"topology two slashes", withTopology(map[string]string{"a/b/c": "a"}), false, ia, `segments["a/b/c"]: topology key name must begin and end`},
		{"topology name 63", withTopology(map[string]string{rep('n', 63): "a"}), false, 0, ""},
		{"topology name 64", withTopology(map[string]string{rep('n', 64): "a"}), false, ia, `topology key name must be 63 characters or less`},
		{"topology value empty", withTopology(map[string]string{"zone": ""}), false, ia, `segments["zone"]: topology value must not be empty`},
		{"topology value chars", withTopology(map[string]string{"zone": "a b"}), false, ia, `segments["zone"]: topology value must begin and end with [a-zA-Z0-9] and contain only [-_.a-zA-Z0-9]`},
		{"topology value end", withTopology(map[string]string{"zone": "a-"}), false, ia, `topology value must begin and end`},
		{"topology value 64", withTopology(map[string]string{"zone": rep('v', 64)}), false, ia, `segments["zone"]: topology value must be 63 characters or less`},
		{"capacity topology", &csi.GetCapacityRequest{AccessibleTopology: &csi.Topology{Segments: map[string]string{"zone": "_x"}}}, false, ia, `GetCapacity: accessible_topology.segments["zone"]: topology value`},
		{"empty requirement counts as absent (Nomad, see exceptions.go)", cv(func(r *csi.CreateVolumeRequest) { r.AccessibilityRequirements = &csi.TopologyRequirement{} }), false, 0, ""},
		{"preferred outside requisite", cv(func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements.Preferred = []*csi.Topology{topo("Z1"), topo("Z9")}
		}), false, ia, "CreateVolume: accessibility_requirements.preferred[1]: must also be one of the requisite topologies"},
		{"preferred subset differs", cv(func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements.Preferred = []*csi.Topology{{Segments: map[string]string{"zone": "Z1"}}}
		}), false, ia, "accessibility_requirements.preferred[0]: must also be one of the requisite topologies"},
		{"preferred key case", cv(func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements.Preferred = []*csi.Topology{{Segments: map[string]string{"topology.example.com/region": "R1", "ZONE": "Z2"}}}
		}), false, 0, ""},
		{"preferred only", cv(func(r *csi.CreateVolumeRequest) {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Preferred: []*csi.Topology{topo("Z7")}}
		}), false, 0, ""},
		{"many topologies", cv(func(r *csi.CreateVolumeRequest) {
			zone := func(i int) string { return "Z" + strings.Repeat("1", i+1) }
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: manyTopologies(40, zone), Preferred: manyTopologies(30, zone)}
		}), false, 0, ""},
		{"many topologies outside", cv(func(r *csi.CreateVolumeRequest) {
			zone := func(i int) string { return "Z" + strings.Repeat("1", i+1) }
			pref := manyTopologies(30, zone)
			pref[17] = topo("elsewhere")
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: manyTopologies(40, zone), Preferred: pref}
		}), false, ia, "accessibility_requirements.preferred[17]: must also be one of the requisite topologies"},
		{"empty snapshot requirement counts as absent (Nomad, see exceptions.go)", &csi.CreateSnapshotRequest{SourceVolumeId: volID, Name: "s", AccessibilityRequirements: &csi.TopologyRequirement{}}, false, 0, ""},
		{"snapshot requirement with a bad topology is still checked", &csi.CreateSnapshotRequest{SourceVolumeId: volID, Name: "s", AccessibilityRequirements: &csi.TopologyRequirement{Preferred: []*csi.Topology{{Segments: map[string]string{"zone": "a b"}}}}}, false, ia, `CreateSnapshot: accessibility_requirements.preferred[0].segments["zone"]: topology value`},

		// Messages outside csi.v1 are not checked.
		{"non-CSI message", wrapperspb.String(rep('x', 1000)), false, 0, ""},
		{"timestamp", timestamppb.New(timestamppb.Now().AsTime().AddDate(-100, 0, 0)), false, 0, ""},
	}
}

func responseCases() []violationCase {
	in := codes.Internal
	caps := func(c *csi.PluginCapability) proto.Message {
		return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{c}}
	}
	return []violationCase{
		{"volume missing", &csi.CreateVolumeResponse{}, true, in, "CreateVolume: plugin bug: CreateVolumeResponse.volume: required field is missing"},
		{"volume id missing", &csi.CreateVolumeResponse{Volume: &csi.Volume{}}, true, in, "CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_id: required field is missing"},
		{"volume capacity negative", &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "v", CapacityBytes: -1}}, true, in, "CreateVolume: plugin bug: CreateVolumeResponse.volume.capacity_bytes: must not be negative"},
		{"volume topology", &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "v", AccessibleTopology: []*csi.Topology{topo("Z1"), {Segments: map[string]string{"a": "b", "A": "c"}}}}}, true, in,
			`plugin bug: CreateVolumeResponse.volume.accessible_topology[1].segments["a"]: duplicate topology key`},
		{"plugin name missing", &csi.GetPluginInfoResponse{VendorVersion: "1"}, true, in, "plugin bug: GetPluginInfoResponse.name: required field is missing"},
		{"vendor version missing", &csi.GetPluginInfoResponse{Name: "a.b"}, true, in, "plugin bug: GetPluginInfoResponse.vendor_version: required field is missing"},
		{"plugin name 63", &csi.GetPluginInfoResponse{Name: rep('a', 63), VendorVersion: "1"}, true, 0, ""},
		{"plugin name 64", &csi.GetPluginInfoResponse{Name: rep('a', 64), VendorVersion: "1"}, true, in, "plugin bug: GetPluginInfoResponse.name: must be 63 characters or less"},
		{"plugin name 129", &csi.GetPluginInfoResponse{Name: rep('a', 129), VendorVersion: "1"}, true, in, "plugin bug: GetPluginInfoResponse.name: 129 bytes, the limit is 128"},
		{"plugin name chars", &csi.GetPluginInfoResponse{Name: "my_driver.io", VendorVersion: "1"}, true, in, "plugin bug: GetPluginInfoResponse.name: must follow domain name notation"},
		{"plugin name end", &csi.GetPluginInfoResponse{Name: "driver.io-", VendorVersion: "1"}, true, in, "GetPluginInfoResponse.name: must follow domain name notation"},
		{"capability type missing", caps(&csi.PluginCapability{}), true, in, "plugin bug: GetPluginCapabilitiesResponse.capabilities[0].type: required field is missing (set one of service, volume_expansion)"},
		{"service unknown", caps(&csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{}}}), true, in,
			"plugin bug: GetPluginCapabilitiesResponse.capabilities[0].service.type: required field is missing"},
		{"expansion unknown", caps(&csi.PluginCapability{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{}}}), true, in,
			"GetPluginCapabilitiesResponse.capabilities[0].volume_expansion.type: required field is missing"},
		{"controller capability", &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{}}}, true, in, "ControllerGetCapabilitiesResponse.capabilities[0].type: required field is missing (set one of rpc)"},
		{"controller rpc unknown", &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{}}}}}, true, in,
			"ControllerGetCapabilitiesResponse.capabilities[0].rpc.type: required field is missing"},
		{"node rpc unknown", &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{}}}}}, true, in,
			"NodeGetCapabilitiesResponse.capabilities[0].rpc.type: required field is missing"},
		{"group capability", &csi.GroupControllerGetCapabilitiesResponse{Capabilities: []*csi.GroupControllerServiceCapability{{}}}, true, in, "GroupControllerGetCapabilitiesResponse.capabilities[0].type: required field is missing"},
		{"node id 256", &csi.NodeGetInfoResponse{NodeId: rep('n', 256)}, true, 0, ""},
		{"node id 257", &csi.NodeGetInfoResponse{NodeId: rep('n', 257)}, true, in, "NodeGetInfo: plugin bug: NodeGetInfoResponse.node_id: 257 bytes, the limit is 256"},
		{"published node ids of 256 bytes", &csi.ControllerGetVolumeResponse{Volume: &csi.Volume{VolumeId: volID},
			Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: []string{rep('n', 256)}}}, true, 0, ""},
		{"published node ids of 257 bytes", &csi.ListVolumesResponse{Entries: []*csi.ListVolumesResponse_Entry{{Volume: &csi.Volume{VolumeId: volID},
			Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: []string{rep('n', 257)}}}}}, true, in, "ListVolumesResponse.entries[0].status.published_node_ids[0]: 257 bytes, the limit is 256"},
		{"node id missing", &csi.NodeGetInfoResponse{}, true, in, "NodeGetInfo: plugin bug: NodeGetInfoResponse.node_id: required field is missing"},
		{"max volumes negative", &csi.NodeGetInfoResponse{NodeId: "n", MaxVolumesPerNode: -1}, true, in, "NodeGetInfoResponse.max_volumes_per_node: must not be negative"},
		{"node topology", &csi.NodeGetInfoResponse{NodeId: "n", AccessibleTopology: &csi.Topology{Segments: map[string]string{"zone": "a b"}}}, true, in, `NodeGetInfoResponse.accessible_topology.segments["zone"]: topology value`},
		{"capacity negative", &csi.GetCapacityResponse{AvailableCapacity: -1}, true, in, "plugin bug: GetCapacityResponse.available_capacity: must not be negative"},
		{"maximum size negative", &csi.GetCapacityResponse{MaximumVolumeSize: wrapperspb.Int64(-1)}, true, in, "plugin bug: GetCapacityResponse.maximum_volume_size: must not be negative"},
		{"minimum size negative", &csi.GetCapacityResponse{MinimumVolumeSize: wrapperspb.Int64(-1)}, true, in, "GetCapacityResponse.minimum_volume_size: must not be negative"},
		{"capacity zero fine", &csi.GetCapacityResponse{MaximumVolumeSize: wrapperspb.Int64(0)}, true, 0, ""},
		{"snapshot missing", &csi.CreateSnapshotResponse{}, true, in, "CreateSnapshotResponse.snapshot: required field is missing"},
		{"snapshot time", &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "s", SourceVolumeId: "v"}}, true, in, "CreateSnapshotResponse.snapshot.creation_time: required field is missing"},
		{"snapshot size", &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "s", SourceVolumeId: "v", CreationTime: timestamppb.Now(), SizeBytes: -1}}, true, in, "CreateSnapshotResponse.snapshot.size_bytes: must not be negative"},
		{"snapshot not ready fine", &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "s", SourceVolumeId: "v", CreationTime: timestamppb.Now()}}, true, 0, ""},
		{"list snapshots entry", &csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{{Snapshot: validSnapshot()}, {}}}, true, in, "ListSnapshotsResponse.entries[1].snapshot: required field is missing"},
		{"list volumes entry", &csi.ListVolumesResponse{Entries: []*csi.ListVolumesResponse_Entry{{}}}, true, in, "ListVolumesResponse.entries[0].volume: required field is missing"},
		{"published node id 257", &csi.ListVolumesResponse{Entries: []*csi.ListVolumesResponse_Entry{{Volume: validVolume(), Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: []string{rep('n', 257)}}}}}, true, in,
			"ListVolumesResponse.entries[0].status.published_node_ids[0]: 257 bytes, the limit is 256"},
		{"group snapshot members", &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: &csi.VolumeGroupSnapshot{GroupSnapshotId: "g", CreationTime: timestamppb.Now()}}, true, in,
			"CreateVolumeGroupSnapshotResponse.group_snapshot.snapshots: required field is missing"},
		{"confirmed capabilities", &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{}}, true, in, "ValidateVolumeCapabilitiesResponse.confirmed.volume_capabilities: required field is missing"},
		{"not confirmed fine", &csi.ValidateVolumeCapabilitiesResponse{Message: "unsupported access mode"}, true, 0, ""},
		{"get volume status", &csi.ControllerGetVolumeResponse{Volume: validVolume()}, true, in, "ControllerGetVolumeResponse.status: required field is missing"},
		{"usage unit", &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Total: 1}}}, true, in, "NodeGetVolumeStatsResponse.usage[0].unit: required field is missing"},
		{"usage negative", &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_INODES, Available: -1}}}, true, in, "NodeGetVolumeStatsResponse.usage[0].available: must not be negative"},
		{"health status", &csi.ControllerGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: "v", HealthStatuses: []*csi.VolumeHealth_VolumeHealthEntry{{Reason: "R"}}}}, true, in,
			"ControllerGetVolumeHealthResponse.volume_health.health_statuses[0].status: required field is missing"},
		{"health reason", &csi.NodeGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: "v", HealthStatuses: []*csi.VolumeHealth_VolumeHealthEntry{{Status: 7}}}}, true, in,
			"NodeGetVolumeHealthResponse.volume_health.health_statuses[0].reason: required field is missing"},
		{"storage health", &csi.NodeGetStorageHealthResponse{BackendHealth: []*csi.NodeGetStorageHealthResponse_StorageBackendHealth{{Reason: "x"}}}, true, in, "NodeGetStorageHealthResponse.backend_health[0].status: required field is missing"},
		{"block type", &csi.GetMetadataAllocatedResponse{}, true, in, "GetMetadataAllocatedResponse.block_metadata_type: required field is missing"},
		{"block size zero", &csi.GetMetadataDeltaResponse{BlockMetadataType: csi.BlockMetadataType_FIXED_LENGTH, BlockMetadata: []*csi.BlockMetadata{{ByteOffset: 0, SizeBytes: 1}, {ByteOffset: 1}}}, true, in,
			"plugin bug: GetMetadataDeltaResponse.block_metadata[1].size_bytes: must be greater than zero"},
		{"block offset negative", &csi.GetMetadataAllocatedResponse{BlockMetadataType: csi.BlockMetadataType_FIXED_LENGTH, BlockMetadata: []*csi.BlockMetadata{{ByteOffset: -1, SizeBytes: 1}}}, true, in,
			"GetMetadataAllocatedResponse.block_metadata[0].byte_offset: must not be negative"},
		{"capacity bytes negative", &csi.GetMetadataAllocatedResponse{BlockMetadataType: csi.BlockMetadataType_FIXED_LENGTH, VolumeCapacityBytes: -1}, true, in, "GetMetadataAllocatedResponse.volume_capacity_bytes: must not be negative"},
		{"expand response negative", &csi.ControllerExpandVolumeResponse{CapacityBytes: -1}, true, in, "ControllerExpandVolumeResponse.capacity_bytes: must not be negative"},
		{"node expand response negative", &csi.NodeExpandVolumeResponse{CapacityBytes: -1}, true, in, "NodeExpandVolumeResponse.capacity_bytes: must not be negative"},
		{"response starting offset is internal", &csi.GetMetadataAllocatedRequest{SnapshotId: "s", StartingOffset: -1}, true, in, "plugin bug: GetMetadataAllocated: starting_offset: must not be negative"},
	}
}

func TestViolations(t *testing.T) {
	cases := append(requestCases(), responseCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			check := Request
			if tc.resp {
				check = Response
			}
			err := check(tc.msg)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want %v %q, got nil", tc.code, tc.want)
			}
			st, ok := status.FromError(err)
			if !ok {
				t.Fatalf("not a status: %v", err)
			}
			if st.Code() != tc.code {
				t.Errorf("code %v, want %v (%s)", st.Code(), tc.code, st.Message())
			}
			if !strings.Contains(st.Message(), tc.want) {
				t.Errorf("message %q does not contain %q", st.Message(), tc.want)
			}
			if len(st.Proto().GetDetails()) != 0 {
				t.Errorf("details must be empty")
			}
			for _, v := range secrets() {
				if strings.Contains(st.Message(), v) {
					t.Errorf("message %q echoes a secret value", st.Message())
				}
			}
			// The same message through protoreflect only (dynamicpb) gives the same answer.
			if err2 := check(toDynamic(t, tc.msg)); status.Convert(err2).Message() != st.Message() || status.Code(err2) != st.Code() {
				t.Errorf("dynamicpb: %v, want %v", err2, err)
			}
		})
	}
}

func toDynamic(t testing.TB, m proto.Message) proto.Message {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		// Invalid UTF-8 in a string field cannot be marshalled; skip the comparison.
		return m
	}
	d := dynamicpb.NewMessage(m.ProtoReflect().Descriptor())
	if err := proto.Unmarshal(b, d); err != nil {
		t.Fatalf("unmarshal into dynamicpb: %v", err)
	}
	return d
}

// rpcTypes lists the input and output types of every RPC of csi.v1.
func rpcTypes() (in, out map[protoreflect.FullName]bool) {
	in, out = map[protoreflect.FullName]bool{}, map[protoreflect.FullName]bool{}
	svcs := csi.File_csi_proto.Services()
	for i := 0; i < svcs.Len(); i++ {
		ms := svcs.Get(i).Methods()
		for j := 0; j < ms.Len(); j++ {
			in[ms.Get(j).Input().FullName()] = true
			out[ms.Get(j).Output().FullName()] = true
		}
	}
	return in, out
}

func TestEveryValidMessagePasses(t *testing.T) {
	in, out := rpcTypes()
	for _, set := range []struct {
		name  string
		msgs  []proto.Message
		want  map[protoreflect.FullName]bool
		check func(proto.Message) error
	}{
		{"requests", validRequests(), in, Request},
		{"responses", validResponses(), out, Response},
	} {
		t.Run(set.name, func(t *testing.T) {
			seen := map[protoreflect.FullName]bool{}
			for _, m := range set.msgs {
				pm := m.ProtoReflect()
				name := pm.Descriptor().FullName()
				seen[name] = true
				fields := pm.Descriptor().Fields()
				for i := 0; i < fields.Len(); i++ {
					if !pm.Has(fields.Get(i)) {
						t.Errorf("%s: fixture does not set %s", name, fields.Get(i).Name())
					}
				}
				if err := set.check(m); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				if err := set.check(toDynamic(t, m)); err != nil {
					t.Errorf("%s (dynamicpb): %v", name, err)
				}
			}
			for n := range set.want {
				if !seen[n] {
					t.Errorf("no fixture for %s", n)
				}
			}
			if len(seen) != len(set.want) {
				t.Errorf("%d fixtures for %d RPC types", len(seen), len(set.want))
			}
		})
	}
}

// TestResponseSizes: ResponseSizes checks the size limits of every field, nested ones too, and
// nothing else: a response missing a required field or with a bad name passes it.
func TestResponseSizes(t *testing.T) {
	vol := func(f func(v *csi.Volume)) *csi.CreateVolumeResponse {
		v := validVolume()
		f(v)
		return &csi.CreateVolumeResponse{Volume: v}
	}
	tests := []struct {
		name string
		msg  proto.Message
		want string // "" for none
	}{
		{"valid", &csi.CreateVolumeResponse{Volume: validVolume()}, ""},
		{"a long ID", vol(func(v *csi.Volume) { v.VolumeId = rep('v', 300) }),
			"CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_id: 300 bytes, the limit is 128"},
		{"a big context", vol(func(v *csi.Volume) { v.VolumeContext = map[string]string{"k": rep('x', 5000)} }),
			"CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_context: 5001 bytes in total, the limit is 4096"},
		{"a long topology value in a list", vol(func(v *csi.Volume) {
			v.AccessibleTopology = []*csi.Topology{{Segments: map[string]string{"zone": "a"}}, {Segments: map[string]string{"zone": rep('z', 5000)}}}
		}), "CreateVolume: plugin bug: CreateVolumeResponse.volume.accessible_topology[1].segments: 5004 bytes in total, the limit is 4096"},
		{"a node ID within its own limit", &csi.NodeGetInfoResponse{NodeId: rep('n', 200)}, ""},
		{"a node ID past its own limit", &csi.NodeGetInfoResponse{NodeId: rep('n', 300)},
			"NodeGetInfo: plugin bug: NodeGetInfoResponse.node_id: 300 bytes, the limit is 256"},
		{"a long published node in a listing", &csi.ListVolumesResponse{Entries: []*csi.ListVolumesResponse_Entry{{
			Volume: validVolume(), Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: []string{"n1", rep('n', 300)}}}}},
			"ListVolumes: plugin bug: ListVolumesResponse.entries[0].status.published_node_ids[1]: 300 bytes, the limit is 256"},
		{"a missing required field is not a size", &csi.CreateVolumeResponse{Volume: &csi.Volume{CapacityBytes: 1}}, ""},
		{"a bad plugin name is not a size", &csi.GetPluginInfoResponse{Name: "bad_name"}, ""},
		{"not a CSI message", wrapperspb.String(rep('x', 500)), ""},
	}
	for _, tt := range tests {
		err := ResponseSizes(tt.msg)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v; want none", tt.name, err)
			}
			continue
		}
		if status.Code(err) != codes.Internal || status.Convert(err).Message() != tt.want {
			t.Errorf("%s: %v; want INTERNAL %q", tt.name, err, tt.want)
		}
	}
	if err := ResponseSizes(nil); err != nil {
		t.Errorf("ResponseSizes(nil) = %v", err)
	}
}

func TestNilAndForeign(t *testing.T) {
	if err := Request(nil); err != nil {
		t.Errorf("Request(nil) = %v", err)
	}
	if err := Response(nil); err != nil {
		t.Errorf("Response(nil) = %v", err)
	}
	if err := Response(wrapperspb.String(rep('x', 500))); err != nil {
		t.Errorf("non-CSI response: %v", err)
	}
}

func TestMessagesAreDeterministic(t *testing.T) {
	// Several bad keys: the smallest is named, whatever the map order.
	m := &csi.CreateVolumeRequest{Name: "n", VolumeCapabilities: []*csi.VolumeCapability{mountCap()},
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{
			"b-": "x", "a-": "x", "c-": "x", "d-": "x", "e-": "x", "f-": "x", "A": "x", "a": "x",
		}}}}}
	first := status.Convert(Request(m)).Message()
	for i := 0; i < 50; i++ {
		if got := status.Convert(Request(m)).Message(); got != first {
			t.Fatalf("message changed between calls: %q then %q", first, got)
		}
	}
	if !strings.Contains(first, `segments["a-"]`) {
		t.Errorf("got %q, want the smallest bad key named", first)
	}
}

func TestPluginName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"hostpath.csi.k8s.io", true},
		{"ebs.csi.aws.com", true},
		{"Csi.Vendor-1.example", true},
		{"a", true},
		{"9", true},
		{rep('a', 63), true},
		{rep('a', 64), false},
		{"", false},
		{"-a", false},
		{"a-", false},
		{".a", false},
		{"a.", false},
		{"a..b", false},
		{"a.-b", false},
		{"a_b", false},
		{"a b", false},
		{"a/b", false},
		{"\u00e9.io", false},
	} {
		err := PluginName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("PluginName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && tc.name != "" && strings.Contains(err.Error(), tc.name) {
			t.Errorf("PluginName(%q) error echoes the name: %v", tc.name, err)
		}
	}
}

func TestTopologyKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"zone", true},
		{"topology.kubernetes.io/zone", true},
		{"example.com/Rack_1", true},
		{"a/b", true},
		{"0/0", true},
		{"Zone", true},
		{"z.o-n_e", true},
		{"", false},
		{"/", false},
		{"a/", false},
		{"/a", false},
		{"A/b", false},
		{"a_b/c", false},
		{"a/b/c", false},
		{"_zone", false},
		{"zone.", false},
		{"zo ne", false},
		{"z\u00f6ne", false},
	} {
		if got := topologyKeyProblem(tc.key) == ""; got != tc.ok {
			t.Errorf("topologyKeyProblem(%q) = %q, want ok=%v", tc.key, topologyKeyProblem(tc.key), tc.ok)
		}
	}
}

func TestAbsPath(t *testing.T) {
	for _, p := range []string{"/", "/a/b", "//x"} {
		if !isAbsPath(p) {
			t.Errorf("isAbsPath(%q) = false", p)
		}
	}
	for _, p := range []string{"", "a", "./a", "../a", "~/a"} {
		if isAbsPath(p) {
			t.Errorf("isAbsPath(%q) = true", p)
		}
	}
}

func adversarialTopologyRequest(n int) *csi.CreateVolumeRequest {
	seg := func(upper bool, last string) map[string]string {
		m := map[string]string{}
		for i := 0; len(m) < 800; i++ {
			k := "k" + strconv.Itoa(i)
			if upper {
				k = "K" + strconv.Itoa(i)
			}
			m[k] = "v"
		}
		m["z"] = last
		return m
	}
	req := validCreateVolume()
	var requisite, preferred []*csi.Topology
	for i := 0; i < n; i++ {
		requisite = append(requisite, &csi.Topology{Segments: seg(false, "r"+strconv.Itoa(i))})
		preferred = append(preferred, &csi.Topology{Segments: seg(true, "r"+strconv.Itoa(n-1))})
	}
	req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: requisite, Preferred: preferred}
	return req
}

func TestAdversarialTopology(t *testing.T) {
	if err := Request(adversarialTopologyRequest(16)); err != nil {
		t.Fatal(err)
	}
	m := adversarialTopologyRequest(16)
	m.AccessibilityRequirements.Preferred[3].Segments["z"] = "elsewhere"
	if err := Request(m); !strings.Contains(status.Convert(err).Message(), "preferred[3]: must also be one of the requisite topologies") {
		t.Fatal(err)
	}
}
