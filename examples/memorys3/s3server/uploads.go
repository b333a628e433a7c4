package s3server

import (
	"bytes"
	"container/list"
	"crypto/md5"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// uploadStore keeps the multipart uploads in progress. The store's backend (storeBackend)
// implements gofakes3.MultipartBackend with it, so gofakes3's own uploader, which keeps an
// upload's parts in a slice indexed by part number (one part numbered 10000 cost 80 KiB),
// lists parts past the first page under the wrong numbers, removes an upload in time linear
// in the uploads of its key, and never forgets the uploads of a deleted bucket, is never used.
//
// Parts are held in a map by part number, each as a slice of exactly its size charged to the
// server's budget of buffered bytes, with partOverhead for its record. The store knows every
// part's size, so the completion's size check needs no listing. Uploads are bounded in number
// (per bucket and per server) and in bytes held (per bucket and per server); past a bound a
// request is refused with SlowDown. An upload in which no part was stored for
// UploadIdleTimeout is aborted (looked for whenever the store is used, oldest first, so an
// abandoned upload never holds room another request needs). Aborting an upload, or dropping
// those of a deleted bucket, costs time in its parts only.
type uploadStore struct {
	now     func() time.Time
	limits  Limits
	budget  *budget
	objects gofakes3.Backend // where a completed upload is stored

	mu          sync.Mutex
	buckets     map[string]map[gofakes3.UploadID]*upload
	count       int              // uploads in progress
	partBytes   int64            // bytes held in their parts, records included
	bucketBytes map[string]int64 // partBytes by bucket
	idle        list.List        // the uploads, least recently used first
	seq         uint64
	// tenantUploads and tenantBytes are count and partBytes by the tenant that began each
	// upload and stored each part (none for the server's own calls).
	tenantUploads map[*tenant]int
	tenantBytes   map[*tenant]int64
}

// partOverhead is what a part is charged besides its bytes: its record, its map slot and its
// ETag take about 100 bytes of heap, and a charge of a whole KiB keeps parts of one byte from
// costing memory that nothing counts.
const partOverhead = 1 << 10

type upload struct {
	id          gofakes3.UploadID
	tenant      *tenant // who began it; nil: the server
	bucket, key string
	meta        map[string]string
	initiated   time.Time
	parts       map[int]*part
	// completing is set while the upload's object is stored: its parts are not replaced
	// and it is not aborted or completed again meanwhile.
	completing bool
	// used is when a part was last stored (or the upload began); elem is its place in idle.
	used time.Time
	elem *list.Element
}

type part struct {
	tenant   *tenant // who stored it; nil: the server
	body     []byte
	md5      [md5.Size]byte
	modified time.Time
}

func (p *part) etag() string { return `"` + hex.EncodeToString(p.md5[:]) + `"` }

// held is what a part is charged to the bounds and the budget.
func (p *part) held() int64 { return int64(len(p.body)) + partOverhead }

func newUploadStore(limits Limits, b *budget, objects gofakes3.Backend, now func() time.Time) *uploadStore {
	return &uploadStore{now: now, limits: limits, budget: b, objects: objects, buckets: map[string]map[gofakes3.UploadID]*upload{},
		bucketBytes: map[string]int64{}, tenantUploads: map[*tenant]int{}, tenantBytes: map[*tenant]int64{}}
}

// expire aborts the uploads in which nothing was stored for UploadIdleTimeout; u.mu must be
// held. An upload being completed is never aborted: it is the most recently used until its
// completion ends.
func (u *uploadStore) expire() {
	now := u.now()
	for e := u.idle.Front(); e != nil; e = u.idle.Front() {
		up := e.Value.(*upload)
		if up.completing || now.Sub(up.used) < u.limits.UploadIdleTimeout {
			return
		}
		u.remove(up)
	}
}

// touch makes up the most recently used upload; u.mu must be held.
func (u *uploadStore) touch(up *upload) {
	up.used = u.now()
	u.idle.MoveToBack(up.elem)
}

// errSlowDown is a refusal for want of a server-wide resource. gofakes3 answers errors of
// codes it does not know with status 500; the handler answers this code with 503 SlowDown
// (see storeAnswer).
func errSlowDown(format string, args ...any) error {
	return gofakes3.ErrorMessagef(codeSlowDown, format, args...)
}

// The codes the backend answers that gofakes3 does not know, and that the handler passes on
// with their own status.
const (
	codeSlowDown       gofakes3.ErrorCode = "SlowDown"
	codeEntityTooLarge gofakes3.ErrorCode = "EntityTooLarge"
	codeQuotaExceeded  gofakes3.ErrorCode = "QuotaExceeded"
)

// errBucketFull refuses a new object in a bucket holding MaxObjectsPerBucket.
func errBucketFull(bucket string, n int) error {
	return gofakes3.ErrorMessagef(codeQuotaExceeded, "bucket %s holds %d objects, as many as a bucket may; delete one or replace one", bucket, n)
}

// newID makes an upload ID: a counter, so that IDs sort in the order uploads began (S3 lists
// the uploads of a key in that order), then 64 random bits, so that an ID from before a
// restart (uploads are kept in memory only) never names an upload begun after it.
func (u *uploadStore) newID() gofakes3.UploadID {
	u.seq++
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.seq)
	_, _ = rand.Read(b[8:]) // crypto/rand.Read never fails (Go 1.24)
	return gofakes3.UploadID(hex.EncodeToString(b[:]))
}

