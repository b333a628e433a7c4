package locking

import "path/filepath"

// Resource kinds: the Kind of an idempotency.Key, named in ABORTED messages. Volume IDs and names
// live in different kinds, so a name that happens to equal some volume ID does not conflict with
// it. Which RPC locks which resources is the driver's policy (its RPC table), not this package's.
const (
	KindVolume            = "volume"
	KindVolumeName        = "volume name"
	KindSnapshot          = "snapshot"
	KindSnapshotName      = "snapshot name"
	KindGroupSnapshot     = "group snapshot"
	KindGroupSnapshotName = "group snapshot name"
	KindVolumeGroup       = "volume group"
	KindVolumeGroupName   = "volume group name"
)

// Node path kinds: the node RPCs hold the mount point they work on rather than the whole volume,
// so that one volume published to several targets (two pods on one node, a multi-writer volume)
// is published to them at once. The ID is [NodePathID] of the volume and the path.
const (
	// KindStagingPath is a volume's staging path: NodeStageVolume and NodeUnstageVolume hold it
	// exclusive, NodePublishVolume shared (it publishes from it).
	KindStagingPath = "volume at staging path"
	// KindTargetPath is a volume's target path: NodePublishVolume and NodeUnpublishVolume hold
	// it exclusive.
	KindTargetPath = "volume at target path"
)

// NodePathID is the ID of a KindStagingPath or KindTargetPath lock: the volume ID and the
// cleaned path joined by a NUL byte. A path handed to the kernel cannot hold NUL, so the last NUL
// separates the two and distinct (volume, mount point) pairs get distinct IDs whatever the volume
// ID contains; "/a/b/" and "/a/b" name one mount point and get one ID. The lock message quotes
// the ID, showing the separator as \x00.
func NodePathID(volumeID, path string) string { return volumeID + "\x00" + filepath.Clean(path) }

// COSI resource kinds. A grant holds the account name it creates; a revoke holds the account ID
// the grant returned; both hold their buckets shared, so a bucket is not deleted under them.
const (
	KindBucket      = "bucket"
	KindBucketName  = "bucket name"
	KindAccountName = "bucket access account name"
	KindAccount     = "bucket access account"
)
