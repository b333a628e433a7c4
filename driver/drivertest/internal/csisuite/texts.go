package csisuite

// The leaf texts of csikit's own specs. drivertest's mount-spec table names some by their full
// text, group and leaf.
const (
	ItPageVolumes   = "ListVolumes returns every volume exactly once across pages of 1, 3 and 7 entries"
	ItPageSnapshots = "ListSnapshots returns every snapshot exactly once across pages of 1, 3 and 7 entries, filtered or not"
	ItPageErrors    = "list calls answer ABORTED to an invalid starting_token and INVALID_ARGUMENT to a negative max_entries"

	ItGroupLifecycle = "a group snapshot is created idempotently, read back, restored from and deleted idempotently"

	ItConcurrentCreate  = "identical concurrent CreateVolume calls create one volume; each succeeds with it or is ABORTED"
	ItConcurrentPublish = "identical concurrent ControllerPublishVolume and ControllerUnpublishVolume calls succeed identically or are ABORTED"
	ItConcurrentDelete  = "identical concurrent DeleteVolume calls succeed or are ABORTED, and the volume is gone"
	ItConcurrentNode    = "identical concurrent NodeStageVolume, NodePublishVolume, NodeUnpublishVolume and NodeUnstageVolume calls succeed identically or are ABORTED"

	ItRepeatController = "a repeated CreateVolume, ControllerPublishVolume, ControllerExpandVolume or CreateSnapshot gets the same answer, a repeated delete or unpublish succeeds"
	ItRepeatNode       = "a repeated NodeStageVolume or NodePublishVolume gets the same answer, a repeated unpublish or unstage succeeds"

	ItCanaryController = "no secret sent with any controller, group or snapshot metadata call appears in a response, an error or a log line"
	ItCanaryNode       = "no secret sent through a node stage and publish lifecycle appears in a response, an error or a log line"
)

const (
	// pageItems is how many volumes (and snapshots) the pagination specs create.
	pageItems = 25
	// ConcurrentCalls is how many identical calls the concurrency specs make at once.
	ConcurrentCalls = 8
	// maxToken is the CSI size limit of a string field, which binds next_token too.
	maxToken = 128
)

// PageSizes are the max_entries the pagination specs list with.
var PageSizes = []int32{1, 3, 7}