// get finds an upload of bucket/key; s.mu must be held.
func (u *uploadStore) get(bucket, key string, id gofakes3.UploadID) (*upload, error) {
	up := u.buckets[bucket][id]
	if up == nil || up.key != key || up.completing {
		return nil, gofakes3.ErrNoSuchUpload
	}
	return up, nil
}

// CreateMultipartUpload implements gofakes3.MultipartBackend for the server's own calls;
// requestBackend begins a tenant's uploads.
func (u *uploadStore) CreateMultipartUpload(bucket, key string, meta map[string]string) (gofakes3.UploadID, error) {
	return u.create(bucket, key, meta, nil)
}

// create begins an upload for t (nil: the server), within the server's bound, the bucket's
// and the tenant's share.
func (u *uploadStore) create(bucket, key string, meta map[string]string, t *tenant) (gofakes3.UploadID, error) {
	if len(key) > gofakes3.KeySizeLimit {
		return "", gofakes3.ResourceError(gofakes3.ErrKeyTooLong, key)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	if u.count >= u.limits.MaxUploads {
		return "", errSlowDown("the server holds %d multipart uploads in progress, as many as it may; complete or abort some", u.count)
	}
	inBucket := u.buckets[bucket]
	if len(inBucket) >= u.limits.MaxUploadsPerBucket {
		return "", errSlowDown("the bucket holds %d multipart uploads in progress, as many as it may; complete or abort some", len(inBucket))
	}
	if t != nil && !fair(int64(u.limits.MaxUploads), int64(u.count), int64(u.tenantUploads[t]), 1, int64(u.limits.MaxUploadsPerTenant), 1) {
		return "", errSlowDown("the account has %d multipart uploads in progress, as many as it may now; complete or abort some", u.tenantUploads[t])
	}
	if inBucket == nil {
		inBucket = map[gofakes3.UploadID]*upload{}
		u.buckets[bucket] = inBucket
	}
	now := u.now()
	up := &upload{id: u.newID(), tenant: t, bucket: bucket, key: key, meta: meta, initiated: now, used: now, parts: map[int]*part{}}
	up.elem = u.idle.PushBack(up)
	inBucket[up.id] = up
	u.count++
	if t != nil {
		u.tenantUploads[t]++
	}
	return up.id, nil
}

// UploadPart implements gofakes3.MultipartBackend for the server's own calls; requestBackend
// stores a tenant's parts.
func (u *uploadStore) UploadPart(bucket, key string, id gofakes3.UploadID, number int, size int64, input io.Reader) (string, error) {
	return u.uploadPart(bucket, key, id, number, size, input, nil)
}

// uploadPart stores a part for t (nil: the server). The part is read into a slice of its
// size, charged to the server's budget with its record, before the upload is looked up: the
// handler has the bytes in memory already, checked against the declared length. It is held
// within the server's bound of part bytes, the bucket's and the tenant's share.
func (u *uploadStore) uploadPart(bucket, key string, id gofakes3.UploadID, number int, size int64, input io.Reader, t *tenant) (string, error) {
	if number < 1 || number > gofakes3.MaxUploadPartNumber {
		return "", gofakes3.ErrInvalidPart
	}
	if size < 0 || size > u.limits.MaxObjectSize {
		return "", gofakes3.ErrIncompleteBody
	}
	charge := size + partOverhead
	if !u.budget.take(charge) {
		return "", errSlowDown("the server holds as many buffered bytes as it may")
	}
	p := &part{tenant: t, body: make([]byte, size), modified: u.now()}
	held := false
	defer func() {
		if !held {
			u.budget.give(charge)
		}
	}()
	if _, err := io.ReadFull(input, p.body); err != nil {
		return "", gofakes3.ErrIncompleteBody
	}
	if n, _ := input.Read(make([]byte, 1)); n > 0 {
		return "", gofakes3.ErrIncompleteBody
	}
	p.md5 = md5.Sum(p.body)

	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	up, err := u.get(bucket, key, id)
	if err != nil {
		return "", err
	}
	old := up.parts[number]
	var replaced, ownReplaced int64
	if old != nil {
		replaced = old.held()
		if old.tenant == t {
			ownReplaced = replaced
		}
	}
	if u.partBytes-replaced+charge > u.limits.MaxPartBytes {
		return "", errSlowDown("the parts of uploads in progress hold %d bytes, as many as the server keeps; complete or abort some", u.partBytes)
	}
	if inBucket := u.bucketBytes[bucket]; inBucket-replaced+charge > u.limits.MaxPartBytesPerBucket {
		return "", errSlowDown("the parts of this bucket's uploads in progress hold %d bytes, as many as one bucket may; complete or abort some", inBucket)
	}
	if t != nil && !fair(u.limits.MaxPartBytes, u.partBytes-replaced, u.tenantBytes[t]-ownReplaced, charge, u.limits.MaxPartBytesPerTenant, byteFloor) {
		return "", errSlowDown("the parts of this account's uploads in progress hold %d bytes, as many as it may now; complete or abort some", u.tenantBytes[t])
	}
	if old != nil {
		u.giveTenantBytes(old.tenant, replaced)
	}
	up.parts[number] = p
	u.partBytes += charge - replaced
	u.bucketBytes[bucket] += charge - replaced
	if t != nil {
		u.tenantBytes[t] += charge
	}
	u.budget.give(replaced)
	u.touch(up)
	held = true
	return p.etag(), nil
}

// ListMultipartUploads implements gofakes3.MultipartBackend: the uploads of bucket in the
// order of their keys, and of their beginning within a key, after the marker.
func (u *uploadStore) ListMultipartUploads(bucket string, marker *gofakes3.UploadListMarker, prefix gofakes3.Prefix, limit int64) (*gofakes3.ListMultipartUploadsResult, error) {
	type entry struct {
		key       string
		id        gofakes3.UploadID
		initiated time.Time
	}
	u.mu.Lock()
	u.expire()
	all := make([]entry, 0, len(u.buckets[bucket]))
	for _, up := range u.buckets[bucket] {
		all = append(all, entry{up.key, up.id, up.initiated})
	}
	u.mu.Unlock()
	slices.SortFunc(all, func(a, b entry) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(string(a.id), string(b.id))
	})
	out := &gofakes3.ListMultipartUploadsResult{Bucket: bucket, MaxUploads: limit, Prefix: prefix.Prefix, Delimiter: prefix.Delimiter}
	start := 0
	if marker != nil {
		out.KeyMarker, out.UploadIDMarker = marker.Object, marker.UploadID
		start, _ = slices.BinarySearchFunc(all, *marker, func(e entry, m gofakes3.UploadListMarker) int {
			// Entries at or before the marker sort first: keys before it, and, for its key,
			// every upload when no upload ID is given, else those up to that ID.
			if c := strings.Compare(e.key, m.Object); c != 0 {
				return c
			}
			if m.UploadID == "" || e.id <= m.UploadID {
				return -1
			}
			return 1
		})
	}
	l := listing[entry]{prefix: &prefix, limit: limit}
	for _, e := range all[start:] {
		if !l.add(e.key, e) {
			break
		}
	}
	for _, it := range l.items {
		out.Uploads = append(out.Uploads, gofakes3.ListMultipartUploadItem{Key: it.key, UploadID: it.id,
			StorageClass: "STANDARD", Initiated: gofakes3.NewContentTime(it.initiated)})
	}
	for _, p := range l.prefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, gofakes3.CommonPrefix{Prefix: p})
	}
	if l.truncated {
		out.IsTruncated, out.NextKeyMarker, out.NextUploadIDMarker = true, l.last.key, l.last.id
	}
	return out, nil
}

