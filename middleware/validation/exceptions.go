package validation

import "google.golang.org/protobuf/reflect/protoreflect"

// This file is the one place where the REQUIRED table generated from csi.proto (required_gen.go)
// is adjusted by hand. Every entry follows one principle:
//
//	Strict where the real COs comply; lenient, named and tested where a widely used CO or the
//	conformance tool deviates harmlessly.
//
// Spelled out:
//
//  1. A rule the spec states is enforced as written, REQUIRED repeated and map fields included
//     ("A repeated or map field listed as REQUIRED MUST contain at least 1 element", and a missing
//     REQUIRED field is INVALID_ARGUMENT). Reading the spec's own caveats ("only when the plugin
//     has STAGE_UNSTAGE_VOLUME", "empty means all nodes") is not leniency: those entries have no
//     deviant.
//  2. A rule is relaxed, for that one field only, when a widely used CO (Kubernetes sidecars,
//     Nomad) or csi-sanity, the conformance tool every driver is run against, sends a request that
//     breaks it in its normal operation, no option of the CO or tool avoids it, and the request
//     still says unambiguously what the caller means, so that accepting it loses nothing. The
//     entry names the CO or tool and the versions seen (deviant), says why it is harmless
//     (reason), and names the test that sends exactly that request (test).
//  3. A deviation that the CO's or tool's own configuration avoids is no reason to relax a rule;
//     such decisions are written down in keptStrict, with the reasoning, and tested to stay
//     strict.
//
// TestExceptionsFollowThePrinciple checks the shape of every entry and that every REQUIRED
// repeated or map field of the spec has a written decision, so that a spec upgrade adding one
// cannot slip through unreviewed.

type exceptionKind int

const (
	// alsoRequired: required although no field comment says "This field is REQUIRED". The name
	// may be a oneof, meaning one of its fields must be set.
	alsoRequired exceptionKind = iota
	// notRequired: never enforced here, whatever the generated table says: the answer depends on
	// something only the driver knows, or (with a deviant) a CO or tool leaves the field out.
	notRequired
	// emptyIsAbsent: a message field set to an empty message (no known field set) is checked as
	// if it were not set at all. Always lenient: it needs a deviant.
	emptyIsAbsent
)

type requiredException struct {
	kind   exceptionKind
	msg    protoreflect.FullName
	field  protoreflect.Name
	reason string
	// deviant names the CO or tool, with versions, whose request the entry accepts although the
	// spec forbids it. Empty for entries that read the spec rather than relax it.
	deviant string
	// test names the test function that sends the deviant's exact request; set iff deviant is.
	test string
}

