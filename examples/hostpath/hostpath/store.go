package hostpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/csikit/csikit/driver"
)

// store is an embedded transactional key-value store (bbolt): every change commits atomically
// and durably, one B+tree lookup per key, so the cost of an operation does not grow with the
// number of volumes.
//
// Writes go through one committer goroutine that applies every change queued while the previous
// commit was syncing in a single transaction: a lone caller commits at once (no batching delay),
// concurrent callers share one fsync. A write function must do all its checks before its first
// Put or Delete, because the functions of one batch share a transaction: an error returned after a
// write would leave that write in place.
type store struct {
	db    *bolt.DB
	queue chan *writeOp
	wg    sync.WaitGroup
	// mu guards closed and the send on queue: a handler still running after a hard stop gets
	// errClosed from update instead of sending on a closed channel.
	mu     sync.RWMutex
	closed bool
}

type writeOp struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// maxBatch bounds how many queued writes share one transaction.
const maxBatch = 256

// lockTimeout makes bbolt try its exclusive file lock once instead of waiting: bbolt gives up
// when the time since its first try exceeds the timeout minus its 50 ms retry interval, which a
// timeout this short already does. A second plugin on the same state has to be told at once;
// waiting cannot help, because the holder is a live process (the kernel drops the lock of a
// dead one).
const lockTimeout = time.Millisecond

// ErrStateInUse is returned (wrapped) by Open when another process holds the state database a
// mode needs: two plugins writing one state would corrupt each other's view of the volumes.
var ErrStateInUse = errors.New("in use by another process")

func openStore(path string, buckets ...string) (*store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        lockTimeout,
		NoFreelistSync: true, // the freelist is rebuilt on open; fewer pages written per commit
		FreelistType:   bolt.FreelistMapType,
		// Reserve address space up front so the map is not remapped (which waits for every
		// reader) each time the file doubles while the first thousands of volumes are created.
		InitialMmapSize: 256 << 20,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		// The lock is per database, not per directory: a controller-only and a node-only
		// process may share one state directory, as their databases differ.
		return nil, fmt.Errorf("state dir %s is %w (%s is locked); stop the other plugin or give this one another state directory",
			filepath.Dir(path), ErrStateInUse, filepath.Base(path))
	}
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return fmt.Errorf("bucket %s: %w", b, err)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("prepare state %s: %w", path, err)
	}
	s := &store{db: db, queue: make(chan *writeOp, maxBatch)}
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

func (s *store) commitLoop() {
	defer s.wg.Done()
	batch := make([]*writeOp, 0, maxBatch)
	for op := range s.queue {
		batch = append(batch[:0], op)
	drain:
		for len(batch) < maxBatch {
			select {
			case more, ok := <-s.queue:
				if !ok {
					break drain
				}
				batch = append(batch, more)
			default:
				break drain
			}
		}
		errs := make([]error, len(batch))
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, op := range batch {
				errs[i] = op.fn(tx)
			}
			return nil
		})
		for i, op := range batch {
			if err != nil {
				op.done <- fmt.Errorf("commit state: %w", err)
			} else {
				op.done <- errs[i]
			}
		}
	}
}

// errClosed is what a write gets once the store is closed: the plugin is stopping, retry later.
var errClosed = fmt.Errorf("state store is closed: %w", driver.ErrUnavailable)

// update applies fn in a durable transaction, possibly shared with other writers.
func (s *store) update(fn func(*bolt.Tx) error) error {
	op := &writeOp{fn: fn, done: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return errClosed
	}
	// Sending under the read lock: close waits for queued sends, and the committer keeps
	// draining until the queue is closed, so a full queue cannot deadlock with close.
	s.queue <- op
	s.mu.RUnlock()
	return <-op.done
}

// view runs fn in a read-only transaction; readers never wait for writers.
func (s *store) view(fn func(*bolt.Tx) error) error { return s.db.View(fn) }

// close commits what is queued, then closes the database. It may be called more than once.
func (s *store) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.queue)
	s.mu.Unlock()
	s.wg.Wait()
	return s.db.Close()
}

var errNoRecord = errors.New("no such record")

// getJSON decodes the record at key, or returns errNoRecord.
func getJSON(tx *bolt.Tx, bucket, key string, v any) error {
	raw := tx.Bucket([]byte(bucket)).Get([]byte(key))
	if raw == nil {
		return errNoRecord
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %s/%s: %w", bucket, key, err)
	}
	return nil
}

func putJSON(tx *bolt.Tx, bucket, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", bucket, key, err)
	}
	return tx.Bucket([]byte(bucket)).Put([]byte(key), raw)
}

func getString(tx *bolt.Tx, bucket, key string) string {
	return string(tx.Bucket([]byte(bucket)).Get([]byte(key)))
}

func putString(tx *bolt.Tx, bucket, key, value string) error {
	return tx.Bucket([]byte(bucket)).Put([]byte(key), []byte(value))
}

func del(tx *bolt.Tx, bucket, key string) error {
	return tx.Bucket([]byte(bucket)).Delete([]byte(key))
}

// counter reads an int64 kept as decimal text.
func counter(tx *bolt.Tx, bucket, key string) int64 {
	var n int64
	if raw := tx.Bucket([]byte(bucket)).Get([]byte(key)); raw != nil {
		_, _ = fmt.Sscan(string(raw), &n)
	}
	return n
}

func addCounter(tx *bolt.Tx, bucket, key string, delta int64) error {
	n := counter(tx, bucket, key) + delta
	if n == 0 {
		return del(tx, bucket, key)
	}
	return tx.Bucket([]byte(bucket)).Put([]byte(key), []byte(fmt.Sprint(n)))
}

// byName looks up the record a create name points to: nil when the name is free.
func byName[T any](s *store, namesBucket, recordsBucket, name string) (*T, error) {
	var rec *T
	err := s.view(func(tx *bolt.Tx) error {
		id := getString(tx, namesBucket, name)
		if id == "" {
			return nil
		}
		rec = new(T)
		return getJSON(tx, recordsBucket, id, rec)
	})
	return rec, err
}