// ListParts implements gofakes3.MultipartBackend: the parts numbered above marker, in order.
func (u *uploadStore) ListParts(bucket, key string, id gofakes3.UploadID, marker int, limit int64) (*gofakes3.ListMultipartUploadPartsResult, error) {
	if limit <= 0 || limit > gofakes3.MaxUploadPartsLimit {
		limit = gofakes3.MaxUploadPartsLimit
	}
	out := &gofakes3.ListMultipartUploadPartsResult{Bucket: bucket, Key: key, UploadID: id, PartNumberMarker: marker,
		MaxParts: limit, StorageClass: "STANDARD"}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	up, err := u.get(bucket, key, id)
	if err != nil {
		return nil, err
	}
	numbers := make([]int, 0, len(up.parts))
	for n := range up.parts {
		if n > marker {
			numbers = append(numbers, n)
		}
	}
	slices.Sort(numbers)
	if int64(len(numbers)) > limit {
		numbers = numbers[:limit]
		out.IsTruncated = true
	}
	for _, n := range numbers {
		p := up.parts[n]
		out.Parts = append(out.Parts, gofakes3.ListMultipartUploadPartItem{PartNumber: n, ETag: p.etag(),
			Size: int64(len(p.body)), LastModified: gofakes3.NewContentTime(p.modified)})
	}
	if out.IsTruncated {
		out.NextPartNumberMarker = numbers[len(numbers)-1]
	}
	return out, nil
}

