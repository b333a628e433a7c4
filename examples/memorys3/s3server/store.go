package s3server

import (
	"bytes"
	"crypto/md5"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/johannesboyne/gofakes3"
)

// storeBackend is the backend gofakes3 is given: the object store (gofakes3's in-memory
// backend, or boltStore in a state directory) and memorys3's own multipart uploads, which
// gofakes3 finds by type assertion and uses instead of its uploader. It embeds only
// gofakes3.Backend, so the store sees no versioning support: memorys3 offers no versions.
type storeBackend struct {
	gofakes3.Backend
	*uploadStore
	maxObjectSize int64
	bodies        *budget
}

// PutObject implements gofakes3.Backend. It reads the body in chunks as the bytes arrive,
// charged to the server's budget, before handing it on: gofakes3's backends allocate the
// declared size up front (gofakes3.ReadAll), so a request declaring terabytes and sending
// three bytes would otherwise allocate terabytes. An error of the body (a failed signature,
// a grant gone by its end) stores nothing.
//
// It then copies the body whole, for the store (memStore keeps that copy, boltStore writes
// it): the copy is charged to the budget before it is made, and the spool is given back once
// the store has returned. The copy goes with the MD5 of the bytes computed as they arrived,
// when input keeps it (readerMD5), so the store neither copies nor hashes them again
// (summedBody).
func (b *storeBackend) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	if size < 0 || size > b.maxObjectSize {
		// The handler refuses these before the body is read; this is the second line.
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	}
	sp := spool{budget: b.bodies}
	defer sp.release()
	err := sp.fill(input, size)
	if err == nil && sp.n != size {
		err = errTooShort
	}
	switch {
	case errors.Is(err, errNoBudget):
		return gofakes3.PutObjectResult{}, errSlowDown("the server is holding as many request bodies as it may; retry later")
	case errors.Is(err, errTooLong), errors.Is(err, errTooShort):
		return gofakes3.PutObjectResult{}, gofakes3.ErrIncompleteBody
	case err != nil:
		return gofakes3.PutObjectResult{}, err
	}
	if !b.bodies.take(size) {
		return gofakes3.PutObjectResult{}, errSlowDown("the server is holding as many request bodies as it may; retry later")
	}
	defer b.bodies.give(size)
	whole := make([]byte, size)
	sp.copyTo(whole)
	sum, ok := readerMD5(input)
	if !ok {
		sum = md5.Sum(whole)
	}
	return b.Backend.PutObject(bucket, key, meta, &summedBody{Reader: bytes.NewReader(whole), whole: whole, sum: sum}, size, cond)
}

// requestBackend is the store's backend for one request performed for a tenant: what the
// request holds while its answer is sent is charged to the tenant's share of the buffered
// bytes (and to the budget), and the uploads and parts it makes are counted as the tenant's.
type requestBackend struct {
	*storeBackend
	t    *tenant
	held int64 // listing pages charged to t and the budget until the request ends
}

// ListBucket implements gofakes3.Backend: the page is held until its answer is written.
func (b *requestBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	list, err := b.storeBackend.ListBucket(name, prefix, page)
	if err != nil {
		return nil, err
	}
	n := listingCharge(list)
	if !b.t.Take(n) {
		return nil, errStoreTenantShare
	}
	b.held += n
	return list, nil
}

// errStoreTenantShare refuses a read whose answer would take its tenant past its share of the
// buffered bytes.
var errStoreTenantShare = errSlowDown("the requests of this account hold as many buffered bytes as it may now; retry later")

// pageEntryCharge is what an entry of a listing page holds in memory besides its key: its
// record and ETag.
const pageEntryCharge = 256

// maxPageCharge is the most a listing page is charged: 1,000 entries of the longest key.
const maxPageCharge = gofakes3.MaxBucketKeys * (gofakes3.KeySizeLimit + pageEntryCharge)

// listingCharge is what a listing page holds in memory, at most: each key and each common
// prefix with its record.
func listingCharge(list *gofakes3.ObjectList) int64 {
	n := int64(0)
	for _, c := range list.Contents {
		n += int64(len(c.Key)) + pageEntryCharge
	}
	for _, p := range list.CommonPrefixes {
		n += int64(len(p.Prefix)) + pageEntryCharge
	}
	return n
}

// GetObject implements gofakes3.Backend: what the answer holds is charged to the tenant's
// share until it is sent. That is a copy the store made of the object (boltStore's, charged
// to the budget already), or the stored bytes themselves (memStore's), which the answer keeps
// whatever replaces or deletes the object meanwhile: uncharged, one key pinned a version of
// an object per unread GET, beyond what the bucket holds.
func (b *requestBackend) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	obj, err := b.storeBackend.GetObject(bucket, key, rng)
	if err != nil {
		return nil, err
	}
	if c, ok := obj.Contents.(*chargedReader); ok {
		if !b.t.shareTake(c.n, true) {
			_ = c.Close()
			return nil, errStoreTenantShare
		}
		c.tenant = b.t
		return obj, nil
	}
	n := obj.Size
	if obj.Range != nil {
		n = obj.Range.Length
	}
	if n == 0 {
		return obj, nil
	}
	if !b.t.Take(n) {
		_ = obj.Contents.Close()
		return nil, errStoreTenantShare
	}
	obj.Contents = &heldAnswer{ReadCloser: obj.Contents, t: b.t, n: n}
	return obj, nil
}

// heldAnswer is a GET's answer read from the stored bytes, charged to its tenant (share and
// budget) until it is closed (gofakes3 closes an object's contents once its answer is
// written).
type heldAnswer struct {
	io.ReadCloser
	t    *tenant
	n    int64
	once sync.Once
}

