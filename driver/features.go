package driver

// ExpansionMode is the plugin's VolumeExpansion capability.
type ExpansionMode int

const (
	// ExpansionAuto advertises ONLINE expansion when the controller or node backend can expand,
	// and nothing otherwise. ONLINE is a promise: ControllerExpandVolume must then grow published
	// volumes too; a backend that cannot should say ExpansionOffline.
	ExpansionAuto ExpansionMode = iota
	// ExpansionOnline: volumes may be expanded while published.
	ExpansionOnline
	// ExpansionOffline: published volumes are not expanded by ControllerExpandVolume.
	ExpansionOffline
	// ExpansionNone turns expansion off: no VolumeExpansion capability and no EXPAND_VOLUME
	// RPCs, even if a backend could expand.
	ExpansionNone
)

// Features are the capabilities that are promises about behaviour rather than RPCs. No interface
// shows them, so the driver states them here, and only here: plugin.CapabilityOverrides refuses
// them. The library enforces them on requests: a CO that uses a feature the plugin does not
// advertise gets INVALID_ARGUMENT.
type Features struct {
	// CloneVolume: CreateVolume accepts another volume as source (CLONE_VOLUME).
	CloneVolume bool
	// PublishReadonly: ControllerPublishVolume honours readonly=true (PUBLISH_READONLY).
	PublishReadonly bool
	// ListVolumesPublishedNodes: ListVolumes and ControllerGetVolume report the nodes a volume is
	// published on (LIST_VOLUMES_PUBLISHED_NODES; needs a ControllerPublisher).
	ListVolumesPublishedNodes bool
	// SingleNodeMultiWriter: the SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER access
	// modes are understood (controller and node SINGLE_NODE_MULTI_WRITER).
	SingleNodeMultiWriter bool
	// VolumeMountGroup: NodeStage/NodePublish apply VolumeCapability.MountGroup (node
	// VOLUME_MOUNT_GROUP).
	VolumeMountGroup bool
	// VolumeAccessibilityConstraints: volumes are not equally accessible from every node; topology
	// is accepted in CreateVolume/GetCapacity and reported by NodeGetInfo.
	VolumeAccessibilityConstraints bool
	// SnapshotAccessibilityConstraints: snapshots are not usable from every topology.
	SnapshotAccessibilityConstraints bool
	// Expansion is the VolumeExpansion plugin capability.
	Expansion ExpansionMode
}