// AbortMultipartUpload implements gofakes3.MultipartBackend.
func (u *uploadStore) AbortMultipartUpload(bucket, key string, id gofakes3.UploadID) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	up, err := u.get(bucket, key, id)
	if err != nil {
		return err
	}
	u.remove(up)
	return nil
}

// remove forgets an upload and gives back what its parts held; u.mu must be held.
func (u *uploadStore) remove(up *upload) {
	inBucket := u.buckets[up.bucket]
	delete(inBucket, up.id)
	if len(inBucket) == 0 {
		delete(u.buckets, up.bucket)
	}
	u.count--
	if up.tenant != nil {
		if u.tenantUploads[up.tenant]--; u.tenantUploads[up.tenant] == 0 {
			delete(u.tenantUploads, up.tenant)
		}
	}
	u.idle.Remove(up.elem)
	var held int64
	for _, p := range up.parts {
		held += p.held()
		u.giveTenantBytes(p.tenant, p.held())
	}
	u.partBytes -= held
	if u.bucketBytes[up.bucket] -= held; u.bucketBytes[up.bucket] == 0 {
		delete(u.bucketBytes, up.bucket)
	}
	u.budget.give(held)
}

// giveTenantBytes gives back n part bytes t was charged; u.mu must be held.
func (u *uploadStore) giveTenantBytes(t *tenant, n int64) {
	if t == nil {
		return
	}
	if u.tenantBytes[t] -= n; u.tenantBytes[t] == 0 {
		delete(u.tenantBytes, t)
	}
}

