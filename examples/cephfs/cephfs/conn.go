package cephfs

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ceph/go-ceph/cephfs/admin"
	"github.com/ceph/go-ceph/rados"

	"github.com/csikit/csikit/driver"
)

// The keys of the CSI secrets that carry a Ceph identity, as ceph-csi names them: the cephx user
// without "client." and its key.
const (
	SecretUserID  = "userID"
	SecretUserKey = "userKey"
)

// credentials is a cephx identity taken from a call's secrets. It never leaves memory: the key
// goes to librados as a config option and to ceph-fuse through a 0600 keyring file that is
// removed as soon as the mount is made.
type credentials struct {
	id, key string
}

// credentialsFrom reads the identity from a call's secrets. The error names the missing key,
// never a value.
func credentialsFrom(s driver.Secrets) (credentials, error) {
	c := credentials{id: s[SecretUserID], key: s[SecretUserKey]}
	switch {
	case c.id == "" || c.key == "":
		return credentials{}, fmt.Errorf("the secrets must hold the Ceph user (%q, without \"client.\") and its key (%q): %w",
			SecretUserID, SecretUserKey, driver.ErrInvalidArgument)
	case !validUserID(c.id):
		return credentials{}, fmt.Errorf("secret %q is not a cephx user ID (letters, digits, '.', '_', '-'): %w",
			SecretUserID, driver.ErrInvalidArgument)
	case !validKey(c.key):
		return credentials{}, fmt.Errorf("secret %q is not a cephx key (base64): %w", SecretUserKey, driver.ErrInvalidArgument)
	}
	return c, nil
}

func validUserID(id string) bool {
	if len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// validKey accepts base64 only, so that a key can be written into a keyring line unquoted and
// cannot carry a newline into it.
func validKey(k string) bool {
	if len(k) > 256 {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=') {
			return false
		}
	}
	return true
}

// cluster holds one librados connection per identity the CO has sent, so that a call costs a
// round trip to the mgr, not a cephx handshake. The calls that carry no secrets (ListVolumes,
// GetCapacity, Probe) use the connection of the last call that did and got an answer from Ceph.
type cluster struct {
	monitors string
	timeout  time.Duration

	mu    sync.Mutex
	conns map[[32]byte]*rados.Conn
	last  *rados.Conn
}

func newCluster(monitors string, timeout time.Duration) *cluster {
	return &cluster{monitors: monitors, timeout: timeout, conns: map[[32]byte]*rados.Conn{}}
}

func (c *cluster) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, conn := range c.conns {
		conn.Shutdown()
		delete(c.conns, k)
	}
	c.last = nil
}

// connect returns the connection for cr, making it when it is new, and makes it the one the calls
// without secrets use. A failed handshake is not
// kept: the next call tries again, which is how the driver recovers when Ceph comes back.
func (c *cluster) connect(ctx context.Context, cr credentials) (*rados.Conn, error) {
	k := sha256.Sum256([]byte(cr.id + "\x00" + cr.key))
	c.mu.Lock()
	conn := c.conns[k]
	if conn != nil {
		c.last = conn
	}
	c.mu.Unlock()
	if conn != nil {
		return conn, nil
	}
	conn, err := call(ctx, c.timeout, "connect to Ceph", func() (*rados.Conn, error) {
		conn, err := rados.NewConnWithUser(cr.id)
		if err != nil {
			return nil, err
		}
		secs := strconv.Itoa(int(c.timeout / time.Second))
		for _, o := range [][2]string{
			{"mon_host", c.monitors},
			{"key", cr.key},
			// The handshake gives up after this (five minutes by default). Mon and mgr commands
			// are not given librados' rados_mon_op_timeout: in Pacific a mgr command that times
			// out leaves the mgr client writing into freed memory when the mgr comes back (the
			// driver crashed with "free(): invalid pointer" in the fault test). call bounds them
			// instead, and the command finishes in the background once Ceph answers.
			{"client_mount_timeout", secs},
			{"log_to_stderr", "false"},
			{"err_to_stderr", "false"},
		} {
			if err := conn.SetConfigOption(o[0], o[1]); err != nil {
				conn.Shutdown()
				return nil, fmt.Errorf("set %s: %w", o[0], err)
			}
		}
		if err := conn.Connect(); err != nil {
			conn.Shutdown()
			switch errno(err) {
			case syscall.EPERM, syscall.EACCES:
				return nil, fmt.Errorf("cephx refused the user and key of the secrets: %w", driver.ErrUnauthenticated)
			case syscall.EINVAL: // librados could not decode the key
				return nil, fmt.Errorf("secret %q is not a cephx key: %w", SecretUserKey, driver.ErrInvalidArgument)
			}
			return nil, err
		}
		return conn, nil
	})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.conns[k]; old != nil { // another call connected first
		conn.Shutdown()
		conn = old
	}
	c.conns[k], c.last = conn, conn
	return conn, nil
}

// lastConn returns the connection of the last call that carried secrets and reached Ceph.
func (c *cluster) lastConn() (*rados.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return nil, fmt.Errorf("no Ceph credentials yet: this call carries no secrets, and the driver uses those of the last call that did (CreateVolume, DeleteVolume, ...); none has come since it started: %w",
			driver.ErrUnavailable)
	}
	return c.last, nil
}

// fsAdmin is an admin.FSAdmin on a connection, answering ctx as call does.
type fsAdmin struct {
	*admin.FSAdmin
	conn *rados.Conn
}

// call runs f, which blocks in librados, and returns early if ctx ends or timeout passes: the
// caller's deadline is honoured even though librados cannot be interrupted, and a Ceph that does
// not answer (librados waits for a mgr without end) is UNAVAILABLE after timeout. Errors are
// classified by classify.
func call[T any](ctx context.Context, timeout time.Duration, what string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return r.v, fmt.Errorf("%s: %w", what, classify(r.err))
		}
		return r.v, nil
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%s: %w", what, ctx.Err())
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("%s: Ceph did not answer within %v: %w", what, timeout, driver.ErrUnavailable)
	}
}

// errno returns the errno a go-ceph error carries (positive), or 0.
func errno(err error) syscall.Errno {
	var ce interface{ ErrorCode() int }
	if errors.As(err, &ce) {
		n := ce.ErrorCode()
		if n < 0 {
			n = -n
		}
		return syscall.Errno(n)
	}
	return 0
}

// classify adds the driver sentinel that the Ceph error's errno means, so the plugin answers the
// code the CSI error tables want: transient faults of the cluster (timeouts, no connection,
// "try again") are UNAVAILABLE, never INTERNAL or a code the CO treats as final.
func classify(err error) error {
	if errors.Is(err, driver.ErrUnauthenticated) || errors.Is(err, driver.ErrUnavailable) {
		return err
	}
	var sentinel error
	switch errno(err) {
	case syscall.ENOENT:
		sentinel = driver.ErrNotFound
	case syscall.ETIMEDOUT, syscall.ENOTCONN, syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ESHUTDOWN,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EINTR, syscall.EAGAIN, syscall.EIO, syscall.ENOTSUP:
		// ENOTSUP: librados answers a mgr command so while no mgr is active.
		sentinel = driver.ErrUnavailable
	case syscall.EPERM, syscall.EACCES:
		sentinel = driver.ErrPermissionDenied
	case syscall.EDQUOT, syscall.ENOSPC:
		sentinel = driver.ErrResourceExhausted
	case syscall.ENOTEMPTY, syscall.EBUSY:
		sentinel = driver.ErrInUse
	}
	if sentinel == nil {
		return err
	}
	return fmt.Errorf("%w: %w", err, sentinel)
}
