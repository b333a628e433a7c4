package plugin

import (
	"slices"
	"testing"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	cosiv1alpha1 "sigs.k8s.io/container-object-storage-interface/proto"

	cosiv1alpha2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"

	"github.com/csikit/csikit/idempotency"
)

// TestRPCTableCoversEveryMethod pins rpcTable to the generated service descriptors in both
// directions: a spec upgrade that adds an RPC fails here until the RPC has an entry, and an entry
// cannot name a method that does not exist.
func TestRPCTableCoversEveryMethod(t *testing.T) {
	descs := []*grpc.ServiceDesc{
		&csi.Identity_ServiceDesc, &csi.Controller_ServiceDesc, &csi.Node_ServiceDesc,
		&csi.GroupController_ServiceDesc, &csi.SnapshotMetadata_ServiceDesc, &vgpb.Controller_ServiceDesc,
		&cosiv1alpha1.Identity_ServiceDesc, &cosiv1alpha1.Provisioner_ServiceDesc,
		&cosiv1alpha2.Identity_ServiceDesc, &cosiv1alpha2.Provisioner_ServiceDesc,
	}
	// Every wire service a COSI entry names must carry the method: a version-neutral entry
	// cannot claim a version that lacks the RPC.
	for _, s := range rpcTable {
		for _, w := range s.wire {
			found := false
			for _, d := range descs {
				if d.ServiceName != string(w) {
					continue
				}
				for _, m := range d.Methods {
					found = found || m.MethodName == string(s.name)
				}
			}
			if !found {
				t.Errorf("rpcTable entry %s names %s, which has no such method", s.name, w)
			}
		}
	}
	seen := map[rpc]bool{}
	for _, d := range descs {
		for _, m := range d.Methods {
			s, ok := rpcTable[rpc(m.MethodName)]
			if !ok || !s.carries(d.ServiceName) || s.stream {
				t.Errorf("%s/%s: no unary rpcTable entry for this service", d.ServiceName, m.MethodName)
				continue
			}
			seen[s.name] = true
		}
		for _, st := range d.Streams {
			s, ok := rpcTable[rpc(st.StreamName)]
			if !ok || !s.carries(d.ServiceName) || !s.stream {
				t.Errorf("%s/%s: no streaming rpcTable entry for this service", d.ServiceName, st.StreamName)
				continue
			}
			seen[s.name] = true
		}
	}
	for name, s := range rpcTable {
		if !seen[name] {
			t.Errorf("rpcTable entry %s (%s) matches no generated method", name, s.method())
		}
		if s.ctrlCap != 0 && s.service != svcController || s.nodeCap != 0 && s.service != svcNode {
			t.Errorf("rpcTable entry %s names a capability of another service", name)
		}
		for _, it := range s.serves {
			if it.Kind().String() != "interface" {
				t.Errorf("rpcTable entry %s: serves %v, which is not an interface", name, it)
			}
		}
	}
}

