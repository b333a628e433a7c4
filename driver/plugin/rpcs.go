package plugin

import (
	"reflect"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/driver/volumegroup"
	"github.com/csikit/csikit/idempotency"
)

// rpc names one method by its short name ("CreateVolume"); it is the key of rpcTable.
type rpc string

// The RPCs by name: the keys of rpcTable.
const (
	rpcGetPluginInfo             rpc = "GetPluginInfo"
	rpcGetPluginCapabilities     rpc = "GetPluginCapabilities"
	rpcNodeGetCapabilities       rpc = "NodeGetCapabilities"
	rpcGroupGetCapabilities      rpc = "GroupControllerGetCapabilities"
	rpcCreateVolume              rpc = "CreateVolume"
	rpcDeleteVolume              rpc = "DeleteVolume"
	rpcControllerPublish         rpc = "ControllerPublishVolume"
	rpcControllerUnpublish       rpc = "ControllerUnpublishVolume"
	rpcValidateVolumeCaps        rpc = "ValidateVolumeCapabilities"
	rpcListVolumes               rpc = "ListVolumes"
	rpcGetCapacity               rpc = "GetCapacity"
	rpcCreateSnapshot            rpc = "CreateSnapshot"
	rpcDeleteSnapshot            rpc = "DeleteSnapshot"
	rpcListSnapshots             rpc = "ListSnapshots"
	rpcGetSnapshot               rpc = "GetSnapshot"
	rpcControllerExpand          rpc = "ControllerExpandVolume"
	rpcControllerGetVolume       rpc = "ControllerGetVolume"
	rpcControllerModify          rpc = "ControllerModifyVolume"
	rpcControllerGetHealth       rpc = "ControllerGetVolumeHealth"
	rpcControllerListHealth      rpc = "ControllerListVolumeHealth"
	rpcNodeStage                 rpc = "NodeStageVolume"
	rpcNodeUnstage               rpc = "NodeUnstageVolume"
	rpcNodePublish               rpc = "NodePublishVolume"
	rpcNodeUnpublish             rpc = "NodeUnpublishVolume"
	rpcNodeGetVolumeStats        rpc = "NodeGetVolumeStats"
	rpcNodeExpand                rpc = "NodeExpandVolume"
	rpcNodeGetInfo               rpc = "NodeGetInfo"
	rpcNodeGetHealth             rpc = "NodeGetVolumeHealth"
	rpcNodeGetStorageHealth      rpc = "NodeGetStorageHealth"
	rpcCreateGroupSnapshot       rpc = "CreateVolumeGroupSnapshot"
	rpcDeleteGroupSnapshot       rpc = "DeleteVolumeGroupSnapshot"
	rpcGetGroupSnapshot          rpc = "GetVolumeGroupSnapshot"
	rpcGetMetadataAllocated      rpc = "GetMetadataAllocated"
	rpcGetMetadataDelta          rpc = "GetMetadataDelta"
	rpcProbe                     rpc = "Probe"
	rpcControllerGetCapabilities rpc = "ControllerGetCapabilities"
	rpcCreateVolumeGroup         rpc = "CreateVolumeGroup"
	rpcDeleteVolumeGroup         rpc = "DeleteVolumeGroup"
	rpcModifyVolumeGroup         rpc = "ModifyVolumeGroupMembership"
	rpcGetVolumeGroup            rpc = "ControllerGetVolumeGroup"
	rpcListVolumeGroups          rpc = "ListVolumeGroups"
	rpcDriverGetInfo             rpc = "DriverGetInfo"
	rpcCreateBucket              rpc = "DriverCreateBucket"
	rpcGetExistingBucket         rpc = "DriverGetExistingBucket"
	rpcDeleteBucket              rpc = "DriverDeleteBucket"
	rpcGrantBucketAccess         rpc = "DriverGrantBucketAccess"
	rpcRevokeBucketAccess        rpc = "DriverRevokeBucketAccess"
)

// service is one gRPC service this package serves, by its full name.
type service string

