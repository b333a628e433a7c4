package driver

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/secrets"
)

// EphemeralContextKey is the volume context key Kubernetes sets to "true" on an inline ephemeral
// volume. Such a volume is published without being created or staged first, so NodePublishVolume
// receives no staging path even from a plugin that stages.
const EphemeralContextKey = "csi.storage.k8s.io/ephemeral"

// AccessMode says how many nodes and workloads may use a volume at once. The values are those of
// csi.VolumeCapability_AccessMode_Mode, so a conversion is a plain cast.
type AccessMode int32

// The access modes of the CSI spec. "Node" counts nodes; "writer" counts workloads that write.
const (
	// AccessModeUnknown is the zero value: no mode stated. No backend should be asked to serve it.
	AccessModeUnknown AccessMode = 0
	// SingleNodeWriter: read-write on one node, by any number of workloads there.
	SingleNodeWriter AccessMode = 1
	// SingleNodeReaderOnly: read-only on one node.
	SingleNodeReaderOnly AccessMode = 2
	// MultiNodeReaderOnly: read-only on many nodes at once.
	MultiNodeReaderOnly AccessMode = 3
	// MultiNodeSingleWriter: on many nodes, read-write on one of them only.
	MultiNodeSingleWriter AccessMode = 4
	// MultiNodeMultiWriter: read-write on many nodes at once (a shared filesystem or a
	// cluster-aware block user).
	MultiNodeMultiWriter AccessMode = 5
	// SingleNodeSingleWriter: read-write by one workload on one node; needs
	// Features.SingleNodeMultiWriter.
	SingleNodeSingleWriter AccessMode = 6
	// SingleNodeMultiWriter: read-write by several workloads on one node; needs
	// Features.SingleNodeMultiWriter.
	SingleNodeMultiWriter AccessMode = 7
)

// String returns the CSI name of the mode, e.g. "SINGLE_NODE_WRITER".
func (m AccessMode) String() string {
	return csi.VolumeCapability_AccessMode_Mode(m).String()
}

// MultiNode reports whether the mode lets more than one node use the volume at once.
func (m AccessMode) MultiNode() bool {
	return m == MultiNodeReaderOnly || m == MultiNodeSingleWriter || m == MultiNodeMultiWriter
}

// ReadOnly reports whether the mode forbids every write.
func (m AccessMode) ReadOnly() bool {
	return m == SingleNodeReaderOnly || m == MultiNodeReaderOnly
}

// VolumeCapability is one way the CO intends to use a volume: as a raw block device or as a mounted
// filesystem, with an access mode.
type VolumeCapability struct {
	// AccessMode is how many nodes and writers may use the volume at once.
	AccessMode AccessMode
	// Block is true for raw block access; otherwise the volume is mounted as a filesystem.
	Block bool
	// FSType is the requested filesystem type for mount access ("" = the plugin's default).
	FSType string
	// MountFlags are extra mount options for mount access. They MAY be sensitive: never log them.
	MountFlags []string
	// MountGroup is the group ID to mount with (only sent to plugins with Features.VolumeMountGroup).
	MountGroup string
}

// Topology is one accessible location: topology keys to segment values, for example
// {"topology.example.com/zone": "zone-1"}.
type Topology map[string]string

// TopologyRequirement is where a new volume or snapshot must (Requisite) and should preferably
// (Preferred, in order) be accessible from.
type TopologyRequirement struct {
	// Requisite lists the locations the volume must be accessible from at least one of; a
	// volume the backend can only place elsewhere is ErrResourceExhausted.
	Requisite []Topology

	// Preferred lists locations in order of preference; try the first one first, which is how
	// Kubernetes places a volume next to the pod that waits for it.
	Preferred []Topology
}

// CapacityRange bounds the size of a volume in bytes. Zero means "not set" for either bound. The
// library has already checked that neither bound is negative and that LimitBytes >= RequiredBytes.
type CapacityRange struct {
	// RequiredBytes is the least the volume may have; 0 means no lower bound.
	RequiredBytes int64

	// LimitBytes is the most the volume may have; 0 means no upper bound.
	LimitBytes int64
}

// IsZero reports whether neither bound is set.
func (r CapacityRange) IsZero() bool { return r.RequiredBytes == 0 && r.LimitBytes == 0 }

// Contains reports whether size satisfies both bounds.
func (r CapacityRange) Contains(size int64) bool {
	return size >= r.RequiredBytes && (r.LimitBytes == 0 || size <= r.LimitBytes)
}