// requiredExceptions are the adjustments to the generated table, strict ones first.
var requiredExceptions = []requiredException{
	// Strict: the spec requires these in prose the generator does not recognise.
	{kind: alsoRequired, msg: "csi.v1.VolumeCapability", field: "access_type", reason: "its oneof comment: one of block, mount MUST be specified"},
	{kind: alsoRequired, msg: "csi.v1.VolumeContentSource", field: "type", reason: "its message comment: one of the type fields MUST be specified"},
	{kind: alsoRequired, msg: "csi.v1.PluginCapability", field: "type", reason: "a capability with no type tells the CO nothing"},
	{kind: alsoRequired, msg: "csi.v1.PluginCapability.Service", field: "type", reason: "UNKNOWN is not a capability"},
	{kind: alsoRequired, msg: "csi.v1.PluginCapability.VolumeExpansion", field: "type", reason: "UNKNOWN is not a capability"},
	{kind: alsoRequired, msg: "csi.v1.ControllerServiceCapability", field: "type", reason: "a capability with no type tells the CO nothing"},
	{kind: alsoRequired, msg: "csi.v1.ControllerServiceCapability.RPC", field: "type", reason: "UNKNOWN is not a capability"},
	{kind: alsoRequired, msg: "csi.v1.NodeServiceCapability", field: "type", reason: "a capability with no type tells the CO nothing"},
	{kind: alsoRequired, msg: "csi.v1.NodeServiceCapability.RPC", field: "type", reason: "UNKNOWN is not a capability"},
	{kind: alsoRequired, msg: "csi.v1.GroupControllerServiceCapability", field: "type", reason: "a capability with no type tells the CO nothing"},
	{kind: alsoRequired, msg: "csi.v1.GroupControllerServiceCapability.RPC", field: "type", reason: "UNKNOWN is not a capability"},
	{kind: alsoRequired, msg: "csi.v1.ListSnapshotsResponse.Entry", field: "snapshot", reason: "the comment ListVolumesResponse.Entry.volume has is missing here; an entry without a snapshot is meaningless"},

	// Strict: the spec's own caveats make these conditional, so only the driver can tell.
	{kind: notRequired, msg: "csi.v1.NodePublishVolumeRequest", field: "staging_target_path", reason: "conditionally required: only when the plugin has STAGE_UNSTAGE_VOLUME, which the driver checks"},
	{kind: notRequired, msg: "csi.v1.ControllerUnpublishVolumeRequest", field: "node_id", reason: "empty means unpublish from all nodes"},
	{kind: notRequired, msg: "csi.v1.NodeGetVolumeStatsRequest", field: "staging_target_path", reason: "only set when the plugin has STAGE_UNSTAGE_VOLUME"},
	{kind: notRequired, msg: "csi.v1.NodeExpandVolumeRequest", field: "staging_target_path", reason: "only set when the plugin has STAGE_UNSTAGE_VOLUME"},

	// Lenient: a CO or the conformance tool deviates, harmlessly.
	{
		kind: notRequired, msg: "csi.v1.DeleteVolumeGroupSnapshotRequest", field: "snapshot_ids",
		deviant: "csi-sanity v5.6.0 (\"DeleteVolumeGroupSnapshot should succeed when an invalid volume id is used\" sends no snapshot_ids and expects OK; no flag changes it)",
		reason:  "the list only cross-checks a group the plugin already knows: for an unknown group the answer is OK either way, and for a known one the driver passes the list to the backend, which reports a mismatch (INVALID_ARGUMENT)",
		test:    "TestLenientCSISanityGroupSnapshotWithoutSnapshotIDs",
	},
	{
		kind: notRequired, msg: "csi.v1.GetVolumeGroupSnapshotRequest", field: "snapshot_ids",
		deviant: "csi-sanity v5.6.0 (\"GetVolumeGroupSnapshot should fail when an invalid volume id is used\" sends no snapshot_ids and expects NOT_FOUND; no flag changes it)",
		reason:  "the list only cross-checks a group the plugin already knows: an unknown group is NOT_FOUND either way, and for a known one the backend reports a mismatch",
		test:    "TestLenientCSISanityGroupSnapshotWithoutSnapshotIDs",
	},
	{
		kind: emptyIsAbsent, msg: "csi.v1.CreateVolumeRequest", field: "accessibility_requirements",
		deviant: "HashiCorp Nomad v1.1.0 through v2.0.5 (client/structs/csi.go ClientCSIControllerCreateVolumeRequest.ToCSIRequest and plugins/csi/plugin.go TopologyRequirement.ToCSIRepresentation always build a TopologyRequirement, with empty requisite and preferred when the volume has no topology_request; no option avoids it)",
		reason:  "the spec says \"If TopologyRequirement is specified either requisite or preferred or both MUST be specified\"; a requirement that requires nothing means exactly what an absent one means, and refusing it makes `nomad volume create` fail for every csikit driver",
		test:    "TestLenientNomadCreateVolumeEmptyTopology",
	},
	{
		kind: emptyIsAbsent, msg: "csi.v1.CreateSnapshotRequest", field: "accessibility_requirements",
		deviant: "HashiCorp Nomad v1.1.0 through v2.0.5 builds its TopologyRequirements with one converter (plugins/csi/plugin.go TopologyRequirement.ToCSIRepresentation) that yields an empty message; it sends none in CreateSnapshot today, and the field has the same message type and meaning as CreateVolume's",
		reason:  "same message, same meaning: a requirement that requires nothing is an absent one; one TopologyRequirement rule for both RPCs keeps the driver's topology handling uniform",
		test:    "TestLenientNomadCreateVolumeEmptyTopology",
	},
}