const (
	svcIdentity         service = "csi.v1.Identity"
	svcController       service = "csi.v1.Controller"
	svcNode             service = "csi.v1.Node"
	svcGroupController  service = "csi.v1.GroupController"
	svcSnapshotMetadata service = "csi.v1.SnapshotMetadata"
	svcVolumeGroup      service = "volumegroup.Controller"
	// COSI's services, whatever the wire version: an entry of these names the generated services
	// of every version in wire, and describes the RPC once for all of them.
	svcCOSIIdentity    service = "cosi.Identity"
	svcCOSIProvisioner service = "cosi.Provisioner"
)

// The COSI services by wire version.
const (
	svcCOSIIdentityV1alpha1    service = "cosi.v1alpha1.Identity"
	svcCOSIProvisionerV1alpha1 service = "cosi.v1alpha1.Provisioner"
	svcCOSIIdentityV1alpha2    service = "sigs.k8s.io.cosi.v1alpha2.Identity"
	svcCOSIProvisionerV1alpha2 service = "sigs.k8s.io.cosi.v1alpha2.Provisioner"
)

// isCOSI reports whether svc is a COSI service, version-neutral or of a wire version (an RPC
// without a table entry carries the wire service's name).
func (svc service) isCOSI() bool {
	switch svc {
	case svcCOSIIdentity, svcCOSIProvisioner, svcCOSIIdentityV1alpha1, svcCOSIProvisionerV1alpha1,
		svcCOSIIdentityV1alpha2, svcCOSIProvisionerV1alpha2:
		return true
	}
	return false
}

// rpcSpec is everything the library knows about one RPC apart from its handler. It is written once,
// in rpcTable, and drives discovery (which backend interface serves it), the capabilities
// advertised, the UNIMPLEMENTED answers, the in-flight locks and the per-RPC error table. Adding an
// RPC is one entry here, its typed request in requests.go and its handler.
type rpcSpec struct {
	name    rpc
	service service
	// wire lists the generated services that carry the RPC when service is a version-neutral one
	// (COSI); empty means service itself.
	wire []service
	// serves lists the backend interfaces that serve the RPC, any one of them sufficing (a full
	// lister or a page lister). Empty means the service's required interface serves it, or the
	// library answers it alone (capabilities, plugin info).
	serves []reflect.Type
	// ctrlCap and nodeCap are the capability that advertises the RPC (0 when none does).
	ctrlCap csi.ControllerServiceCapability_RPC_Type
	nodeCap csi.NodeServiceCapability_RPC_Type
	// locks returns the resources the call holds while it runs; nil for read-only RPCs.
	locks func(req any) []idempotency.Key
	// goneIsDone: "does not exist" means the goal is reached (deletes, unpublish), so ErrNotFound
	// and a NOT_FOUND status answer OK. Elsewhere they answer NOT_FOUND.
	goneIsDone bool
	// keepNotFoundStatus: a NOT_FOUND gRPC status from the backend stays NOT_FOUND even where
	// goneIsDone is set. ControllerUnpublishVolume uses it: the spec's way for a backend to say
	// "the volume or node is gone and cannot be regarded as unpublished".
	keepNotFoundStatus bool
	// unsupported is the code for ErrUnsupported: INVALID_ARGUMENT, except where the spec's table
	// calls an unsupported capability a failed precondition (NodeStage, NodePublish).
	unsupported codes.Code
	// unsupportedDeclines: ErrUnsupported is an answer, not a failure (ValidateVolumeCapabilities:
	// OK, unconfirmed, with the error's text as the message). It overrides unsupported.
	unsupportedDeclines bool
	// stream marks a server-streaming RPC.
	stream bool
	// unknown marks a method of a served service that has no entry in rpcTable (a newer spec's
	// RPC): it is answered UNIMPLEMENTED rather than served without the library's policy.
	unknown bool
}

// method is the full gRPC method name, as in grpc.UnaryServerInfo.FullMethod (of the first wire
// version for a COSI RPC).
func (s *rpcSpec) method() string {
	if len(s.wire) > 0 {
		return "/" + string(s.wire[0]) + "/" + string(s.name)
	}
	return "/" + string(s.service) + "/" + string(s.name)
}