func (h *heldAnswer) Close() error {
	h.once.Do(func() { h.t.Give(h.n) })
	return h.ReadCloser.Close()
}

// CreateMultipartUpload implements gofakes3.MultipartBackend: the upload is the tenant's.
func (b *requestBackend) CreateMultipartUpload(bucket, key string, meta map[string]string) (gofakes3.UploadID, error) {
	return b.uploadStore.create(bucket, key, meta, b.t)
}

// UploadPart implements gofakes3.MultipartBackend: the part's bytes are the tenant's.
func (b *requestBackend) UploadPart(bucket, key string, id gofakes3.UploadID, number int, size int64, input io.Reader) (string, error) {
	return b.uploadStore.uploadPart(bucket, key, id, number, size, input, b.t)
}

// ListMultipartUploads implements gofakes3.MultipartBackend: the page is held until its answer
// is written.
func (b *requestBackend) ListMultipartUploads(bucket string, marker *gofakes3.UploadListMarker, prefix gofakes3.Prefix, limit int64) (*gofakes3.ListMultipartUploadsResult, error) {
	out, err := b.uploadStore.ListMultipartUploads(bucket, marker, prefix, limit)
	if err != nil {
		return nil, err
	}
	n := int64(0)
	for _, u := range out.Uploads {
		n += int64(len(u.Key)) + pageEntryCharge
	}
	for _, p := range out.CommonPrefixes {
		n += int64(len(p.Prefix)) + pageEntryCharge
	}
	if !b.t.Take(n) {
		return nil, errStoreTenantShare
	}
	b.held += n
	return out, nil
}

// release gives back what the request's listing pages held; its answer is written.
func (b *requestBackend) release() {
	if b.held > 0 {
		b.t.Give(b.held)
		b.held = 0
	}
}

// CopyObject implements gofakes3.Backend within the bound a PUT's metadata is held to:
// gofakes3 gives a copy the request's metadata and its source's, which would otherwise add up
// along a chain of copies without bound.
func (b *storeBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	if metadataSize(meta) > gofakes3.DefaultMetadataSizeLimit {
		return gofakes3.CopyObjectResult{}, gofakes3.ErrorMessagef(gofakes3.ErrMetadataTooLarge,
			"the copy's metadata and its source's add up to more than the %d bytes an object may have", gofakes3.DefaultMetadataSizeLimit)
	}
	return b.Backend.CopyObject(srcBucket, srcKey, dstBucket, dstKey, meta)
}

// metadataSize is the size of metadata as gofakes3 bounds it: its names and values.
func metadataSize(meta map[string]string) int {
	n := 0
	for k, v := range meta {
		n += len(k) + len(v)
	}
	return n
}

// ListBucket implements gofakes3.Backend with S3's bounds on a page: gofakes3 reads
// max-keys=0 as no bound at all (one answer held the whole bucket), S3 as a page of no key;
// and no page holds more than 1000 keys.
func (b *storeBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if page.MaxKeys <= 0 {
		return gofakes3.NewObjectList(), nil
	}
	page.MaxKeys = min(page.MaxKeys, gofakes3.MaxBucketKeys)
	return b.Backend.ListBucket(name, prefix, page)
}

// readerMD5 is the MD5 of the bytes read through r, read to its end, when r keeps one: a
// PUT's body reaches the backend through a reader that hashes it as it arrives, for the ETag
// (objectStore's md5Body; gofakes3's own reader has the same exported method Sum), and the
// store need not hash it again. A reader without it, or with a sum of another length, is
// hashed by the store.
func readerMD5(r io.Reader) (sum [md5.Size]byte, ok bool) {
	h, ok := r.(interface{ Sum([]byte) []byte })
	if !ok {
		return sum, false
	}
	b := h.Sum(nil)
	if len(b) != md5.Size {
		return sum, false
	}
	copy(sum[:], b)
	return sum, true
}

// listing collects one page of a listing in key order: the items that prefix matches, each
// either listed or rolled into a common prefix, up to limit entries (items and prefixes; 0 or
// less: no limit). An item that rolls into a prefix already on the page takes no room, so a
// page that ends in a prefix ends after the last item under it (last), where the next page
// must begin.
type listing[T any] struct {
	prefix *gofakes3.Prefix
	limit  int64

	items     []T
	prefixes  []string
	seen      map[string]bool
	last      T // the last item listed or rolled into a listed prefix
	truncated bool
}

// add considers the next item in key order; false: the page is full and more would follow.
func (l *listing[T]) add(key string, item T) bool {
	var m gofakes3.PrefixMatch
	if !l.prefix.Match(key, &m) {
		return true
	}
	if m.CommonPrefix && l.seen[m.MatchedPart] {
		l.last = item
		return true
	}
	if l.limit > 0 && int64(len(l.items)+len(l.prefixes)) >= l.limit {
		l.truncated = true
		return false
	}
	if m.CommonPrefix {
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		l.seen[m.MatchedPart] = true
		l.prefixes = append(l.prefixes, m.MatchedPart)
	} else {
		l.items = append(l.items, item)
	}
	l.last = item
	return true
}

// storeAnswer keeps the store's answer to a request that commits a change, which the store
// performs under the commit lock: the answer goes to the client after the lock is released,
// so a client that does not read cannot hold it. Headers go to the real response's map.
type storeAnswer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *storeAnswer) Header() http.Header { return a.header }

func (a *storeAnswer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *storeAnswer) Write(p []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(p)
}
