package s3server

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"io"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// memStore is the object store without a state directory: a gofakes3.Backend in memory, with
// the semantics of boltStore (the store of a state directory), so that a client sees the same
// server either way: a PUT replaces the metadata of the object it replaces, as S3 does,
// listing pages end after the last key rolled into a common prefix, and ranges are clamped to
// the object.
//
// It replaces gofakes3's in-memory backend, which hashes every object it stores with MD5
// although the PUT's body was already hashed (for the ETag) as it arrived: MD5 is most of
// what a PUT costs the server. memStore takes that sum, and the bytes, when the body comes
// with them (summedBody, from storeBackend.PutObject) and hashes only bodies that do not.
//
// An object's bytes are never written after they are stored: a GET reads them without a copy
// (an answer in progress keeps the slice of the object it began with, whatever replaces it),
// and a copy shares them.
type memStore struct {
	now func() time.Time
	// maxObjects bounds the objects of a bucket (MaxObjectsPerBucket); 0: no bound.
	maxObjects int

	mu      sync.RWMutex
	buckets map[string]*memBucket
}

var _ gofakes3.Backend = (*memStore)(nil)

// memBucket is one bucket: its objects by key, and their keys in order for listing.
type memBucket struct {
	created time.Time
	objects map[string]*memObject
	keys    []string // sorted
}

// memObject is one stored object; never modified once stored (a PUT stores a new one).
type memObject struct {
	body     []byte
	md5      [md5.Size]byte
	etag     string // `"` + hex MD5 + `"`, as listings show it
	modified time.Time
	meta     map[string]string
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{now: now, buckets: map[string]*memBucket{}}
}

// summedBody is an object's body whole, with the MD5 of its bytes: a store given one takes
// the bytes without copying them again and the sum without hashing them again. Only
// storeBackend.PutObject makes one, from the bytes it read and the sum of the very reader
// they were read through (or its own).
type summedBody struct {
	*bytes.Reader
	whole []byte
	sum   [md5.Size]byte
}

// storedBytes is input's body of size bytes, read whole, and its MD5: a summedBody's own, or
// read and computed.
func storedBytes(input io.Reader, size int64) ([]byte, [md5.Size]byte, error) {
	if s, ok := input.(*summedBody); ok && int64(len(s.whole)) == size {
		return s.whole, s.sum, nil
	}
	body, err := gofakes3.ReadAll(input, size)
	if err != nil {
		return nil, [md5.Size]byte{}, err
	}
	return body, md5.Sum(body), nil
}

// ListBuckets implements gofakes3.Backend.
func (m *memStore) ListBuckets() ([]gofakes3.BucketInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]gofakes3.BucketInfo, 0, len(m.buckets))
	for name, bk := range m.buckets {
		out = append(out, gofakes3.BucketInfo{Name: name, CreationDate: gofakes3.NewContentTime(bk.created)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ListBucket implements gofakes3.Backend: one page of the keys after the marker that prefix
// matches, in key order.
func (m *memStore) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	bk := m.buckets[name]
	if bk == nil {
		return nil, gofakes3.BucketNotFound(name)
	}
	type entry struct {
		key string
		obj *memObject
	}
	l := listing[entry]{prefix: prefix, limit: page.MaxKeys}
	i := 0
	if page.Marker != "" {
		i, _ = slices.BinarySearch(bk.keys, page.Marker)
		if i < len(bk.keys) && bk.keys[i] == page.Marker {
			i++
		}
	}
	for _, k := range bk.keys[i:] {
		if !l.add(k, entry{k, bk.objects[k]}) {
			break
		}
	}
	out := gofakes3.NewObjectList()
	for _, e := range l.items {
		out.Add(&gofakes3.Content{Key: e.key, LastModified: gofakes3.NewContentTime(e.obj.modified),
			ETag: e.obj.etag, Size: int64(len(e.obj.body))})
	}
	for _, p := range l.prefixes {
		out.AddPrefix(p)
	}
	if l.truncated {
		out.IsTruncated, out.NextMarker = true, l.last.key
	}
	return out, nil
}

// CreateBucket implements gofakes3.Backend.
func (m *memStore) CreateBucket(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if name == "" || m.buckets[name] != nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	m.buckets[name] = &memBucket{created: m.now(), objects: map[string]*memObject{}}
	return nil
}

// BucketExists implements gofakes3.Backend.
func (m *memStore) BucketExists(name string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.buckets[name] != nil, nil
}

// DeleteBucket implements gofakes3.Backend: only an empty bucket goes.
func (m *memStore) DeleteBucket(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	bk := m.buckets[name]
	switch {
	case bk == nil:
		return gofakes3.ErrNoSuchBucket
	case len(bk.objects) > 0:
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	delete(m.buckets, name)
	return nil
}

// ForceDeleteBucket implements gofakes3.Backend: the bucket goes with its objects.
func (m *memStore) ForceDeleteBucket(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets[name] == nil {
		return gofakes3.BucketNotFound(name)
	}
	delete(m.buckets, name)
	return nil
}

// object is the object stored under bucket/key, or an error naming what is missing.
func (m *memStore) object(bucket, key string) (*memObject, error) {
	bk := m.buckets[bucket]
	if bk == nil {
		return nil, gofakes3.BucketNotFound(bucket)
	}
	obj := bk.objects[key]
	if obj == nil {
		return nil, gofakes3.KeyNotFound(key)
	}
	return obj, nil
}

// GetObject implements gofakes3.Backend. The answer reads the stored bytes, which are never
// written again, without a copy.
func (m *memStore) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	m.mu.RLock()
	obj, err := m.object(bucket, key)
	m.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	size := int64(len(obj.body))
	r, err := clampRange(rng, size)
	if err != nil {
		return nil, err
	}
	data := obj.body
	if r != nil {
		data = data[r.Start : r.Start+r.Length]
	}
	return &gofakes3.Object{Name: key, Metadata: maps.Clone(obj.meta), Size: size, Hash: slices.Clone(obj.md5[:]), Range: r,
		Contents: io.NopCloser(bytes.NewReader(data))}, nil
}

// HeadObject implements gofakes3.Backend.
func (m *memStore) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	m.mu.RLock()
	obj, err := m.object(bucket, key)
	m.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	return &gofakes3.Object{Name: key, Metadata: maps.Clone(obj.meta), Size: int64(len(obj.body)), Hash: slices.Clone(obj.md5[:]),
		Contents: io.NopCloser(bytes.NewReader(nil))}, nil
}

// PutObject implements gofakes3.Backend. The body is read whole (its size is the caller's:
// storeBackend has bounded it and holds the bytes already, and hands them over as they are)
// before the lock is taken.
func (m *memStore) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	body, sum, err := storedBytes(input, size)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return gofakes3.PutObjectResult{}, m.put(bucket, key, meta, body, sum, cond)
}

