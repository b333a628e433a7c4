package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
)

// Staging and target paths come from the CO. The mount table names mount points by their real
// path, so each path is resolved once (its directory through filepath.EvalSymlinks) and that
// canonical path is what the driver mounts on, records and compares with the mount table. The leaf
// itself is never followed: a symlink there would send the mount somewhere else and is refused.

// canonical returns path with its directory resolved to its real location. The leaf is kept as
// it is (not followed).
func canonical(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("path %q is not absolute: %w", path, driver.ErrInvalidArgument)
	}
	clean := filepath.Clean(path)
	if clean == "/" {
		return "", fmt.Errorf("the root directory cannot be a staging or target path: %w", driver.ErrInvalidArgument)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(clean))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(clean)), nil
}

// lookupPath is canonical for calls that only inspect or undo: when the directory of path no
// longer exists, nothing can be mounted there, and the cleaned path as given is returned for
// record lookups.
func lookupPath(path string) (string, error) {
	p, err := canonical(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return filepath.Clean(path), nil
	}
	return p, err
}

// preparePath creates the directory of a staging or target path (field names it in errors) and
// returns the canonical path. A symlink at the path is refused.
func preparePath(field, path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s %q is not absolute: %w", field, path, driver.ErrInvalidArgument)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(path)), 0o750); err != nil {
		return "", fmt.Errorf("create the directory of %s: %w", field, err)
	}
	p, err := canonical(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return "", fmt.Errorf("%s %q is a symbolic link; the driver mounts only on a real directory or file, never through a link: %w",
			field, path, driver.ErrInvalidArgument)
	}
	return p, nil
}

// samePath says whether a recorded path (canonical, and as the CO gave it) is the path a call
// names: canon as canonical or lookupPath returned it, given as the CO sent it.
func samePath(recorded, recordedAsGiven, canon, given string) bool {
	given = filepath.Clean(given)
	return recorded == canon || recorded == given || (recordedAsGiven != "" && recordedAsGiven == given)
}

// pathLocks serialises the node's work on one staging or target path. The library already runs
// the calls on one volume one at a time; this keeps two volumes that a confused CO sends to the
// same path from both finding it free and both mounting there.
type pathLocks struct {
	mu   sync.Mutex
	held map[string]*pathLock
}

type pathLock struct {
	mu   sync.Mutex
	refs int
}

// lock locks path and returns its unlock.
func (p *pathLocks) lock(path string) func() {
	p.mu.Lock()
	if p.held == nil {
		p.held = map[string]*pathLock{}
	}
	l := p.held[path]
	if l == nil {
		l = &pathLock{}
		p.held[path] = l
	}
	l.refs++
	p.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		p.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(p.held, path)
		}
		p.mu.Unlock()
	}
}

// removeTarget removes what the driver creates at a target path, an empty directory or an empty
// regular file, and nothing else: anything with content, a symlink or a special file is left
// alone.
func removeTarget(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect target: %w", err)
	}
	switch {
	case fi.IsDir():
		if err := unix.Rmdir(path); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("remove target directory: %w", err)
		}
	case fi.Mode().IsRegular() && fi.Size() == 0:
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove target file: %w", err)
		}
	}
	return nil
}