// dropBucket forgets every upload in bucket: it is being deleted or created afresh.
func (u *uploadStore) dropBucket(bucket string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	ups := u.buckets[bucket]
	for _, up := range ups {
		u.remove(up)
	}
	return len(ups)
}

// completion checks the parts a completion names, in the order given (strictly ascending),
// against the upload's parts, and returns their total size; u.mu must be held.
func (up *upload) completion(parts []gofakes3.CompletedPart) (int64, error) {
	var total int64
	for i, cp := range parts {
		if i > 0 && cp.PartNumber <= parts[i-1].PartNumber {
			return 0, gofakes3.ErrInvalidPartOrder
		}
		p := up.parts[cp.PartNumber]
		if p == nil {
			return 0, gofakes3.ErrorMessagef(gofakes3.ErrInvalidPart, "part %d was not uploaded", cp.PartNumber)
		}
		if strings.Trim(cp.ETag, `"`) != hex.EncodeToString(p.md5[:]) {
			return 0, gofakes3.ErrorMessagef(gofakes3.ErrInvalidPart, "part %d has another ETag", cp.PartNumber)
		}
		total += int64(len(p.body))
	}
	return total, nil
}

// completedSize is the size of the object a completion would store, for the handler's check
// before the store runs it; errNoUpload when there is no such upload (the store then answers
// NoSuchUpload), and the store's error for parts that do not match.
func (u *uploadStore) completedSize(bucket, key string, id gofakes3.UploadID, parts []gofakes3.CompletedPart) (int64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	up, err := u.get(bucket, key, id)
	if err != nil {
		return 0, errNoUpload
	}
	return up.completion(parts)
}

var errNoUpload = errors.New("no such upload")

// CompleteMultipartUpload implements gofakes3.MultipartBackend. The object is stored from
// the parts as they are, without assembling a copy of them first; the store's own copy of it
// (gofakes3.ReadAll) is charged to the budget while it is made. The ETag is S3's: the MD5 of
// the parts' MD5s, and their count.
func (u *uploadStore) CompleteMultipartUpload(bucket, key string, id gofakes3.UploadID, in *gofakes3.CompleteMultipartUploadRequest) (gofakes3.VersionID, string, error) {
	if len(in.Parts) == 0 {
		return "", "", gofakes3.ErrorMessage(gofakes3.ErrMalformedXML, "a completion names at least one part")
	}
	u.mu.Lock()
	u.expire()
	up, err := u.get(bucket, key, id)
	if err != nil {
		u.mu.Unlock()
		return "", "", err
	}
	total, err := up.completion(in.Parts)
	if err == nil && total > u.limits.MaxObjectSize {
		err = gofakes3.ErrorMessagef(codeEntityTooLarge, "the parts add up to %d bytes; this server takes objects of at most %d", total, u.limits.MaxObjectSize)
	}
	if err == nil && !u.budget.take(total) {
		err = errSlowDown("the server is holding as many buffered bytes as it may; retry later")
	}
	if err != nil {
		u.mu.Unlock()
		return "", "", err
	}
	defer u.budget.give(total)
	u.touch(up)
	up.completing = true
	readers := make([]io.Reader, len(in.Parts))
	sums := md5.New()
	for i, cp := range in.Parts {
		p := up.parts[cp.PartNumber]
		readers[i] = bytes.NewReader(p.body)
		sums.Write(p.md5[:])
	}
	u.mu.Unlock()

	res, err := u.objects.PutObject(bucket, key, up.meta, io.MultiReader(readers...), total, nil)
	u.mu.Lock()
	defer u.mu.Unlock()
	up.completing = false
	if err != nil {
		return "", "", err // as it is: gofakes3 reads the S3 code from the error's own type
	}
	if u.buckets[bucket][id] == up { // not dropped with its bucket meanwhile
		u.remove(up)
	}
	return res.VersionID, fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(sums.Sum(nil)), len(in.Parts)), nil
}