// put stores body under bucket/key with meta as its metadata, checking cond against the object
// it replaces, of which nothing is kept. The caller holds m.mu.
func (m *memStore) put(bucket, key string, meta map[string]string, body []byte, sum [md5.Size]byte, cond *gofakes3.PutConditions) error {
	bk := m.buckets[bucket]
	if bk == nil {
		return gofakes3.BucketNotFound(bucket)
	}
	if key == "" {
		return gofakes3.ResourceError(gofakes3.ErrKeyTooLong, key)
	}
	old := bk.objects[key]
	if cond != nil {
		info := &gofakes3.ConditionalObjectInfo{Exists: old != nil}
		if old != nil {
			info.Hash = old.md5[:]
		}
		if err := gofakes3.CheckPutConditions(cond, info); err != nil {
			return err
		}
	}
	if old == nil && m.maxObjects > 0 && len(bk.objects) >= m.maxObjects {
		return errBucketFull(bucket, len(bk.objects))
	}
	if old == nil {
		i, _ := slices.BinarySearch(bk.keys, key)
		bk.keys = slices.Insert(bk.keys, i, key)
	}
	bk.objects[key] = &memObject{body: body, md5: sum, etag: `"` + hex.EncodeToString(sum[:]) + `"`, modified: m.now(), meta: maps.Clone(meta)}
	return nil
}

// CopyObject implements gofakes3.Backend. The copy shares the source's bytes, which are never
// written again.
func (m *memStore) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	src, err := m.object(srcBucket, srcKey)
	if err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	if err := m.put(dstBucket, dstKey, meta, src.body, src.md5, nil); err != nil {
		return gofakes3.CopyObjectResult{}, err
	}
	dst := m.buckets[dstBucket].objects[dstKey]
	return gofakes3.CopyObjectResult{ETag: dst.etag, LastModified: gofakes3.NewContentTime(dst.modified)}, nil
}

// DeleteObject implements gofakes3.Backend; a key that is not there is not an error.
func (m *memStore) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bk := m.buckets[bucket]
	if bk == nil {
		return gofakes3.ObjectDeleteResult{}, gofakes3.BucketNotFound(bucket)
	}
	bk.remove(key)
	return gofakes3.ObjectDeleteResult{}, nil
}

// DeleteMulti implements gofakes3.Backend, under one lock.
func (m *memStore) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	bk := m.buckets[bucket]
	if bk == nil {
		return gofakes3.MultiDeleteResult{}, gofakes3.BucketNotFound(bucket)
	}
	var out gofakes3.MultiDeleteResult
	for _, k := range keys {
		bk.remove(k)
		out.Deleted = append(out.Deleted, gofakes3.ObjectID{Key: k})
	}
	return out, nil
}

func (bk *memBucket) remove(key string) {
	if _, ok := bk.objects[key]; !ok {
		return
	}
	delete(bk.objects, key)
	if i, found := slices.BinarySearch(bk.keys, key); found {
		bk.keys = slices.Delete(bk.keys, i, i+1)
	}
}
