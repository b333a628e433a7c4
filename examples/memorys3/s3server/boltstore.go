package s3server

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"
)

// boltStore is the object store of a state directory: a gofakes3.Backend on a bbolt file,
// store.db. Everything it answers is a copy made inside the transaction that read it: bbolt's
// values live in its memory map only until the transaction ends, and the next write that
// grows the file maps it anew (a slice kept past that faults, killing the process) or reuses
// the pages for other data (a slice kept past that reads another tenant's bytes). gofakes3's
// own bbolt backend returned such slices, through its BSON decoder, which aliases its input.
//
// The file holds:
//
//	format                  bbolt bucket: "version" = "memorys3-objects-1"
//	buckets                 bbolt bucket: one nested bucket per S3 bucket, by name
//	  <bucket>/created      the bucket's creation time, RFC 3339 (UTC, nanoseconds)
//	  <bucket>/meta/<key>   the object's record, JSON: {"size", "md5" (hex), "modified", "metadata"}
//	  <bucket>/data/<key>   the object's bytes
//
// Records and bytes are apart so that listing and HEAD read no object bytes. Semantics are
// memStore's (without a state directory), which follow gofakes3's in-memory backend, so that a
// client sees the same server either way: a PUT replaces the metadata of the object it
// replaces, as S3 does (gofakes3's backends merged it with the old object's, so the bound on
// a PUT's metadata bounded nothing across PUTs), listing pages end after the last key rolled
// into a common prefix (gofakes3's in-memory backend lists such a prefix again on
// the next page), and ranges are clamped to the object. A body that comes with its MD5
// (summedBody) is not hashed again.
//
// The copies a read makes are charged to the server's budget of buffered bytes (bodies) until
// the answer has been sent, as request bodies are: concurrent GETs of large objects by a
// client that reads slowly would otherwise hold a copy each without bound. Past the budget a
// read is refused with SlowDown.
type boltStore struct {
	db     *bolt.DB
	now    func() time.Time
	bodies *budget // nil: copies are not charged (a migration)

	// maxObjects bounds the objects of a bucket (MaxObjectsPerBucket); 0: no bound, and no
	// count is kept. counts holds the objects of each bucket counted so far: a bucket is
	// counted once, when a write first needs its count, and kept up to date by the writes
	// (under bbolt's writer lock); a write transaction that fails forgets its bucket's count.
	maxObjects int
	countMu    sync.Mutex
	counts     map[string]int
}

var _ gofakes3.Backend = (*boltStore)(nil)

// The names in store.db.
var (
	storeFormatKey  = []byte("format")
	storeVersionKey = []byte("version")
	storeBucketsKey = []byte("buckets")
	objCreatedKey   = []byte("created")
	objMetaKey      = []byte("meta")
	objDataKey      = []byte("data")
)

// storeVersion names the layout above.
const storeVersion = "memorys3-objects-1"

// The files of the state directory that hold objects: store.db in the layout above, and
// objects.db in the layout of gofakes3's bbolt backend, which memorys3 used before.
const (
	storeFile  = "store.db"
	legacyFile = "objects.db"
)

