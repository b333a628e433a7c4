package s3server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/csikit/csikit/examples/memorys3/sigv4"
)

// DefaultRegion is the region the server signs for when Config.Region is empty.
const DefaultRegion = "us-east-1"

// Config configures a Server. The zero value is an in-memory server for us-east-1.
type Config struct {
	// StateDir, when set, keeps objects (store.db, see boltStore) and buckets, accounts and
	// grants (access.db) there, so they survive a restart. Empty: all in memory. Multipart
	// uploads in progress are kept in memory either way. A directory whose objects are in the
	// format of gofakes3's bbolt backend (objects.db, written before store.db existed) is
	// migrated when the server opens it.
	StateDir string
	// Region is the region clients must sign for; empty means DefaultRegion.
	Region string
	// Endpoint is the URL clients reach the server at (e.g. "http://127.0.0.1:9000"); it is
	// reported by Endpoint for COSI's bucket info and not otherwise used.
	Endpoint string
	// Now is the clock for signature time checks and object timestamps; nil means time.Now.
	Now func() time.Time
	// MaxSkew bounds the distance between a request's x-amz-date and Now; 0 means 15 minutes.
	MaxSkew time.Duration
	// Logger receives authentication and authorisation failures at debug level (access key
	// IDs, never secrets) and store failures at error level; nil discards.
	Logger *zap.Logger
	// Limits bound object sizes and what a connection may hold; zero fields take defaults.
	Limits Limits

	// storeEvents, when set (by tests), receives each line gofakes3 logs: its handlers name
	// themselves as they start, which tells a test what the store performed.
	storeEvents func(string)
	// instrument, when set (by tests), wraps the backend the store works on, to see its calls.
	instrument func(gofakes3.Backend) gofakes3.Backend
}

// Server is an S3 endpoint (an http.Handler) backed by gofakes3, with SigV4 authentication
// and per-key, per-bucket authorisation in front of it, and the Go API a COSI driver uses to
// manage its buckets and grants. Its methods are safe for concurrent use.
type Server struct {
	cfg     Config
	backend gofakes3.Backend // the objects: memStore, or boltStore in a state directory
	uploads *uploadStore     // the multipart uploads in progress
	store   http.Handler     // the store's handler (objectStore): gofakes3's routing and S3 semantics
	objects *storeBackend    // the backend the store works on
	// storeLog and storeTime are the store's log and clock, which gofakes3 is given too.
	storeLog  storeLog
	storeTime timeSource
	verifier  *sigv4.Verifier
	log       *zap.Logger
	closers   []func() error
	reqID     atomic.Uint64
	limits    Limits
	bodyQuota int64  // limits.bodyQuota()
	budget    budget // bytes buffered in request bodies and held in parts
	shares    *shares
	http      *http.Server
	conns     *connLimiter

	// commitMu orders the store's commits against changes of the grants in force: a request
	// that changes the store holds it shared while it checks its grant again and commits
	// (see commit); publish holds it exclusively while it swaps the keyring, so a grant is
	// gone for every commit once the Go API call that took it returns.
	commitMu sync.RWMutex

	// uploadsDropped, when set (by tests), is told a bucket's uploads are being dropped by
	// DeleteBucket, which holds s.mu.
	uploadsDropped func(bucket string)

	// stopDeleteAfter, when set (by tests), makes DeleteBucket stop after that step, as a
	// crash there would; guarded by mu.
	stopDeleteAfter deleteStep

	// charged, when set (by tests), is told the operation of every request that reached
	// authorisation: what the server decided it is, to hold against what the store did.
	charged func(*operation)

	// mu serialises the Go API's changes; the request path reads keys without it.
	mu       sync.Mutex
	closed   bool
	state    state
	buckets  map[string]bucketRecord
	accounts map[string]accountRecord // by account ID
	lastGen  uint64                   // the generation last given to a bucket record

	keys atomic.Pointer[keyring]
}

// keyring is an immutable snapshot of the keys and their grants, swapped whole on every
// change: a request does one atomic load and one map lookup, and a revocation is visible to
// every request that starts after RevokeAccess returns.
type keyring struct {
	byKey map[string]*keyEntry
	// gen is the generation of each bucket this server created: a bucket deleted and created
	// again has another, so a request authorised against the old bucket is not committed
	// to the new one.
	gen map[string]uint64
}

type keyEntry struct {
	key       *sigv4.Key
	accountID string
	name      string
	grants    map[string]Mode
	tenant    *tenant // what the account's requests in progress hold; the same across keyrings
}

// lockTimeout: a second process on the same state directory is told at once instead of
// waiting for a lock its holder will not release.
const lockTimeout = 100 * time.Millisecond

