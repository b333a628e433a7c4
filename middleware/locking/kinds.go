package locking

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

// COSI resource kinds. A grant holds the account name it creates; a revoke holds the account ID
// the grant returned; both hold their buckets shared, so a bucket is not deleted under them.
const (
	KindBucket      = "bucket"
	KindBucketName  = "bucket name"
	KindAccountName = "bucket access account name"
	KindAccount     = "bucket access account"
)