// String shows the range as [required, limit] bytes, with "no limit" for a bound that is not set:
// "[1048576, no limit] bytes". Messages that print a range use it, so an unset bound reads the
// same everywhere.
func (r CapacityRange) String() string {
	bound := func(n int64) string {
		if n == 0 {
			return "no limit"
		}
		return strconv.FormatInt(n, 10)
	}
	return "[" + bound(r.RequiredBytes) + ", " + bound(r.LimitBytes) + "] bytes"
}

// Resolve picks the size to provision: the required size (or defaultSize when no bound is set,
// capped by the limit), rounded up to a multiple of granularity (1 or less means bytes). It returns
// an error wrapping ErrOutOfRange when rounding up breaks the limit or does not fit in an int64 (a
// required size near the maximum), so a backend can return it as is.
func (r CapacityRange) Resolve(defaultSize, granularity int64) (int64, error) {
	size := r.RequiredBytes
	if size == 0 {
		size = defaultSize
		if r.LimitBytes != 0 && size > r.LimitBytes {
			size = r.LimitBytes
		}
	}
	if size < 0 {
		return 0, fmt.Errorf("size %d bytes is negative: %w", size, ErrOutOfRange)
	}
	if granularity > 1 && size%granularity != 0 {
		up := granularity - size%granularity
		if size > math.MaxInt64-up {
			return 0, fmt.Errorf("%d bytes rounded up to a multiple of %d bytes does not fit in 64 bits: %w",
				size, granularity, ErrOutOfRange)
		}
		size += up
	}
	if r.LimitBytes != 0 && size > r.LimitBytes {
		return 0, fmt.Errorf("no size that is a multiple of %d bytes fits between %d and %d bytes: %w",
			granularity, r.RequiredBytes, r.LimitBytes, ErrOutOfRange)
	}
	return size, nil
}

// ContentSource is what a new volume is pre-populated from: a snapshot or another volume. The zero
// value means an empty volume.
type ContentSource struct {
	// SnapshotID is the snapshot to restore from (needs a Snapshotter).
	SnapshotID string

	// VolumeID is the volume to clone (needs Features.CloneVolume).
	VolumeID string
}

// IsZero reports whether there is no source.
func (s ContentSource) IsZero() bool { return s.SnapshotID == "" && s.VolumeID == "" }

// Secrets holds the secrets the CO passed with a request. Printing it with fmt, encoding it as
// JSON, or logging it with a structured logger that uses either (through fmt.Stringer or
// json.Marshaler) shows the keys only, so a stray log line cannot leak a value.
type Secrets map[string]string

// String lists the keys with their values replaced.
func (s Secrets) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(secrets.Placeholder)
	}
	b.WriteByte(']')
	return b.String()
}

// GoString is like String, so %#v does not leak values either.
func (s Secrets) GoString() string { return "driver.Secrets" + s.String() }

// MarshalJSON writes the keys with their values replaced, so encoding/json (and loggers that use
// it) cannot leak a value either.
func (s Secrets) MarshalJSON() ([]byte, error) {
	redacted := make(map[string]string, len(s))
	for k := range s {
		redacted[k] = secrets.Placeholder
	}
	return json.Marshal(redacted)
}

// Volume is what a backend reports about one volume.
type Volume struct {
	// ID is the plugin-chosen identifier; required, at most 128 bytes.
	ID string
	// CapacityBytes is the size; 0 means unknown.
	CapacityBytes int64
	// Context is opaque, immutable data the CO passes back on publish/stage calls.
	Context map[string]string
	// Source is what the volume was created from. The library fills it from the request on
	// CreateVolume when the backend leaves it empty.
	Source ContentSource
	// AccessibleTopology lists where the volume is accessible from (needs
	// Features.VolumeAccessibilityConstraints).
	AccessibleTopology []Topology
}

// VolumeEntry is a volume and the nodes it is controller-published on (reported when
// Features.ListVolumesPublishedNodes is set).
type VolumeEntry struct {
	// Volume is the volume itself.
	Volume Volume

	// PublishedNodeIDs are the nodes the volume is attached to by ControllerPublishVolume; the
	// CO compares them with its own records to find attachments it lost.
	PublishedNodeIDs []string
}

// Snapshot is what a backend reports about one snapshot.
type Snapshot struct {
	// ID is the plugin-chosen identifier; required, at most 128 bytes.
	ID string

	// SourceVolumeID is the volume the snapshot was taken of. The library fills it from the
	// request on CreateSnapshot when empty.
	SourceVolumeID string

	// SizeBytes is the snapshot's size, which the CO uses as the minimum size of a volume
	// restored from it; 0 means unknown.
	SizeBytes int64

	// CreationTime is when the snapshot was cut; required. Report the time stored with the
	// snapshot, not the time of the call, so every answer about it agrees.
	CreationTime time.Time

	// ReadyToUse says whether a volume can be created from the snapshot now; false while the
	// storage still processes (e.g. uploads) it, and the CO polls until it is true.
	ReadyToUse bool

	// GroupSnapshotID is set when the snapshot belongs to a group snapshot and cannot be deleted
	// alone.
	GroupSnapshotID string

	// AccessibleTopology lists where the snapshot can be restored from (needs
	// Features.SnapshotAccessibilityConstraints).
	AccessibleTopology []Topology
}

