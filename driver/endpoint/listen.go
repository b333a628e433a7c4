package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// DefaultMode is the socket file mode Listen applies when ListenOptions.Mode
// is zero: owner and group may connect, others may not.
const DefaultMode os.FileMode = 0o660

// socketDirMode is the mode of a socket directory Listen has to create.
const socketDirMode os.FileMode = 0o750

// probeTimeout bounds the connect that tells a live socket from a stale one.
// A unix connect answers at once; the bound only matters for a server so
// wedged that its backlog is full.
const probeTimeout = 2 * time.Second

// Owner is the numeric owner and group given to a socket file.
type Owner struct {
	// UID and GID are numeric IDs as for os.Lchown; -1 leaves that one
	// unchanged, so Owner{UID: -1, GID: 1000} only sets the group.
	UID, GID int
}

// ListenOptions adjusts how Listen creates a unix socket. The zero value
// gives mode 0660 and leaves the owner as the process created it. Neither
// field applies to TCP.
type ListenOptions struct {
	// Mode is the permission bits of the socket file; zero means
	// DefaultMode (0660). Bits other than permissions are an error.
	Mode os.FileMode
	// Owner, when not nil, is applied to the socket file with lchown. A
	// pointer so that root (&Owner{UID: 0, GID: 0}) stays expressible while
	// the zero value means "leave unchanged".
	Owner *Owner
}

// Listen listens on e.
//
// For a unix socket it first makes the path usable without ever destroying
// something that is not a socket:
//   - a missing parent directory is created with mode 0750;
//   - a socket at the path is probed: if a live server answers, Listen
//     refuses, saying another process is serving there; if nothing listens
//     (a stale socket left by a crashed plugin), it is removed;
//   - anything else at the path (regular file, directory, symbolic link,
//     device, FIFO) is refused and left untouched, and the error names the
//     path and what it is.
//
// After binding, the socket file gets opts.Mode and opts.Owner. Between bind
// and chmod the file briefly has the mode the umask gives it, so the parent
// directory, not the socket mode, is what keeps strangers out.
//
// Closing the returned listener removes the socket file, but only if the file
// at the path is still the one this listener created: a socket that another
// process has since bound at the same path is left alone.
//
// ctx bounds the probe and the bind; it does not affect the returned
// listener.
func Listen(ctx context.Context, e Endpoint, opts ListenOptions) (net.Listener, error) {
	switch e.Network {
	case NetworkUnix:
		return listenUnix(ctx, e.Address, opts)
	case NetworkTCP:
		var lc net.ListenConfig
		l, err := lc.Listen(ctx, "tcp", e.Address)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", e, err)
		}
		return l, nil
	default:
		return nil, fmt.Errorf("listen on %q: unknown network %q; build the endpoint with Parse", e.String(), e.Network)
	}
}

func listenUnix(ctx context.Context, path string, opts ListenOptions) (net.Listener, error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, fmt.Errorf("listen on unix socket %q: not an absolute, clean path; build the endpoint with Parse", path)
	}
	mode := opts.Mode
	if mode == 0 {
		mode = DefaultMode
	}
	if mode&^os.ModePerm != 0 {
		return nil, fmt.Errorf("listen on %s: socket mode %v has bits other than permissions", path, mode)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, socketDirMode); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if err := clearStale(ctx, path); err != nil {
		return nil, err
	}

	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ul := l.(*net.UnixListener)
	// Close unlinks the path itself, after checking it is still our socket.
	ul.SetUnlinkOnClose(false)
	fi, err := os.Lstat(path)
	if err != nil {
		ul.Close()
		return nil, fmt.Errorf("inspect new socket: %w", err)
	}
	ln := &unixListener{UnixListener: ul, path: path, fi: fi}

	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set socket mode: %w", err)
	}
	if o := opts.Owner; o != nil {
		if err := os.Lchown(path, o.UID, o.GID); err != nil {
			ln.Close()
			return nil, fmt.Errorf("set socket owner: %w", err)
		}
	}
	return ln, nil
}

// clearStale makes path free for bind: nothing there, or a socket nobody
// serves, which it removes. Everything else is an error and stays in place.
func clearStale(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s already exists and is %s, not a socket; refusing to remove it: remove it yourself or choose another endpoint", path, describe(path, fi))
	}

	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(pctx, "unix", path)
	if err == nil {
		c.Close()
		return fmt.Errorf("another process is serving on %s; stop it or choose another endpoint", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		// Permission denied, a full backlog, a timeout: the socket may
		// well be alive, so it is not ours to remove.
		return fmt.Errorf("%s is a socket that may still be in use, refusing to remove it: %w", path, err)
	}

	// Nobody serves it. Remove it only if it is still the file just probed,
	// so that a socket or file put there meanwhile survives.
	now, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect socket path: %w", err)
	}
	if !os.SameFile(fi, now) {
		return fmt.Errorf("%s changed while it was being checked; refusing to remove it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// describe says what fi is, for error messages.
func describe(path string, fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeSymlink != 0:
		if target, err := os.Readlink(path); err == nil {
			return fmt.Sprintf("a symbolic link to %q", target)
		}
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	default:
		return fmt.Sprintf("a file of type %v", t)
	}
}

// unixListener removes its socket file on Close, like net.UnixListener does,
// but only while the path still names the socket it bound.
type unixListener struct {
	*net.UnixListener
	path   string
	fi     fs.FileInfo
	unlink sync.Once
}

// Close stops listening and removes the socket file if it is still ours.
func (l *unixListener) Close() error {
	var rmErr error
	l.unlink.Do(func() {
		now, err := os.Lstat(l.path)
		if err != nil || !os.SameFile(l.fi, now) {
			return
		}
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			rmErr = fmt.Errorf("remove socket: %w", err)
		}
	})
	if err := l.UnixListener.Close(); err != nil {
		return err
	}
	return rmErr
}
