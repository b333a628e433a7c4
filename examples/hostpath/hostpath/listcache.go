package hostpath

import (
	"hash/maphash"
	"sync"

	"github.com/csikit/csikit/driver"
)

// listCache keeps the listing entry decoded from each volume record, so that paging through the
// volumes again decodes nothing: decoding the JSON record was nearly all of the 4.5 us a listed
// volume cost (BenchmarkListVolumesPage, 10,000 volumes). The store stays the only source of
// truth: an entry is used only while the record it was decoded from is the record the listing
// reads now, which a keyed 64-bit hash of the record's bytes checks (two versions of one
// volume's record colliding is a 2^-64 chance per pair; the hash key is random per process, so
// no record can be made to collide on purpose).
//
// Memory stays bounded without a hook in every path that deletes a volume: each entry notes the
// last listing pass that used it, and when a listing reaches the end of the volumes, the entries
// no listing used in this pass or the one before (deleted volumes among them) are dropped. The
// sweep costs one step per cached entry once per pass, about one per listed volume.
type listCache struct {
	seed maphash.Seed
	mu   sync.Mutex
	m    map[string]*listCached
	pass uint64
	// contexts shares one volume context map among the volumes of one kind and file system.
	contexts map[string]map[string]string
}

type listCached struct {
	sum   uint64
	pass  uint64
	entry *driver.VolumeEntry
}

func newListCache() *listCache {
	return &listCache{seed: maphash.MakeSeed(), m: map[string]*listCached{}, contexts: map[string]map[string]string{}}
}

// sum is the hash that ties an entry to the record bytes it was decoded from.
func (lc *listCache) sum(raw []byte) uint64 { return maphash.Bytes(lc.seed, raw) }

// get returns the cached entry of volume id decoded from the record whose hash is sum, or nil.
func (lc *listCache) get(id []byte, sum uint64) *driver.VolumeEntry {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	c, ok := lc.m[string(id)]
	if !ok || c.sum != sum {
		return nil
	}
	c.pass = lc.pass
	return c.entry
}

// put caches entry, decoded from the record whose hash is sum.
func (lc *listCache) put(sum uint64, entry *driver.VolumeEntry) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.m[entry.Volume.ID] = &listCached{sum: sum, pass: lc.pass, entry: entry}
}

// context returns the shared volume context map equal to vctx.
func (lc *listCache) context(kind, fsType string, vctx map[string]string) map[string]string {
	key := kind + "\x00" + fsType
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if m, ok := lc.contexts[key]; ok {
		return m
	}
	lc.contexts[key] = vctx
	return vctx
}

// endOfPass is called when a listing has reached the last volume: entries unused in this pass
// and the one before are dropped.
func (lc *listCache) endOfPass() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for id, c := range lc.m {
		if c.pass+1 < lc.pass {
			delete(lc.m, id)
		}
	}
	lc.pass++
}

// len is the number of cached entries, for tests.
func (lc *listCache) len() int {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return len(lc.m)
}