// GroupSnapshot is a set of snapshots taken together.
type GroupSnapshot struct {
	// ID is the plugin-chosen identifier; required.
	ID string

	// Snapshots are the members, one per source volume, each with GroupSnapshotID set to ID.
	Snapshots []Snapshot

	// CreationTime is when the group was cut; required.
	CreationTime time.Time
	// ReadyToUse is forced to false by the library when any member snapshot is not ready.
	ReadyToUse bool
}

// Capacity is the answer to GetCapacity.
type Capacity struct {
	// AvailableBytes is the space left for new volumes matching the request's capabilities,
	// parameters and topology.
	AvailableBytes int64

	// MaximumVolumeSize is the largest volume the backend can create, which may be less than
	// AvailableBytes (a pool split over devices); 0 means no maximum and is not reported.
	MaximumVolumeSize int64

	// MinimumVolumeSize is the smallest volume the backend can create; 0 means no minimum.
	MinimumVolumeSize int64
}

// HealthStatus is one adverse condition of a volume. The values are those of
// csi.VolumeHealthErrorType.
type HealthStatus int32

// The volume health conditions of the CSI spec.
const (
	HealthDegraded     HealthStatus = 1
	HealthInaccessible HealthStatus = 2
	HealthDataLoss     HealthStatus = 3
)

// HealthCondition is one adverse condition with a machine-readable CamelCase reason.
type HealthCondition struct {
	// Status is the kind of condition.
	Status HealthStatus

	// Reason is a short CamelCase word a program can match on, e.g. "DeviceFailed".
	Reason string

	// Message explains the condition to a human; it ends up in the CO's events.
	Message string
}

// VolumeHealth is the health of one volume; no conditions means healthy as far as the plugin knows.
type VolumeHealth struct {
	// VolumeID is the volume reported on.
	VolumeID string

	// Conditions are the volume's current adverse conditions.
	Conditions []HealthCondition
}

// StorageHealthStatus is the state of a storage backend seen from a node. The values are those of
// csi.StorageHealthErrorType.
type StorageHealthStatus int32

// The storage health states of the CSI spec.
const (
	StorageDegraded    StorageHealthStatus = 1
	StorageUnreachable StorageHealthStatus = 2
)

// StorageHealth is one adverse condition of a storage backend seen from this node.
type StorageHealth struct {
	// Status is the kind of condition.
	Status StorageHealthStatus

	// Reason is a short CamelCase word a program can match on.
	Reason string

	// Message explains the condition to a human.
	Message string
	// Capability, when set, limits the condition to volumes used this way.
	Capability *VolumeCapability
}

// UsageUnit says what a VolumeUsage counts.
type UsageUnit int32

// The usage units of the CSI spec.
const (
	UsageBytes  UsageUnit = 1
	UsageInodes UsageUnit = 2
)

// VolumeUsage is one usage figure of a volume.
type VolumeUsage struct {
	// Unit is what the figures count.
	Unit UsageUnit

	// Total is the volume's capacity in Unit.
	Total int64

	// Used is the amount in use; may be 0 (unknown) for block volumes.
	Used int64

	// Available is what a workload can still use, which may be less than Total-Used (reserved
	// blocks); may be 0 (unknown) for block volumes.
	Available int64
}

// NodeInfo identifies a node to the CO.
type NodeInfo struct {
	// NodeID is required and at most 256 bytes (128 recommended).
	NodeID string
	// MaxVolumesPerNode is the attach limit; 0 lets the CO decide.
	MaxVolumesPerNode int64
	// AccessibleTopology is where this node is (needs Features.VolumeAccessibilityConstraints).
	AccessibleTopology Topology
}

// BlockMetadataType says whether block ranges have one fixed size or vary. The values are those of
// csi.BlockMetadataType.
type BlockMetadataType int32

// The block metadata styles of the CSI spec.
const (
	FixedLength    BlockMetadataType = 1
	VariableLength BlockMetadataType = 2
)

// BlockRange is one data range of a volume or snapshot.
type BlockRange struct {
	// Offset is the range's first byte, from the start of the volume.
	Offset int64

	// Size is the range's length in bytes; with FixedLength every range has the same Size.
	Size int64
}

// End is the offset just past the range.
func (r BlockRange) End() int64 { return r.Offset + r.Size }
