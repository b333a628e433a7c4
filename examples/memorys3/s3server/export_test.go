package s3server

// Hooks for the external tests (package s3server_test), which drive the server through the COSI
// backend as the sidecar does; bucketdriver imports this package, so they cannot live inside it.

// DeleteStep names a point between two durable steps of DeleteBucket.
type DeleteStep = deleteStep

// The points DeleteBucket can be stopped at, in order.
const (
	DeleteBegun          = deleteBegun
	DeleteUploadsAborted = deleteUploadsAborted
	DeleteStoreDeleted   = deleteStoreDeleted
)

// ErrSimulatedCrash is what DeleteBucket answers where StopDeleteAfter stopped it.
var ErrSimulatedCrash = errSimulatedCrash

// StopDeleteAfter makes s's DeleteBucket stop after step, as a crash there would; 0 clears it.
func StopDeleteAfter(s *Server, step DeleteStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopDeleteAfter = step
}

// Recorded says whether s has a record of bucket, and whether that record says it is being
// deleted.
func Recorded(s *Server, bucket string) (recorded, deleting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.buckets[bucket]
	return ok, rec.Deleting
}

// StoreHas says whether s's object store holds bucket.
func StoreHas(s *Server, bucket string) (bool, error) { return s.backend.BucketExists(bucket) }
