package s3server

// need is what an S3 operation needs from a grant on its bucket.
type need int

const (
	needListBuckets need = iota + 1 // GET /: answered from the key's own grants
	needAny                         // any grant on the bucket (HEAD bucket)
	needRead
	needWrite
	// needReadWrite: listings of uploads in progress. They name other writers' keys, and a
	// part's ETag is the MD5 of its bytes, which confirms a guess of them: reads that a
	// write-only key's own uploads do not need (it keeps the IDs and ETags it was answered).
	needReadWrite
)

// allows says whether a grant mode satisfies a need. A mode that is not one of the three
// (the zero Mode of a bucket the key has no grant on) allows nothing.
func (m Mode) allows(n need) bool {
	switch n {
	case needAny:
		return m.valid()
	case needRead:
		return m == ReadWrite || m == ReadOnly
	case needWrite:
		return m == ReadWrite || m == WriteOnly
	case needReadWrite:
		return m == ReadWrite
	}
	return false
}
