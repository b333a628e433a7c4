package validation

import "google.golang.org/protobuf/reflect/protoreflect"

// This file is the one place where the REQUIRED table generated from csi.proto (required_gen.go)
// is adjusted by hand. Every entry carries the reason; the tests check that every name resolves
// to a real field or oneof and that every comment the generator could not classify is reviewed.

type exceptionKind int

const (
	// alsoRequired: required although no field comment says "This field is REQUIRED". The name
	// may be a oneof, meaning one of its fields must be set.
	alsoRequired exceptionKind = iota
	// notRequired: never enforced here, whatever the generated table says, because the answer
	// depends on something only the driver knows.
	notRequired
)

type requiredException struct {
	kind   exceptionKind
	msg    protoreflect.FullName
	field  protoreflect.Name
	reason string
}

var requiredExceptions = []requiredException{
	{alsoRequired, "csi.v1.VolumeCapability", "access_type", "its oneof comment: one of block, mount MUST be specified"},
	{alsoRequired, "csi.v1.VolumeContentSource", "type", "its message comment: one of the type fields MUST be specified"},
	{alsoRequired, "csi.v1.PluginCapability", "type", "a capability with no type tells the CO nothing"},
	{alsoRequired, "csi.v1.PluginCapability.Service", "type", "UNKNOWN is not a capability"},
	{alsoRequired, "csi.v1.PluginCapability.VolumeExpansion", "type", "UNKNOWN is not a capability"},
	{alsoRequired, "csi.v1.ControllerServiceCapability", "type", "a capability with no type tells the CO nothing"},
	{alsoRequired, "csi.v1.ControllerServiceCapability.RPC", "type", "UNKNOWN is not a capability"},
	{alsoRequired, "csi.v1.NodeServiceCapability", "type", "a capability with no type tells the CO nothing"},
	{alsoRequired, "csi.v1.NodeServiceCapability.RPC", "type", "UNKNOWN is not a capability"},
	{alsoRequired, "csi.v1.GroupControllerServiceCapability", "type", "a capability with no type tells the CO nothing"},
	{alsoRequired, "csi.v1.GroupControllerServiceCapability.RPC", "type", "UNKNOWN is not a capability"},
	{alsoRequired, "csi.v1.ListSnapshotsResponse.Entry", "snapshot", "the comment ListVolumesResponse.Entry.volume has is missing here; an entry without a snapshot is meaningless"},

	{notRequired, "csi.v1.NodePublishVolumeRequest", "staging_target_path", "conditionally required: only when the plugin has STAGE_UNSTAGE_VOLUME, which the driver checks"},
	{notRequired, "csi.v1.ControllerUnpublishVolumeRequest", "node_id", "empty means unpublish from all nodes"},
	{notRequired, "csi.v1.NodeGetVolumeStatsRequest", "staging_target_path", "only set when the plugin has STAGE_UNSTAGE_VOLUME"},
	{notRequired, "csi.v1.NodeExpandVolumeRequest", "staging_target_path", "only set when the plugin has STAGE_UNSTAGE_VOLUME"},
	{notRequired, "csi.v1.DeleteVolumeGroupSnapshotRequest", "snapshot_ids", "csi-sanity v5.6.0 expects OK for an unknown group sent without it; the driver passes the list to the backend, which reports a mismatch (INVALID_ARGUMENT) for a group it has"},
	{notRequired, "csi.v1.GetVolumeGroupSnapshotRequest", "snapshot_ids", "csi-sanity v5.6.0 expects NOT_FOUND for an unknown group sent without it; the backend reports a mismatch for a group it has"},
}

// reviewedComments lists the csi.proto comments that say REQUIRED outside the phrases the
// generator recognises, with what a person decided. The generator prints any new one.
var reviewedComments = map[string]string{
	"csi.v1.PluginCapability.Service.Type.CONTROLLER_SERVICE":       "speaks of the REQUIRED ControllerService RPCs, not of a field",
	"csi.v1.PluginCapability.Service.Type.GROUP_CONTROLLER_SERVICE": "speaks of the REQUIRED GroupController RPCs, not of a field",
	"csi.v1.VolumeContentSource.SnapshotSource.snapshot_id":         "\"Plugin is REQUIRED to support...\" is about the plugin; the same comment makes the field REQUIRED",
	"csi.v1.Topology": "\"The key name segment is REQUIRED\" is about topology keys; the Topology rule checks it",
}
