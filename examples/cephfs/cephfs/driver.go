package cephfs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ceph/go-ceph/cephfs/admin"
	"go.uber.org/zap"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/nodemount"
)

// Config describes the Ceph cluster and filesystem the driver serves. It holds no key: every
// identity comes with the CSI calls' secrets.
type Config struct {
	// Monitors are the cluster's mons in ceph.conf's mon_host syntax, e.g.
	// "[v2:10.0.0.1:3300,v1:10.0.0.1:6789]" or "10.0.0.1,10.0.0.2".
	Monitors string
	// FSName is the CephFS filesystem (the `ceph fs volume`) the subvolumes live in.
	FSName string
	// Group is the subvolume group that holds this driver's subvolumes; made on first use.
	Group string
	// NodeID is what NodeGetInfo answers.
	NodeID string
	// DefaultSize is the quota of a volume created with no capacity range.
	DefaultSize int64
	// Timeout bounds each Ceph operation (mon and mgr commands, the handshake, ceph-fuse's
	// mount) so that a cluster that does not answer makes a call UNAVAILABLE, not a hang; whole
	// seconds, at least one.
	Timeout time.Duration
	// CloneWait is how long CreateVolume waits for a clone to complete before it answers
	// ABORTED (the CO then retries); never past the call's deadline. Zero answers at once.
	CloneWait time.Duration
	// CephFuse is the ceph-fuse program (default "ceph-fuse" on $PATH).
	CephFuse string
	// Logger receives the driver's own lines (never a key); nil logs nothing.
	Logger *zap.Logger
}

// Driver is a CSI controller and node backend on CephFS subvolumes. One value serves both.
type Driver struct {
	cfg    Config
	cl     *cluster
	mounts *nodemount.Mounter
	log    *zap.Logger

	probeMu     sync.Mutex
	probeAt     time.Time
	probeReady  bool
	probeFlight bool
	probeIdle   atomic.Bool // no check is waiting in librados
}

// New checks cfg and returns a driver; it contacts no one (keys come with the calls).
func New(cfg Config) (*Driver, error) {
	if strings.TrimSpace(cfg.Monitors) == "" {
		return nil, errors.New("cephfs: no monitors: give the mon_host of the cluster")
	}
	if cfg.FSName == "" {
		cfg.FSName = "cephfs"
	}
	if cfg.Group == "" {
		cfg.Group = "csi"
	}
	if cfg.DefaultSize <= 0 {
		cfg.DefaultSize = 1 << 30
	}
	if cfg.Timeout < time.Second {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.CephFuse == "" {
		cfg.CephFuse = "ceph-fuse"
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	for _, s := range []string{cfg.FSName, cfg.Group} {
		if !safeName(s) {
			return nil, fmt.Errorf("cephfs: %q is not a plain Ceph name (letters, digits, '-', '_')", s)
		}
	}
	d := &Driver{cfg: cfg, cl: newCluster(cfg.Monitors, cfg.Timeout), mounts: nodemount.New(), log: cfg.Logger}
	d.probeIdle.Store(true)
	return d, nil
}

// Close drops the driver's connections to Ceph.
func (d *Driver) Close() { d.cl.close() }

// NodeGetInfo answers the configured node ID; CephFS is reachable from every node alike.
func (d *Driver) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	return &driver.NodeInfo{NodeID: d.cfg.NodeID}, nil
}

// probeEvery is how long a probe's answer is reused: a liveness probe calls often, and each
// check is a round trip to the mon and the mgr.
const probeEvery = time.Second

// Probe reports whether Ceph answers: false while the mons or the mgr do not, true again as soon
// as they do, with no restart. It asks the mgr for the filesystem's subvolume groups with the
// identity of the last call that carried secrets; before any, it only checks that a mon accepts
// TCP connections. One check runs at a time and its answer is kept for a second; while one runs,
// callers get the previous answer.
func (d *Driver) Probe(ctx context.Context) (bool, error) {
	d.probeMu.Lock()
	if d.probeFlight || time.Since(d.probeAt) < probeEvery && !d.probeAt.IsZero() {
		ready := d.probeReady
		d.probeMu.Unlock()
		return ready, nil
	}
	d.probeFlight = true
	d.probeMu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err := d.check(ctx)
	if err != nil {
		d.log.Debug("ceph not ready", zap.Error(err))
	}

	d.probeMu.Lock()
	defer d.probeMu.Unlock()
	d.probeFlight = false
	d.probeAt = time.Now()
	d.probeReady = err == nil
	return d.probeReady, nil
}

func (d *Driver) check(ctx context.Context) error {
	conn, err := d.cl.lastConn()
	if err != nil {
		return dialAnyMon(ctx, d.cfg.Monitors)
	}
	// A check that outlived its deadline is still waiting in librados for the mgr: until it
	// returns, Ceph is not answering, and no second one is sent after it.
	if !d.probeIdle.CompareAndSwap(true, false) {
		return errors.New("the last check is still waiting for the mgr")
	}
	fsa := admin.NewFromConn(conn)
	_, err = call(ctx, d.cfg.Timeout, "subvolumegroup ls", func() ([]string, error) {
		defer d.probeIdle.Store(true)
		return fsa.ListSubVolumeGroups(d.cfg.FSName)
	})
	return err
}

// dialAnyMon succeeds when one of the monitors accepts a TCP connection.
func dialAnyMon(ctx context.Context, monHost string) error {
	var errs []error
	for _, a := range monAddrs(monHost) {
		var dl net.Dialer
		c, err := dl.DialContext(ctx, "tcp", a)
		if err == nil {
			c.Close()
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("no monitor answers: %w", errors.Join(errs...))
}

// monAddrs turns a mon_host value into host:port addresses ("[v2:a:3300,v1:a:6789]", "a,b:6789",
// "a:6789/0"); an address with no port gets the msgr2 and the msgr1 default ports.
func monAddrs(monHost string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(monHost, func(r rune) bool { return r == ',' || r == ' ' || r == ';' || r == '[' || r == ']' }) {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "v1:"), "v2:")
		if i := strings.IndexByte(f, '/'); i >= 0 {
			f = f[:i]
		}
		if _, _, err := net.SplitHostPort(f); err == nil {
			out = append(out, f)
			continue
		}
		out = append(out, net.JoinHostPort(f, "3300"), net.JoinHostPort(f, "6789"))
	}
	return out
}
