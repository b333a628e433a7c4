package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/nodemount"
)

// Staging and target paths come from the CO. The mount table names mount points by their real
// path, so each path is resolved once (nodemount.Canonical: its directory through
// filepath.EvalSymlinks, its leaf never followed) and that canonical path is what the driver
// mounts on, records and compares with the mount table. A symlink at the leaf would send the
// mount somewhere else and is refused.

// checkPath refuses what can never be a staging or target path, as INVALID_ARGUMENT: the
// library checks that the path is absolute, and the root directory would make unmount and
// removal act on the whole host.
func checkPath(path string) error {
	switch {
	case !filepath.IsAbs(path):
		return fmt.Errorf("path %q is not absolute: %w", path, driver.ErrInvalidArgument)
	case filepath.Clean(path) == "/":
		return fmt.Errorf("the root directory cannot be a staging or target path: %w", driver.ErrInvalidArgument)
	}
	return nil
}

// lookupPath is the canonical path for calls that only inspect or undo: when the directory of
// path no longer exists, nothing can be mounted there, and the cleaned path as given is returned
// for record lookups.
func lookupPath(path string) (string, error) {
	if err := checkPath(path); err != nil {
		return "", err
	}
	p, err := nodemount.Canonical(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return filepath.Clean(path), nil
	}
	return p, err
}

// preparePath creates the directory of a staging or target path (field names it in errors) and
// returns the canonical path. A symlink at the path is refused.
func preparePath(field, path string) (string, error) {
	if err := checkPath(path); err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(path)), 0o750); err != nil {
		return "", fmt.Errorf("create the directory of %s: %w", field, err)
	}
	p, err := nodemount.Canonical(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("%s %q is a symbolic link; the driver mounts only on a real directory or file, never through a link: %w",
			field, path, driver.ErrInvalidArgument)
	}
	return p, nil
}

// within says whether path is base or lies below it (both clean and absolute).
func within(path, base string) bool {
	return base == "/" || path == base || strings.HasPrefix(path, base+"/")
}

// samePath says whether a recorded path (canonical, and as the CO gave it) is the path a call
// names: canon as preparePath or lookupPath returned it, given as the CO sent it.
func samePath(recorded, recordedAsGiven, canon, given string) bool {
	given = filepath.Clean(given)
	return recorded == canon || recorded == given || (recordedAsGiven != "" && recordedAsGiven == given)
}

// keyedLocks is a mutex per key: the node holds one per staging or target path, so that two
// volumes that a confused CO sends to the same path do not both find it free and both mount
// there, and one per volume (see Node). Entries are removed when released.
type keyedLocks struct {
	mu   sync.Mutex
	held map[string]*keyedLock
	// contended, when set (by tests), is called with the key before a lock waits for another
	// holder: the way a test sees that a call is serialised behind another without sleeping.
	contended func(key string)
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks key, waiting for any holder, and returns its unlock.
func (p *keyedLocks) lock(key string) func() {
	p.mu.Lock()
	if p.held == nil {
		p.held = map[string]*keyedLock{}
	}
	l := p.held[key]
	if l == nil {
		l = &keyedLock{}
		p.held[key] = l
	}
	l.refs++
	waits := l.refs > 1
	contended := p.contended
	p.mu.Unlock()
	if waits && contended != nil {
		contended(key)
	}
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.held, key)
		}
		p.mu.Unlock()
	}
}