// objectRecord is an object's record in <bucket>/meta.
type objectRecord struct {
	Size     int64             `json:"size"`
	MD5      string            `json:"md5"`
	Modified time.Time         `json:"modified"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// openBoltStore opens (or creates) dir's store.db. A directory that holds objects in the
// layout of gofakes3's bbolt backend (objects.db) and no store.db is migrated first: every
// bucket and object is copied into a new file, which takes store.db's name only once it is
// complete and on disk; objects.db is removed after that. A crash at any point leaves either
// objects.db alone, to migrate again, or a complete store.db.
func openBoltStore(dir string, now func() time.Time, bodies *budget) (*boltStore, error) {
	path := filepath.Join(dir, storeFile)
	legacy := filepath.Join(dir, legacyFile)
	_, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Stat(legacy); lerr == nil {
			if err := migrateLegacyStore(legacy, path, now); err != nil {
				return nil, fmt.Errorf("migrate %s to %s: %w", legacy, path, err)
			}
		}
	case err != nil:
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	db, err := openBolt(path)
	if err != nil {
		return nil, err
	}
	st := &boltStore{db: db, now: now, bodies: bodies}
	if err := st.prepare(); err != nil {
		_ = db.Close()
		return nil, err
	}
	// Left by a migration that finished writing store.db and stopped before removing it.
	if err := os.Remove(legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = db.Close()
		return nil, fmt.Errorf("remove the migrated %s: %w", legacy, err)
	}
	return st, nil
}

// prepare creates the layout in a new file and checks the version of an existing one.
func (b *boltStore) prepare() error {
	return b.db.Update(func(tx *bolt.Tx) error {
		format, err := tx.CreateBucketIfNotExists(storeFormatKey)
		if err != nil {
			return fmt.Errorf("prepare the object store: %w", err)
		}
		switch v := format.Get(storeVersionKey); {
		case v == nil:
			if err := format.Put(storeVersionKey, []byte(storeVersion)); err != nil {
				return fmt.Errorf("prepare the object store: %w", err)
			}
		case string(v) != storeVersion:
			return fmt.Errorf("the object store %s is in layout %q, which this memorys3 does not read (it reads %q)",
				b.db.Path(), v, storeVersion)
		}
		if _, err := tx.CreateBucketIfNotExists(storeBucketsKey); err != nil {
			return fmt.Errorf("prepare the object store: %w", err)
		}
		return nil
	})
}

func (b *boltStore) close() error { return b.db.Close() }

// bucket is the nested bucket of an S3 bucket, or nil.
func (b *boltStore) bucket(tx *bolt.Tx, name string) *bolt.Bucket {
	if name == "" {
		return nil
	}
	return tx.Bucket(storeBucketsKey).Bucket([]byte(name))
}

// record decodes an object's record, or nil when there is none. Decoding copies: nothing it
// returns refers to bbolt's memory.
func record(bk *bolt.Bucket, key string) (*objectRecord, error) {
	if key == "" {
		return nil, nil
	}
	raw := bk.Bucket(objMetaKey).Get([]byte(key))
	if raw == nil {
		return nil, nil
	}
	var rec objectRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("object %q: malformed record: %w", key, err)
	}
	return &rec, nil
}

// hash is the record's MD5 as bytes.
func (r *objectRecord) hash() []byte {
	h, _ := hex.DecodeString(r.MD5)
	return h
}

// ListBuckets implements gofakes3.Backend.
func (b *boltStore) ListBuckets() ([]gofakes3.BucketInfo, error) {
	var out []gofakes3.BucketInfo
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(storeBucketsKey).ForEachBucket(func(name []byte) error {
			created, _ := time.Parse(time.RFC3339Nano, string(tx.Bucket(storeBucketsKey).Bucket(name).Get(objCreatedKey)))
			out = append(out, gofakes3.BucketInfo{Name: string(name), CreationDate: gofakes3.NewContentTime(created)})
			return nil
		})
	})
	return out, err
}

// ListBucket implements gofakes3.Backend: one page of the keys after the marker that prefix
// matches, in key order.
func (b *boltStore) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	out := gofakes3.NewObjectList()
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, name)
		if bk == nil {
			return gofakes3.BucketNotFound(name)
		}
		type entry struct {
			key string
			raw []byte // valid within this transaction only
		}
		l := listing[entry]{prefix: prefix, limit: page.MaxKeys}
		c := bk.Bucket(objMetaKey).Cursor()
		k, v := c.First()
		if page.Marker != "" {
			k, v = c.Seek([]byte(page.Marker))
			if string(k) == page.Marker {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if !l.add(string(k), entry{string(k), v}) {
				break
			}
		}
		for _, e := range l.items {
			var rec objectRecord
			if err := json.Unmarshal(e.raw, &rec); err != nil {
				return fmt.Errorf("object %q: malformed record: %w", e.key, err)
			}
			out.Add(&gofakes3.Content{Key: e.key, LastModified: gofakes3.NewContentTime(rec.Modified),
				ETag: `"` + rec.MD5 + `"`, Size: rec.Size})
		}
		for _, p := range l.prefixes {
			out.AddPrefix(p)
		}
		if l.truncated {
			out.IsTruncated, out.NextMarker = true, l.last.key
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CreateBucket implements gofakes3.Backend.
func (b *boltStore) CreateBucket(name string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		return createStoreBucket(tx, name, b.now())
	})
}

func createStoreBucket(tx *bolt.Tx, name string, created time.Time) error {
	root := tx.Bucket(storeBucketsKey)
	if name == "" || root.Bucket([]byte(name)) != nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	bk, err := root.CreateBucket([]byte(name))
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	if err := bk.Put(objCreatedKey, []byte(created.UTC().Format(time.RFC3339Nano))); err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	for _, sub := range [][]byte{objMetaKey, objDataKey} {
		if _, err := bk.CreateBucket(sub); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// BucketExists implements gofakes3.Backend.
func (b *boltStore) BucketExists(name string) (bool, error) {
	var exists bool
	err := b.db.View(func(tx *bolt.Tx) error {
		exists = b.bucket(tx, name) != nil
		return nil
	})
	return exists, err
}

// DeleteBucket implements gofakes3.Backend: only an empty bucket goes.
func (b *boltStore) DeleteBucket(name string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, name)
		if bk == nil {
			return gofakes3.ErrNoSuchBucket
		}
		if k, _ := bk.Bucket(objMetaKey).Cursor().First(); k != nil {
			return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
		}
		return tx.Bucket(storeBucketsKey).DeleteBucket([]byte(name))
	})
}

// ForceDeleteBucket implements gofakes3.Backend: the bucket goes with its objects.
func (b *boltStore) ForceDeleteBucket(name string) error {
	defer b.forgetCount(name)
	return b.db.Update(func(tx *bolt.Tx) error {
		if b.bucket(tx, name) == nil {
			return gofakes3.BucketNotFound(name)
		}
		return tx.Bucket(storeBucketsKey).DeleteBucket([]byte(name))
	})
}

// GetObject implements gofakes3.Backend. The bytes of the range asked for are copied out of
// the transaction.
func (b *boltStore) GetObject(bucket, key string, rng *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	var obj *gofakes3.Object
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, bucket)
		if bk == nil {
			return gofakes3.BucketNotFound(bucket)
		}
		rec, err := record(bk, key)
		if err != nil {
			return err
		}
		if rec == nil {
			return gofakes3.KeyNotFound(key)
		}
		data := bk.Bucket(objDataKey).Get([]byte(key))
		if int64(len(data)) != rec.Size {
			return fmt.Errorf("object %q: %d bytes stored, its record says %d", key, len(data), rec.Size)
		}
		r, err := clampRange(rng, rec.Size)
		if err != nil {
			return err
		}
		start, n := int64(0), rec.Size
		if r != nil {
			start, n = r.Start, r.Length
		}
		if !b.bodies.take(n) {
			return errSlowDown("the server is holding as many bytes for answers and request bodies as it may; retry later")
		}
		body := make([]byte, n)
		copy(body, data[start:start+n])
		obj = &gofakes3.Object{Name: key, Metadata: rec.Metadata, Size: rec.Size, Hash: rec.hash(), Range: r,
			Contents: &chargedReader{Reader: bytes.NewReader(body), bodies: b.bodies, n: n}}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// chargedReader is a read's copy, charged to the budget, and to the share of the tenant that
// reads it (set by requestBackend), until it is closed (gofakes3 closes an object's contents
// once its answer is written).
type chargedReader struct {
	*bytes.Reader
	bodies *budget
	tenant *tenant // nil: the server's own read
	n      int64
	once   sync.Once
}

func (c *chargedReader) Close() error {
	c.once.Do(func() {
		c.bodies.give(c.n)
		if c.tenant != nil {
			c.tenant.shareGive(c.n)
		}
	})
	return nil
}

// clampRange resolves a range request against an object's size, as gofakes3's
// ObjectRangeRequest.Range does, and keeps the result within the object whatever the
// request: Range computes the end as start plus length, which can overflow.
func clampRange(rng *gofakes3.ObjectRangeRequest, size int64) (*gofakes3.ObjectRange, error) {
	r, err := rng.Range(size)
	if err != nil || r == nil {
		return r, err
	}
	if r.Start < 0 || r.Start >= size || r.Length < 0 {
		return nil, gofakes3.ErrInvalidRange
	}
	if r.Length > size-r.Start {
		r.Length = size - r.Start
	}
	return r, nil
}

// HeadObject implements gofakes3.Backend: the record only.
func (b *boltStore) HeadObject(bucket, key string) (*gofakes3.Object, error) {
	var obj *gofakes3.Object
	err := b.db.View(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, bucket)
		if bk == nil {
			return gofakes3.BucketNotFound(bucket)
		}
		rec, err := record(bk, key)
		if err != nil {
			return err
		}
		if rec == nil {
			return gofakes3.KeyNotFound(key)
		}
		obj = &gofakes3.Object{Name: key, Metadata: rec.Metadata, Size: rec.Size, Hash: rec.hash(),
			Contents: io.NopCloser(bytes.NewReader(nil))}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// PutObject implements gofakes3.Backend.
func (b *boltStore) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	if size > bolt.MaxValueSize {
		return gofakes3.PutObjectResult{}, gofakes3.ErrorMessagef(codeEntityTooLarge, "the object store keeps objects of at most %d bytes", bolt.MaxValueSize)
	}
	body, sum, err := storedBytes(input, size)
	if err != nil {
		return gofakes3.PutObjectResult{}, err
	}
	modified := b.now()
	err = b.db.Update(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, bucket)
		if bk == nil {
			return gofakes3.BucketNotFound(bucket)
		}
		return b.putCounted(bk, bucket, key, meta, body, sum, modified, cond)
	})
	if err != nil {
		b.forgetCount(bucket)
	}
	return gofakes3.PutObjectResult{}, err
}

// putCounted is putObject within MaxObjectsPerBucket: a new key in a bucket that holds as
// many objects as it may is refused. It runs in a write transaction.
func (b *boltStore) putCounted(bk *bolt.Bucket, bucket, key string, meta map[string]string, body []byte, sum [md5.Size]byte, modified time.Time, cond *gofakes3.PutConditions) error {
	if b.maxObjects <= 0 {
		return putObject(bk, key, meta, body, sum, modified, cond)
	}
	isNew := key != "" && bk.Bucket(objMetaKey).Get([]byte(key)) == nil
	if isNew {
		if n := b.objectCount(bk, bucket); n >= b.maxObjects {
			return errBucketFull(bucket, n)
		}
	}
	if err := putObject(bk, key, meta, body, sum, modified, cond); err != nil {
		return err
	}
	if isNew {
		b.addCount(bucket, 1)
	}
	return nil
}

// objectCount is the number of objects in bucket, whose bbolt bucket is bk, counted the
// first time it is asked; it runs in a write transaction.
func (b *boltStore) objectCount(bk *bolt.Bucket, bucket string) int {
	b.countMu.Lock()
	defer b.countMu.Unlock()
	n, ok := b.counts[bucket]
	if !ok {
		n = bk.Bucket(objMetaKey).Stats().KeyN
		if b.counts == nil {
			b.counts = map[string]int{}
		}
		b.counts[bucket] = n
	}
	return n
}

// addCount adds d to bucket's count, if it was counted.
func (b *boltStore) addCount(bucket string, d int) {
	b.countMu.Lock()
	defer b.countMu.Unlock()
	if n, ok := b.counts[bucket]; ok {
		b.counts[bucket] = n + d
	}
}

// forgetCount drops bucket's count (a write transaction on it failed, or the bucket went):
// it is counted again when next needed.
func (b *boltStore) forgetCount(bucket string) {
	b.countMu.Lock()
	defer b.countMu.Unlock()
	delete(b.counts, bucket)
}

// putObject stores an object in bk with meta as its metadata, checking cond against the object
// it replaces, of which nothing is kept. body must not be a slice of
// bbolt's memory: it is referred to until the transaction commits, when the file may be
// mapped anew.
func putObject(bk *bolt.Bucket, key string, meta map[string]string, body []byte, sum [md5.Size]byte, modified time.Time, cond *gofakes3.PutConditions) error {
	if key == "" || len(key) > bolt.MaxKeySize {
		return gofakes3.ResourceError(gofakes3.ErrKeyTooLong, key)
	}
	if cond != nil {
		old, err := record(bk, key)
		if err != nil {
			return err
		}
		info := &gofakes3.ConditionalObjectInfo{Exists: old != nil}
		if old != nil {
			info.Hash = old.hash()
		}
		if err := gofakes3.CheckPutConditions(cond, info); err != nil {
			return err
		}
	}
	raw, err := json.Marshal(objectRecord{Size: int64(len(body)), MD5: hex.EncodeToString(sum[:]), Modified: modified.UTC(), Metadata: meta})
	if err != nil {
		return fmt.Errorf("object %q: encode its record: %w", key, err)
	}
	if err := bk.Bucket(objMetaKey).Put([]byte(key), raw); err != nil {
		return fmt.Errorf("object %q: %w", key, err)
	}
	if err := bk.Bucket(objDataKey).Put([]byte(key), body); err != nil {
		return fmt.Errorf("object %q: %w", key, err)
	}
	return nil
}

// CopyObject implements gofakes3.Backend, in one transaction. The source's bytes are copied
// before they are stored again: a slice of bbolt's memory must not outlive a write.
func (b *boltStore) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	var out gofakes3.CopyObjectResult
	var charged int64 // the copy is referred to until the transaction has committed
	defer func() { b.bodies.give(charged) }()
	now := b.now()
	err := b.db.Update(func(tx *bolt.Tx) error {
		src := b.bucket(tx, srcBucket)
		if src == nil {
			return gofakes3.BucketNotFound(srcBucket)
		}
		rec, err := record(src, srcKey)
		if err != nil {
			return err
		}
		if rec == nil {
			return gofakes3.KeyNotFound(srcKey)
		}
		if !b.bodies.take(rec.Size) {
			return errSlowDown("the server is holding as many bytes for answers and request bodies as it may; retry later")
		}
		charged = rec.Size
		body := bytes.Clone(src.Bucket(objDataKey).Get([]byte(srcKey)))
		if body == nil {
			body = []byte{}
		}
		dst := b.bucket(tx, dstBucket)
		if dst == nil {
			return gofakes3.BucketNotFound(dstBucket)
		}
		var sum [md5.Size]byte
		copy(sum[:], rec.hash())
		if err := b.putCounted(dst, dstBucket, dstKey, meta, body, sum, now, nil); err != nil {
			return err
		}
		out = gofakes3.CopyObjectResult{ETag: `"` + rec.MD5 + `"`, LastModified: gofakes3.NewContentTime(now)}
		return nil
	})
	if err != nil {
		b.forgetCount(dstBucket)
	}
	return out, err
}

// DeleteObject implements gofakes3.Backend; a key that is not there is not an error.
func (b *boltStore) DeleteObject(bucket, key string) (gofakes3.ObjectDeleteResult, error) {
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, bucket)
		if bk == nil {
			return gofakes3.BucketNotFound(bucket)
		}
		return b.deleteCounted(bk, bucket, key)
	})
	if err != nil {
		b.forgetCount(bucket)
	}
	return gofakes3.ObjectDeleteResult{}, err
}

// deleteCounted is deleteObject, keeping bucket's count; it runs in a write transaction.
func (b *boltStore) deleteCounted(bk *bolt.Bucket, bucket, key string) error {
	existed := key != "" && bk.Bucket(objMetaKey).Get([]byte(key)) != nil
	if err := deleteObject(bk, key); err != nil {
		return err
	}
	if existed {
		b.addCount(bucket, -1)
	}
	return nil
}

func deleteObject(bk *bolt.Bucket, key string) error {
	if key == "" {
		return nil
	}
	if err := bk.Bucket(objMetaKey).Delete([]byte(key)); err != nil {
		return fmt.Errorf("delete object %q: %w", key, err)
	}
	if err := bk.Bucket(objDataKey).Delete([]byte(key)); err != nil {
		return fmt.Errorf("delete object %q: %w", key, err)
	}
	return nil
}

// DeleteMulti implements gofakes3.Backend, in one transaction.
func (b *boltStore) DeleteMulti(bucket string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var out gofakes3.MultiDeleteResult
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk := b.bucket(tx, bucket)
		if bk == nil {
			return gofakes3.BucketNotFound(bucket)
		}
		for _, k := range keys {
			if err := b.deleteCounted(bk, bucket, k); err != nil {
				return err
			}
			out.Deleted = append(out.Deleted, gofakes3.ObjectID{Key: k})
		}
		return nil
	})
	if err != nil {
		b.forgetCount(bucket)
		return gofakes3.MultiDeleteResult{}, err
	}
	return out, nil
}

// migrationBatch bounds the object bytes one transaction of a migration writes: bbolt keeps a
// transaction's writes in memory until it commits.
const migrationBatch = 64 << 20

// migrateLegacyStore copies the buckets and objects of legacy, a file of gofakes3's bbolt
// backend, into a new store at path. It reads legacy through that backend's API; the slices
// it answers refer to legacy's memory map, which nothing writes to while the migration runs
// (the file is closed only after the copies are committed), so they stay valid for as long
// as they are used here.
func migrateLegacyStore(legacy, path string, now func() time.Time) error {
	old, err := openBolt(legacy)
	if err != nil {
		return err
	}
	defer old.Close()
	src := s3bolt.New(old)
	tmp := path + ".migrating"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove an unfinished migration: %w", err)
	}
	db, err := openBolt(tmp)
	if err != nil {
		return err
	}
	dst := &boltStore{db: db, now: now}
	if err := dst.prepare(); err != nil {
		_ = db.Close()
		return err
	}
	if err := copyLegacyObjects(src, dst); err != nil {
		_ = db.Close()
		return err
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("put the migrated store in place: %w", err)
	}
	return syncDir(filepath.Dir(path))
}

// copyLegacyObjects copies every bucket and object of src into dst, in transactions of about
// migrationBatch bytes.
func copyLegacyObjects(src *s3bolt.Backend, dst *boltStore) error {
	buckets, err := src.ListBuckets()
	if err != nil {
		return fmt.Errorf("list the buckets: %w", err)
	}
	for _, bi := range buckets {
		if err := dst.db.Update(func(tx *bolt.Tx) error { return createStoreBucket(tx, bi.Name, bi.CreationDate.Time) }); err != nil {
			return err
		}
		list, err := src.ListBucket(bi.Name, nil, gofakes3.ListBucketPage{})
		if err != nil {
			return fmt.Errorf("list bucket %s: %w", bi.Name, err)
		}
		for start := 0; start < len(list.Contents); {
			err := dst.db.Update(func(tx *bolt.Tx) error {
				bk := dst.bucket(tx, bi.Name)
				var batch int64
				for ; start < len(list.Contents) && batch < migrationBatch; start++ {
					c := list.Contents[start]
					obj, err := src.GetObject(bi.Name, c.Key, nil)
					if err != nil {
						return fmt.Errorf("read %s/%s: %w", bi.Name, c.Key, err)
					}
					body, err := io.ReadAll(obj.Contents)
					_ = obj.Contents.Close()
					if err != nil {
						return fmt.Errorf("read %s/%s: %w", bi.Name, c.Key, err)
					}
					var sum [md5.Size]byte
					copy(sum[:], obj.Hash)
					if err := putObject(bk, c.Key, obj.Metadata, body, sum, c.LastModified.Time, nil); err != nil {
						return err
					}
					batch += int64(len(body))
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