// keptStrict records REQUIRED repeated and map fields that stay strict although some CO or tool
// has been seen sending them empty, or where leniency was considered; the reasoning is kept beside
// the rule so that nobody relaxes it by accident. Every REQUIRED repeated or map field of the spec
// is either here, in strictListsAndMaps, or in a lenient requiredExceptions entry.
var keptStrict = map[protoreflect.FullName]string{
	"csi.v1.ControllerModifyVolumeRequest.mutable_parameters": "spec.md: \"A repeated or map field listed as REQUIRED MUST contain at least 1 element\", and a missing REQUIRED field is INVALID_ARGUMENT. " +
		"Kubernetes (external-resizer) never sends a VolumeAttributesClass without parameters, so the real CO complies. " +
		"csi-sanity v5.6.0 sends an empty map unless --csi.testvolumemutableparameters names a file (TestVolumeMutableParametersFile in-process); " +
		"that is why a flag-less csi-sanity run shows three ModifyVolume failures. The tool's own option avoids the deviation, " +
		"so the rule stays: run csi-sanity with a mutable-parameters file whose keys the driver allows.",
}

// strictListsAndMaps are the other REQUIRED repeated and map fields, enforced as written (>= 1
// element) because every CO seen complies. The reason records what was checked.
var strictListsAndMaps = map[protoreflect.FullName]string{
	"csi.v1.CreateVolumeRequest.volume_capabilities":                          "Kubernetes external-provisioner sends one per PVC access mode; Nomad requires at least one capability block; csi-sanity sends one",
	"csi.v1.ValidateVolumeCapabilitiesRequest.volume_capabilities":            "csi-sanity v5.6.0 expects INVALID_ARGUMENT (\"should fail when no volume capabilities are provided\"); Nomad sends the claim's capabilities",
	"csi.v1.CreateVolumeGroupSnapshotRequest.source_volume_ids":               "Kubernetes external-snapshotter fails before calling when its selector matches no PVC; a group of nothing cannot be snapshotted",
	"csi.v1.ValidateVolumeCapabilitiesResponse.Confirmed.volume_capabilities": "a response: the plugin's own output, checked with WithResponseChecks; a Confirmed without capabilities confirms nothing",
	"csi.v1.VolumeGroupSnapshot.snapshots":                                    "a response: the plugin's own output; a group snapshot of no snapshots is a plugin bug",
}

// reviewedComments lists the csi.proto comments that say REQUIRED outside the phrases the
// generator recognises, with what a person decided. The generator prints any new one.
var reviewedComments = map[string]string{
	"csi.v1.PluginCapability.Service.Type.CONTROLLER_SERVICE":       "speaks of the REQUIRED ControllerService RPCs, not of a field",
	"csi.v1.PluginCapability.Service.Type.GROUP_CONTROLLER_SERVICE": "speaks of the REQUIRED GroupController RPCs, not of a field",
	"csi.v1.VolumeContentSource.SnapshotSource.snapshot_id":         "\"Plugin is REQUIRED to support...\" is about the plugin; the same comment makes the field REQUIRED",
	"csi.v1.Topology": "\"The key name segment is REQUIRED\" is about topology keys; the Topology rule checks it",
}

// emptyIsAbsentFields are the message fields of the emptyIsAbsent exceptions, by full name.
var emptyIsAbsentFields = func() map[protoreflect.FullName]bool {
	out := make(map[protoreflect.FullName]bool)
	for _, e := range requiredExceptions {
		if e.kind == emptyIsAbsent {
			out[e.msg.Append(e.field)] = true
		}
	}
	return out
}()
