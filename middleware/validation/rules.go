package validation

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// The field rules of the CSI spec that are not about REQUIRED. They are looked up by name once,
// when a message's plan is compiled, never per call.

const (
	maxString     = 128  // spec "Size Limits": string
	maxMap        = 4096 // spec "Size Limits": map<string, string>, keys and values together
	maxPath       = 4096 // PATH_MAX; path fields override the general limit
	maxMountFlags = 4096 // VolumeCapability.MountVolume.mount_flags, all flags together
	maxNodeID     = 256  // NodeGetInfoResponse.node_id overrides the general limit
	maxDNSName    = 63   // plugin name, topology key prefix and name, topology value
	maxKeyInError = 64   // map keys are quoted in messages, truncated to this many bytes
)

// pathSuffix finds the path fields: every singular string field whose name ends in it, in any
// checked message. The set is derived from the descriptors rather than listed, so that a path
// field a spec upgrade adds gets the path rules at once; TestPathFieldsPinned lists the fields of
// the current spec and cross-checks them against csi.proto's comments, so that it cannot happen
// silently either. Every csi.proto path field "overrides the general CSI size limit": the spec
// asks for the OS maximum (kubelet's pod volume paths are about 131 bytes), so a path may be up
// to maxPath bytes, and it must be absolute unless relativeIsNotFound says otherwise.
const pathSuffix = "_path"

// isPathField reports whether fd gets the path rules (see pathSuffix).
func isPathField(fd protoreflect.FieldDescriptor) bool {
	return fd.Kind() == protoreflect.StringKind && !fd.IsList() && !fd.IsMap() &&
		strings.HasSuffix(string(fd.Name()), pathSuffix)
}

// relativeIsNotFound are path fields whose RPCs answer a relative path with NOT_FOUND ("volume
// does not exist on the specified path"), not INVALID_ARGUMENT: the volume can never be at a
// relative path, and csi-sanity expects NOT_FOUND for "some/path". The driver answers it; here
// they keep only the path length limit (maxPath, never the general 128 bytes: kubelet's paths
// are longer).
var relativeIsNotFound = map[protoreflect.FullName]bool{
	"csi.v1.NodeGetVolumeStatsRequest.volume_path": true,
	"csi.v1.NodeExpandVolumeRequest.volume_path":   true,
}

// csiMaxLenOverrides replaces the general string limit of single fields (of each element, for
// repeated ones). A node ID may be 256 bytes in NodeGetInfo, and the CO passes it back as is, so
// every field that carries a node ID takes the same limit.
var csiMaxLenOverrides = map[protoreflect.FullName]int{
	"csi.v1.NodeGetInfoResponse.node_id":                                 maxNodeID,
	"csi.v1.ControllerPublishVolumeRequest.node_id":                      maxNodeID,
	"csi.v1.ControllerUnpublishVolumeRequest.node_id":                    maxNodeID,
	"csi.v1.ListVolumesResponse.VolumeStatus.published_node_ids":         maxNodeID,
	"csi.v1.ControllerGetVolumeResponse.VolumeStatus.published_node_ids": maxNodeID,
}

// totalLimitFields are repeated strings limited in total instead of per element.
var totalLimitFields = map[protoreflect.FullName]int{
	"csi.v1.VolumeCapability.MountVolume.mount_flags": maxMountFlags,
}

// nameFields are the suggested names: any Unicode but the banned control characters.
var nameFields = map[protoreflect.FullName]bool{
	"csi.v1.CreateVolumeRequest.name":              true,
	"csi.v1.CreateSnapshotRequest.name":            true,
	"csi.v1.CreateVolumeGroupSnapshotRequest.name": true,
}

// csiKnownEnumFields must hold a value the enum declares: an access mode from a newer spec is
// not one this plugin can honour.
var csiKnownEnumFields = map[protoreflect.FullName]bool{
	"csi.v1.VolumeCapability.AccessMode.mode": true,
}

// positiveFields must be greater than zero (the general rule only forbids negatives).
var positiveFields = map[protoreflect.FullName]bool{
	"csi.v1.BlockMetadata.size_bytes": true,
}

// outOfRangeFields report a negative value as OUT_OF_RANGE, per the spec's error tables.
var outOfRangeFields = map[protoreflect.FullName]bool{
	"csi.v1.GetMetadataAllocatedRequest.starting_offset": true,
	"csi.v1.GetMetadataDeltaRequest.starting_offset":     true,
}

// csiPluginNameFields hold a plugin name (see PluginName).
var csiPluginNameFields = map[protoreflect.FullName]bool{
	"csi.v1.GetPluginInfoResponse.name": true,
}

// topologySegmentFields are Topology maps: key and value syntax, case-insensitive unique keys.
var topologySegmentFields = map[protoreflect.FullName]bool{
	"csi.v1.Topology.segments": true,
}

// messageRules are the checks that look at several fields of one message.
var messageRules = map[protoreflect.FullName]special{
	"csi.v1.CapacityRange":       specialCapacityRange,
	"csi.v1.TopologyRequirement": specialTopologyRequirement,
}