// New starts a Server: it opens (or creates) the state in cfg.StateDir and loads the
// recorded buckets and accounts, or starts empty in memory.
func New(cfg Config) (*Server, error) {
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.StateDir != "" && limits.MaxObjectSize > bolt.MaxValueSize {
		return nil, fmt.Errorf("limits: a state directory keeps objects of at most %d bytes, not %d: %w", bolt.MaxValueSize, limits.MaxObjectSize, ErrInvalidArgument)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, limits: limits, bodyQuota: limits.bodyQuota(), budget: budget{limit: limits.MaxBufferedBytes}}
	s.shares = &shares{limits: limits, budget: &s.budget}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	ts := timeSource{cfg.Now}
	if cfg.StateDir == "" {
		mem := newMemStore(ts.Now)
		mem.maxObjects = limits.MaxObjectsPerBucket
		s.backend = mem
		s.state = memoryState{}
	} else {
		if err := s.openState(cfg.StateDir, ts); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	buckets, accounts, err := s.state.load()
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	for name, rec := range buckets {
		s.lastGen++
		rec.gen = s.lastGen
		buckets[name] = rec
	}
	s.buckets, s.accounts = buckets, accounts
	s.publish()
	// gofakes3's own skew check uses its clock on x-amz-date; ours runs first with the same
	// limit, so its check is switched off rather than run twice.
	inner := s.backend
	if cfg.instrument != nil {
		inner = cfg.instrument(inner)
	}
	s.uploads = newUploadStore(s.limits, &s.budget, inner, ts.Now)
	s.objects = &storeBackend{Backend: inner, uploadStore: s.uploads, maxObjectSize: s.limits.MaxObjectSize, bodies: &s.budget}
	s.storeLog, s.storeTime = storeLog{log: s.log, events: cfg.storeEvents}, ts
	opts := []gofakes3.Option{gofakes3.WithTimeSource(ts), gofakes3.WithTimeSkewLimit(0), gofakes3.WithLogger(s.storeLog)}
	s.store = objectStore{s: s, opts: opts, gofakes3: gofakes3.New(s.objects, opts...).Server()}
	s.conns = newConnLimiter(s.limits.MaxConnections)
	s.http = s.newHTTPServer()
	s.verifier = &sigv4.Verifier{
		Keys:    sigv4.KeyringFunc(s.lookupKey),
		Region:  cfg.Region,
		Now:     cfg.Now,
		MaxSkew: cfg.MaxSkew,
	}
	s.finishPendingDeletions()
	return s, nil
}

func (s *Server) openState(dir string, ts timeSource) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	// access.db first: its lock tells a second process on the directory to go away before it
	// touches the objects (or migrates them).
	access, err := openBolt(filepath.Join(dir, "access.db"))
	if err != nil {
		return err
	}
	s.closers = append(s.closers, access.Close)
	st, err := openBoltState(access)
	if err != nil {
		return err
	}
	s.state = st
	store, err := openBoltStore(dir, ts.Now, &s.budget)
	if err != nil {
		return err
	}
	store.maxObjects = s.limits.MaxObjectsPerBucket
	s.closers = append(s.closers, store.close)
	s.backend = store
	return nil
}

// openBolt opens a bbolt file of the state directory; a second process on the same directory
// is told at once instead of waiting for a lock its holder will not release.
func openBolt(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("state %s is in use by another process", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	return db, nil
}

// Close stops the Go API and closes the state files. Serve no requests after Close.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// Endpoint is the URL given in Config.Endpoint.
func (s *Server) Endpoint() string { return s.cfg.Endpoint }

// Region is the region clients sign for.
func (s *Server) Region() string { return s.cfg.Region }

// now is the configured clock.
func (s *Server) now() time.Time { return s.cfg.Now() }

// publish swaps in a keyring built from s.accounts and s.buckets; s.mu must be held. It takes
// the commit lock exclusively for the swap: a commit authorised by the old keyring has
// finished when publish returns, and every later one is checked against the new keyring.
func (s *Server) publish() {
	k := &keyring{byKey: make(map[string]*keyEntry, len(s.accounts)), gen: make(map[string]uint64, len(s.buckets))}
	for name, rec := range s.buckets {
		k.gen[name] = rec.gen
	}
	old := s.keys.Load()
	for id, a := range s.accounts {
		if len(a.Buckets) == 0 { // every bucket it was granted is deleted: no key until a new grant
			continue
		}
		e := &keyEntry{accountID: id, name: a.Name, grants: a.Buckets}
		// Keep the key (and its signer's warm cache) when the account already had one.
		if old != nil {
			if prev, ok := old.byKey[a.Credentials.AccessKeyID]; ok && prev.accountID == id {
				e.key, e.tenant = prev.key, prev.tenant
			}
		}
		if e.key == nil {
			e.key = sigv4.NewKey(a.Credentials.AccessKeyID, a.Credentials.SecretAccessKey)
			e.tenant = newTenant(id, s.shares)
		}
		k.byKey[a.Credentials.AccessKeyID] = e
	}
	s.commitMu.Lock()
	s.keys.Store(k)
	s.commitMu.Unlock()
}

func (s *Server) lookupKey(id string) (*sigv4.Key, bool) {
	e, ok := s.keys.Load().byKey[id]
	if !ok {
		return nil, false
	}
	return e.key, true
}

// timeSource adapts the configured clock to gofakes3, whose timestamps S3 writes in GMT.
type timeSource struct{ now func() time.Time }

var gmt = time.FixedZone("GMT", 0)

func (t timeSource) Now() time.Time                   { return t.now().In(gmt) }
func (t timeSource) Since(at time.Time) time.Duration { return t.now().Sub(at) }

// storeLog passes gofakes3's log to the server's logger at debug level: it logs every error
// answer it sends, which are the clients' business, not the operator's.
type storeLog struct {
	log    *zap.Logger
	events func(string)
}

// Print implements gofakes3.Logger.
func (l storeLog) Print(level gofakes3.LogLevel, v ...any) {
	if l.events != nil {
		l.events(fmt.Sprint(v...))
	}
	if ce := l.log.Check(zap.DebugLevel, "object store"); ce != nil {
		ce.Write(zap.String("level", string(level)), zap.String("message", fmt.Sprint(v...)))
	}
}