// carries reports whether the generated service svc carries the RPC.
func (s *rpcSpec) carries(svc string) bool {
	if len(s.wire) == 0 {
		return string(s.service) == svc
	}
	for _, w := range s.wire {
		if string(w) == svc {
			return true
		}
	}
	return false
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// keys adapts a typed lock-key function to the table's untyped one. f must return a slice of its
// own on every call: empty IDs are filtered out of it in place.
func keys[T any](f func(T) []idempotency.Key) func(any) []idempotency.Key {
	return func(req any) []idempotency.Key {
		r, ok := req.(T)
		if !ok {
			return nil
		}
		ks := f(r)
		out := ks[:0] // in place: one allocation per call, not two
		for _, k := range ks {
			// An empty ID never reaches here through validation; skipping it keeps a
			// hand-composed chain from locking the empty key for everyone.
			if k.ID != "" {
				out = append(out, k)
			}
		}
		return out
	}
}

func excl(kind, id string) idempotency.Key { return idempotency.Key{Kind: kind, ID: id} }

// shared is for the sources of a create: several clones or snapshots of one volume may run at
// once, and only a call that changes the volume itself (delete, expand, publish) must wait or be
// ABORTED while they copy from it.
func shared(kind, id string) idempotency.Key {
	return idempotency.Key{Kind: kind, ID: id, Shared: true}
}

func volumeKey(id string) []idempotency.Key { return []idempotency.Key{excl(kindVolume, id)} }

// nodePathKey locks one mount point of one volume on this node. The node RPCs hold mount points,
// not the volume: the spec lets a CO publish one volume to several target paths on a node
// (NodePublishVolume: "MAY be called by the CO multiple times on the same node for the same
// volume with a possibly different target_path"), and kubelet does so for every pod that uses a
// multi-pod volume, so a volume-wide lock turned the second pod's publish into ABORTED retries.
// What must not overlap still conflicts:
//   - the same target or staging path twice (a CO retry racing the call it retries);
//   - NodeStageVolume or NodeUnstageVolume against a NodePublishVolume that bind-mounts from that
//     staging path (publish holds it shared, stage and unstage exclusive);
//   - NodeExpandVolume against unstaging or unpublishing the paths it grows (held shared), and
//     against another expansion of the volume (the volume itself, exclusive).
//
// Stage is keyed on the staging path, not the volume: the spec asks the CO for one staging path
// per volume, but a CO may stage one volume at two paths (Nomad stages per access mode and
// read-only flag), and those are two mounts. NodeUnpublishVolume names no staging path, so an
// unstage racing an unpublish is not caught here; the spec forbids it ("called after all
// NodeUnpublishVolume have been called and returned success"). csi-driver-nfs and csi-driver-smb
// lock their node RPCs on volume ID and path the same way; ceph-csi locks publish per target
// path. An empty path locks nothing (keys drops the empty ID): NodePublishVolume of a driver that
// does not stage holds its target only.
func nodePathKey(kind, volumeID, path string, isShared bool) idempotency.Key {
	if volumeID == "" || path == "" {
		return idempotency.Key{}
	}
	return idempotency.Key{Kind: kind, ID: nodePathID(volumeID, path), Shared: isShared}
}

// rpcTable lists every RPC of every service this package serves. TestRPCTableCoversEveryMethod
// checks it against the generated service descriptors, so a spec upgrade that adds an RPC fails a
// test until it has an entry.
var rpcTable = buildRPCTable()

// buildRPCTable describes every RPC once; unsupported defaults to INVALID_ARGUMENT.
func buildRPCTable() map[rpc]*rpcSpec {
	table := map[rpc]*rpcSpec{}
	for _, service := range [][]*rpcSpec{identityRPCs(), controllerRPCs(), nodeRPCs(), groupControllerRPCs(),
		volumeGroupRPCs(), cosiRPCs(), snapshotMetadataRPCs()} {
		for _, s := range service {
			if s.unsupported == codes.OK {
				s.unsupported = codes.InvalidArgument
			}
			table[s.name] = s
		}
	}
	return table
}

// identityRPCs describes the RPCs of the Identity service.
func identityRPCs() []*rpcSpec {
	return []*rpcSpec{
		{name: "GetPluginInfo", service: svcIdentity},
		{name: "GetPluginCapabilities", service: svcIdentity},
		{name: rpcProbe, service: svcIdentity},
	}
}

// controllerRPCs describes the RPCs of the Controller service.
func controllerRPCs() []*rpcSpec {
	return []*rpcSpec{
		{name: rpcCreateVolume, service: svcController, ctrlCap: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
			locks: keys(func(r *csi.CreateVolumeRequest) []idempotency.Key {
				return []idempotency.Key{
					excl(kindVolumeName, r.GetName()),
					shared(kindSnapshot, r.GetVolumeContentSource().GetSnapshot().GetSnapshotId()),
					shared(kindVolume, r.GetVolumeContentSource().GetVolume().GetVolumeId()),
				}
			})},
		{name: rpcDeleteVolume, service: svcController, ctrlCap: csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
			goneIsDone: true, locks: keys(func(r *csi.DeleteVolumeRequest) []idempotency.Key { return volumeKey(r.GetVolumeId()) })},
		{name: rpcControllerPublish, service: svcController, serves: []reflect.Type{typeOf[driver.ControllerPublisher]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			locks:   keys(func(r *csi.ControllerPublishVolumeRequest) []idempotency.Key { return volumeKey(r.GetVolumeId()) })},
		{name: rpcControllerUnpublish, service: svcController, serves: []reflect.Type{typeOf[driver.ControllerPublisher]()},
			ctrlCap:    csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			goneIsDone: true, keepNotFoundStatus: true,
			locks: keys(func(r *csi.ControllerUnpublishVolumeRequest) []idempotency.Key { return volumeKey(r.GetVolumeId()) })},
		{name: rpcValidateVolumeCaps, service: svcController, unsupportedDeclines: true},
		{name: rpcListVolumes, service: svcController, serves: []reflect.Type{typeOf[driver.VolumeLister](), typeOf[driver.VolumePageLister]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_LIST_VOLUMES},
		{name: rpcGetCapacity, service: svcController, serves: []reflect.Type{typeOf[driver.CapacityReporter]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_GET_CAPACITY},
		{name: rpcControllerGetCapabilities, service: svcController},
		{name: rpcCreateSnapshot, service: svcController, serves: []reflect.Type{typeOf[driver.Snapshotter]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
			locks: keys(func(r *csi.CreateSnapshotRequest) []idempotency.Key {
				return []idempotency.Key{excl(kindSnapshotName, r.GetName()), shared(kindVolume, r.GetSourceVolumeId())}
			})},
		{name: rpcDeleteSnapshot, service: svcController, serves: []reflect.Type{typeOf[driver.Snapshotter]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT, goneIsDone: true,
			locks: keys(func(r *csi.DeleteSnapshotRequest) []idempotency.Key {
				return []idempotency.Key{excl(kindSnapshot, r.GetSnapshotId())}
			})},
		{name: rpcListSnapshots, service: svcController, serves: []reflect.Type{typeOf[driver.SnapshotLister](), typeOf[driver.SnapshotPageLister]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS},
		{name: rpcGetSnapshot, service: svcController, serves: []reflect.Type{typeOf[driver.SnapshotGetter]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_GET_SNAPSHOT},
		{name: rpcControllerExpand, service: svcController, serves: []reflect.Type{typeOf[driver.VolumeExpander]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
			locks:   keys(func(r *csi.ControllerExpandVolumeRequest) []idempotency.Key { return volumeKey(r.GetVolumeId()) })},
		{name: rpcControllerGetVolume, service: svcController, serves: []reflect.Type{typeOf[driver.VolumeGetter]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_GET_VOLUME},
		{name: rpcControllerModify, service: svcController, serves: []reflect.Type{typeOf[driver.VolumeModifier]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
			locks:   keys(func(r *csi.ControllerModifyVolumeRequest) []idempotency.Key { return volumeKey(r.GetVolumeId()) })},
		{name: rpcControllerGetHealth, service: svcController, serves: []reflect.Type{typeOf[driver.VolumeHealthGetter]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH},
		{name: rpcControllerListHealth, service: svcController, serves: []reflect.Type{typeOf[driver.VolumeHealthLister]()},
			ctrlCap: csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH},
	}
}

// nodeRPCs describes the RPCs of the Node service.
func nodeRPCs() []*rpcSpec {
	return []*rpcSpec{
		{name: rpcNodeStage, service: svcNode, serves: []reflect.Type{typeOf[driver.NodeStager]()},
			nodeCap: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME, unsupported: codes.FailedPrecondition,
			locks: keys(func(r *csi.NodeStageVolumeRequest) []idempotency.Key {
				return []idempotency.Key{nodePathKey(kindStagingPath, r.GetVolumeId(), r.GetStagingTargetPath(), false)}
			})},
		{name: rpcNodeUnstage, service: svcNode, serves: []reflect.Type{typeOf[driver.NodeStager]()},
			nodeCap: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
			locks: keys(func(r *csi.NodeUnstageVolumeRequest) []idempotency.Key {
				return []idempotency.Key{nodePathKey(kindStagingPath, r.GetVolumeId(), r.GetStagingTargetPath(), false)}
			})},
		{name: rpcNodePublish, service: svcNode, unsupported: codes.FailedPrecondition,
			locks: keys(func(r *csi.NodePublishVolumeRequest) []idempotency.Key {
				return []idempotency.Key{
					nodePathKey(kindTargetPath, r.GetVolumeId(), r.GetTargetPath(), false),
					nodePathKey(kindStagingPath, r.GetVolumeId(), r.GetStagingTargetPath(), true),
				}
			})},
		{name: rpcNodeUnpublish, service: svcNode,
			locks: keys(func(r *csi.NodeUnpublishVolumeRequest) []idempotency.Key {
				return []idempotency.Key{nodePathKey(kindTargetPath, r.GetVolumeId(), r.GetTargetPath(), false)}
			})},
		{name: rpcNodeGetVolumeStats, service: svcNode, serves: []reflect.Type{typeOf[driver.VolumeStatsReporter]()},
			nodeCap: csi.NodeServiceCapability_RPC_GET_VOLUME_STATS},
		{name: rpcNodeExpand, service: svcNode, serves: []reflect.Type{typeOf[driver.NodeExpander]()},
			nodeCap: csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
			locks: keys(func(r *csi.NodeExpandVolumeRequest) []idempotency.Key {
				ks := []idempotency.Key{
					excl(kindVolume, r.GetVolumeId()),
					nodePathKey(kindStagingPath, r.GetVolumeId(), r.GetStagingTargetPath(), true),
				}
				// volume_path is a target path, or the staging path itself (then the key above
				// covers it).
				if r.GetVolumePath() != r.GetStagingTargetPath() {
					ks = append(ks, nodePathKey(kindTargetPath, r.GetVolumeId(), r.GetVolumePath(), true))
				}
				return ks
			})},
		{name: "NodeGetCapabilities", service: svcNode},
		{name: rpcNodeGetInfo, service: svcNode},
		{name: rpcNodeGetHealth, service: svcNode, serves: []reflect.Type{typeOf[driver.NodeVolumeHealthGetter]()},
			nodeCap: csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH},
		{name: rpcNodeGetStorageHealth, service: svcNode, serves: []reflect.Type{typeOf[driver.StorageHealthReporter]()},
			nodeCap: csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH},
	}
}

// groupControllerRPCs describes the RPCs of the GroupController service.
func groupControllerRPCs() []*rpcSpec {
	return []*rpcSpec{
		{name: "GroupControllerGetCapabilities", service: svcGroupController},
		{name: rpcCreateGroupSnapshot, service: svcGroupController,
			locks: keys(func(r *csi.CreateVolumeGroupSnapshotRequest) []idempotency.Key {
				ks := []idempotency.Key{excl(kindGroupSnapshotName, r.GetName())}
				for _, id := range r.GetSourceVolumeIds() {
					ks = append(ks, shared(kindVolume, id))
				}
				return ks
			})},
		{name: rpcDeleteGroupSnapshot, service: svcGroupController, goneIsDone: true,
			locks: keys(func(r *csi.DeleteVolumeGroupSnapshotRequest) []idempotency.Key {
				ks := []idempotency.Key{excl(kindGroupSnapshot, r.GetGroupSnapshotId())}
				for _, id := range r.GetSnapshotIds() {
					ks = append(ks, excl(kindSnapshot, id))
				}
				return ks
			})},
		{name: rpcGetGroupSnapshot, service: svcGroupController},
	}
}

// volumeGroupRPCs describes the RPCs of the volume-group extension's Controller service.
func volumeGroupRPCs() []*rpcSpec {
	return []*rpcSpec{
		{name: rpcCreateVolumeGroup, service: svcVolumeGroup,
			locks: keys(func(r *vgpb.CreateVolumeGroupRequest) []idempotency.Key {
				return []idempotency.Key{excl(kindVolumeGroupName, r.GetName())}
			})},
		{name: rpcDeleteVolumeGroup, service: svcVolumeGroup, goneIsDone: true,
			locks: keys(func(r *vgpb.DeleteVolumeGroupRequest) []idempotency.Key {
				return []idempotency.Key{excl(kindVolumeGroup, r.GetVolumeGroupId())}
			})},
		// A membership change holds the group and every volume it names: a volume joining or
		// staying must not be deleted or expanded while the group is rearranged.
		{name: rpcModifyVolumeGroup, service: svcVolumeGroup,
			locks: keys(func(r *vgpb.ModifyVolumeGroupMembershipRequest) []idempotency.Key {
				ks := []idempotency.Key{excl(kindVolumeGroup, r.GetVolumeGroupId())}
				for _, id := range r.GetVolumeIds() {
					ks = append(ks, excl(kindVolume, id))
				}
				return ks
			})},
		{name: rpcGetVolumeGroup, service: svcVolumeGroup, serves: []reflect.Type{typeOf[volumegroup.Getter]()}},
		{name: rpcListVolumeGroups, service: svcVolumeGroup, serves: []reflect.Type{typeOf[volumegroup.Lister](), typeOf[volumegroup.PageLister]()}},
	}
}

// cosiRPCs describes the RPCs of COSI's Identity and Provisioner services.
func cosiRPCs() []*rpcSpec {
	return []*rpcSpec{
		// One entry per RPC for every wire version (cosiKeys reads the requests of each);
		// DriverGetExistingBucket exists in v1alpha2 only.
		{name: rpcDriverGetInfo, service: svcCOSIIdentity, wire: []service{svcCOSIIdentityV1alpha1, svcCOSIIdentityV1alpha2}},
		{name: rpcCreateBucket, service: svcCOSIProvisioner, wire: []service{svcCOSIProvisionerV1alpha1, svcCOSIProvisionerV1alpha2},
			locks: cosiKeysOf(rpcCreateBucket)},
		{name: rpcGetExistingBucket, service: svcCOSIProvisioner, wire: []service{svcCOSIProvisionerV1alpha2},
			serves: []reflect.Type{typeOf[bucket.Getter]()}},
		{name: rpcDeleteBucket, service: svcCOSIProvisioner, wire: []service{svcCOSIProvisionerV1alpha1, svcCOSIProvisionerV1alpha2},
			goneIsDone: true, locks: cosiKeysOf(rpcDeleteBucket)},
		{name: rpcGrantBucketAccess, service: svcCOSIProvisioner, wire: []service{svcCOSIProvisionerV1alpha1, svcCOSIProvisionerV1alpha2},
			serves: []reflect.Type{typeOf[bucket.AccessGranter]()}, locks: cosiKeysOf(rpcGrantBucketAccess)},
		{name: rpcRevokeBucketAccess, service: svcCOSIProvisioner, wire: []service{svcCOSIProvisionerV1alpha1, svcCOSIProvisionerV1alpha2},
			serves: []reflect.Type{typeOf[bucket.AccessGranter]()}, goneIsDone: true, locks: cosiKeysOf(rpcRevokeBucketAccess)},
	}
}

// snapshotMetadataRPCs describes the RPCs of the SnapshotMetadata service.
func snapshotMetadataRPCs() []*rpcSpec {
	return []*rpcSpec{
		{name: rpcGetMetadataAllocated, service: svcSnapshotMetadata, stream: true},
		{name: rpcGetMetadataDelta, service: svcSnapshotMetadata, stream: true},
	}
}