// TestLockKeys pins what each mutating RPC holds while it runs. Sources of a create are held
// shared: several clones or snapshots of one volume may run at once, and only a call that changes
// the volume itself must wait or be ABORTED while they copy from it.
func TestLockKeys(t *testing.T) {
	vs := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
	}
	ss := func(id string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
	}
	tests := []struct {
		name string
		req  any
		want []idempotency.Key
	}{
		{"create", &csi.CreateVolumeRequest{Name: "n"}, []idempotency.Key{excl(kindVolumeName, "n")}},
		{"clone holds the source shared", &csi.CreateVolumeRequest{Name: "n", VolumeContentSource: vs("v")},
			[]idempotency.Key{excl(kindVolumeName, "n"), shared(kindVolume, "v")}},
		{"restore holds the snapshot shared", &csi.CreateVolumeRequest{Name: "n", VolumeContentSource: ss("s")},
			[]idempotency.Key{excl(kindVolumeName, "n"), shared(kindSnapshot, "s")}},
		{"delete", &csi.DeleteVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(kindVolume, "v")}},
		{"publish", &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n"}, []idempotency.Key{excl(kindVolume, "v")}},
		{"unpublish", &csi.ControllerUnpublishVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(kindVolume, "v")}},
		{"expand", &csi.ControllerExpandVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(kindVolume, "v")}},
		{"modify", &csi.ControllerModifyVolumeRequest{VolumeId: "v"}, []idempotency.Key{excl(kindVolume, "v")}},
		{"snapshot", &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: "v"},
			[]idempotency.Key{excl(kindSnapshotName, "s"), shared(kindVolume, "v")}},
		{"delete snapshot", &csi.DeleteSnapshotRequest{SnapshotId: "s"}, []idempotency.Key{excl(kindSnapshot, "s")}},
		{"stage holds its staging path", &csi.NodeStageVolumeRequest{VolumeId: "v", StagingTargetPath: "/s"},
			[]idempotency.Key{excl(kindStagingPath, "v\x00/s")}},
		{"unstage holds its staging path", &csi.NodeUnstageVolumeRequest{VolumeId: "v", StagingTargetPath: "/s"},
			[]idempotency.Key{excl(kindStagingPath, "v\x00/s")}},
		{"node publish holds its target and its staging path shared", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", StagingTargetPath: "/s"},
			[]idempotency.Key{excl(kindTargetPath, "v\x00/t"), shared(kindStagingPath, "v\x00/s")}},
		{"node publish without staging holds its target", &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t/"},
			[]idempotency.Key{excl(kindTargetPath, "v\x00/t")}},
		{"node unpublish holds its target", &csi.NodeUnpublishVolumeRequest{VolumeId: "v", TargetPath: "/t"},
			[]idempotency.Key{excl(kindTargetPath, "v\x00/t")}},
		{"node expand holds the volume and its paths shared", &csi.NodeExpandVolumeRequest{VolumeId: "v", VolumePath: "/t", StagingTargetPath: "/s"},
			[]idempotency.Key{excl(kindVolume, "v"), shared(kindStagingPath, "v\x00/s"), shared(kindTargetPath, "v\x00/t")}},
		{"node expand of the staging path holds it once", &csi.NodeExpandVolumeRequest{VolumeId: "v", VolumePath: "/s", StagingTargetPath: "/s"},
			[]idempotency.Key{excl(kindVolume, "v"), shared(kindStagingPath, "v\x00/s")}},
		{"group snapshot", &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{"a", "b"}},
			[]idempotency.Key{excl(kindGroupSnapshotName, "g"), shared(kindVolume, "a"), shared(kindVolume, "b")}},
		{"delete group snapshot", &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: "g", SnapshotIds: []string{"s1"}},
			[]idempotency.Key{excl(kindGroupSnapshot, "g"), excl(kindSnapshot, "s1")}},
		{"create volume group", &vgpb.CreateVolumeGroupRequest{Name: "g"}, []idempotency.Key{excl(kindVolumeGroupName, "g")}},
		{"delete volume group", &vgpb.DeleteVolumeGroupRequest{VolumeGroupId: "vg"}, []idempotency.Key{excl(kindVolumeGroup, "vg")}},
		{"membership change holds the group and every named volume", &vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: "vg", VolumeIds: []string{"a", "b"}},
			[]idempotency.Key{excl(kindVolumeGroup, "vg"), excl(kindVolume, "a"), excl(kindVolume, "b")}},
		{"get volume group takes no lock", &vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: "vg"}, nil},
		{"create bucket v1alpha1 holds its name", &cosiv1alpha1.DriverCreateBucketRequest{Name: "b"}, []idempotency.Key{excl(kindBucketName, "b")}},
		{"create bucket v1alpha2 holds its name", &cosiv1alpha2.DriverCreateBucketRequest{Name: "b"}, []idempotency.Key{excl(kindBucketName, "b")}},
		{"delete bucket", &cosiv1alpha2.DriverDeleteBucketRequest{BucketId: "b"}, []idempotency.Key{excl(kindBucket, "b")}},
		{"v1alpha1 grant holds the account name and its bucket shared", &cosiv1alpha1.DriverGrantBucketAccessRequest{Name: "ba-1", BucketId: "b"},
			[]idempotency.Key{excl(kindAccountName, "ba-1"), shared(kindBucket, "b")}},
		{"v1alpha2 grant holds the account name and every bucket shared", &cosiv1alpha2.DriverGrantBucketAccessRequest{AccountName: "ba-1",
			Buckets: []*cosiv1alpha2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: "a"}, {BucketId: "b"}}},
			[]idempotency.Key{excl(kindAccountName, "ba-1"), shared(kindBucket, "a"), shared(kindBucket, "b")}},
		{"revoke holds the account ID", &cosiv1alpha1.DriverRevokeBucketAccessRequest{AccountId: "acct", BucketId: "b"},
			[]idempotency.Key{excl(kindAccount, "acct"), shared(kindBucket, "b")}},
		{"get existing bucket takes no lock", &cosiv1alpha2.DriverGetExistingBucketRequest{ExistingBucketId: "b"}, nil},
		{"read-only calls take no lock", &csi.ListVolumesRequest{}, nil},
		{"get volume takes no lock", &csi.ControllerGetVolumeRequest{VolumeId: "v"}, nil},
		{"stats take no lock", &csi.NodeGetVolumeStatsRequest{VolumeId: "v"}, nil},
		{"empty IDs are skipped", &csi.DeleteVolumeRequest{}, nil},
		{"non-CSI requests take no lock", "hello", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []idempotency.Key
			for _, s := range rpcTable {
				if s.locks != nil {
					got = append(got, s.locks(tt.req)...)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("locks = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEveryCOSIServiceIsRedactedAsCOSI: redactorFor gives COSI calls the redactor that always
// hides secret-looking parameter values. Every COSI entry and every wire service carrying one
// (the names an RPC without an entry is registered under) must be recognised, and no CSI
// service may be.
func TestEveryCOSIServiceIsRedactedAsCOSI(t *testing.T) {
	for _, s := range rpcTable {
		cosi := len(s.wire) > 0
		if got := s.service.isCOSI(); got != cosi {
			t.Errorf("%s of %s: isCOSI = %v, want %v", s.name, s.service, got, cosi)
		}
		for _, w := range s.wire {
			if !w.isCOSI() {
				t.Errorf("wire service %s of %s is not recognised as COSI", w, s.name)
			}
		}
	}
}
