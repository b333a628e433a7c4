package plugin

import "path/filepath"

// Resource kinds: the Kind of an idempotency.Key, named in ABORTED messages and in the lock
// conflict metric. They are this package's; the locking middleware takes whatever kind it is
// given. Volume IDs and names live in different kinds, so a name that happens to equal some
// volume ID does not conflict with it. The RPC table (rpcs.go) says which RPC locks what.
const (
	kindVolume            = "volume"
	kindVolumeName        = "volume name"
	kindSnapshot          = "snapshot"
	kindSnapshotName      = "snapshot name"
	kindGroupSnapshot     = "group snapshot"
	kindGroupSnapshotName = "group snapshot name"
	kindVolumeGroup       = "volume group"
	kindVolumeGroupName   = "volume group name"
)

// Node path kinds: the node RPCs hold the mount point they work on rather than the whole volume,
// so that one volume published to several targets (two pods on one node, a multi-writer volume)
// is published to them at once. The ID is nodePathID of the volume and the path.
const (
	// kindStagingPath is a volume's staging path: NodeStageVolume and NodeUnstageVolume hold it
	// exclusive, NodePublishVolume shared (it publishes from it).
	kindStagingPath = "volume at staging path"
	// kindTargetPath is a volume's target path: NodePublishVolume and NodeUnpublishVolume hold
	// it exclusive.
	kindTargetPath = "volume at target path"
)

// nodePathID is the ID of a kindStagingPath or kindTargetPath lock: the volume ID and the
// cleaned path joined by a NUL byte. A path handed to the kernel cannot hold NUL, so the last NUL
// separates the two and distinct (volume, mount point) pairs get distinct IDs whatever the volume
// ID contains; "/a/b/" and "/a/b" name one mount point and get one ID. The lock message quotes
// the ID, showing the separator as \x00.
func nodePathID(volumeID, path string) string { return volumeID + "\x00" + filepath.Clean(path) }

// COSI resource kinds. A grant holds the account name it creates; a revoke holds the account ID
// the grant returned; both hold their buckets shared, so a bucket is not deleted under them.
const (
	kindBucket      = "bucket"
	kindBucketName  = "bucket name"
	kindAccountName = "bucket access account name"
	kindAccount     = "bucket access account"
)
