package drivertest

// CheckVolumeGroups names csikit's specs for the volume-group service
// (volumegroup.Controller). They run when GetPluginInfo's manifest lists the served group RPCs
// under plugin.ManifestVolumeGroupRPCs, which every csikit plugin with Config.VolumeGroups does,
// and are skipped otherwise.
const CheckVolumeGroups Check = "volume-groups"

// VolumeGroupOptions say what the volume-group specs may expect of a driver beyond the
// volume-group spec. That spec leaves some error rows to the driver: which volumes are
// incompatible, whether there is a member limit, what puts a group in use. Each option turns on
// the spec for one such row. While the option is unset, the spec is skipped, naming the option.
type VolumeGroupOptions struct {
	// Parameters are the CreateVolumeGroup parameters (a VolumeGroupClass); nil means none.
	Parameters map[string]string
	// IncompatibleParameters are parameters a group of the same name must not be created with:
	// CreateVolumeGroup with them after Parameters answers ALREADY_EXISTS. nil means Parameters
	// plus a key of csikit's own.
	IncompatibleParameters map[string]string
	// Secrets are sent with every volume-group call (the VolumeGroupClass's secret). Values of
	// at least 8 bytes are also searched for in the plugin's logs at the end of the run.
	Secrets map[string]string
	// MaxMembers is the most volumes the driver lets one group hold. When set,
	// ModifyVolumeGroupMembership with one more must answer RESOURCE_EXHAUSTED and change
	// nothing. 0 skips that spec.
	MaxMembers int
	// ExclusiveMembership declares that a volume belongs to one group at most, so asking to add
	// a member of another group is the "volume incompatible" case: INVALID_ARGUMENT, nothing
	// changed.
	ExclusiveMembership bool
	// IncompatibleVolumeParameters, when set, are CreateVolume parameters giving a volume that
	// cannot join a group made with Parameters: adding it answers INVALID_ARGUMENT.
	IncompatibleVolumeParameters map[string]string
	// PublishedMemberInUse declares that a group with a member published by
	// ControllerPublishVolume is in use: DeleteVolumeGroup answers FAILED_PRECONDITION and
	// deletes nothing until the member is unpublished.
	PublishedMemberInUse bool
	// JoinParameter is the CreateVolume parameter, if the driver has one, whose value (a group
	// ID) makes the new volume a member of that group.
	JoinParameter string
	// SnapshotParameter is the CreateVolumeGroupSnapshot parameter, if the driver has one, whose
	// value (a group ID) asks for a snapshot of exactly that group's members: with the members
	// as source_volume_ids it succeeds, with fewer it answers INVALID_ARGUMENT.
	SnapshotParameter string
}
