package endpoint

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/csikit/csikit/internal/testenv"
)

// staleSocket leaves a socket file at path that nothing listens on, as a
// crashed plugin does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("unix", path); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("stale socket %s: dial error = %v, want ECONNREFUSED", path, err)
	}
}

// liveSocket serves path until the test ends.
func liveSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func wantContent(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s was disturbed: %v", path, err)
	}
	if string(b) != content {
		t.Fatalf("%s = %q, want %q", path, b, content)
	}
}

func wantType(t *testing.T, path string, typ fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if fi.Mode().Type() != typ {
		t.Fatalf("%s has type %v, want %v", path, fi.Mode().Type(), typ)
	}
}

func wantPerm(t *testing.T, path string, perm fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got := fi.Mode().Perm(); got != perm {
		t.Fatalf("%s has mode %v, want %v", path, got, perm)
	}
}

func wantDial(t *testing.T, path string) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	c.Close()
}

func TestListenUnix(t *testing.T) {
	tests := []struct {
		name string
		// sock is the socket path relative to the test's directory.
		sock    string
		setup   func(t *testing.T, dir, path string)
		opts    ListenOptions
		wantErr string
		// check runs after Listen, whether it failed or not; on success the
		// listener is still open.
		check func(t *testing.T, dir, path string)
	}{{
		name: "free path",
		sock: "csi.sock",
		check: func(t *testing.T, dir, path string) {
			wantType(t, path, fs.ModeSocket)
			wantPerm(t, path, DefaultMode)
			wantDial(t, path)
		},
	}, {
		name: "parent created",
		sock: "plugins/example.com/csi.sock",
		check: func(t *testing.T, dir, path string) {
			fi, err := os.Stat(filepath.Dir(path))
			if err != nil {
				t.Fatal(err)
			}
			if !fi.IsDir() || fi.Mode().Perm()&^socketDirMode != 0 {
				t.Fatalf("parent directory mode %v, want a directory within %v", fi.Mode(), socketDirMode)
			}
			wantDial(t, path)
		},
	}, {
		name:  "stale socket replaced",
		sock:  "csi.sock",
		setup: func(t *testing.T, dir, path string) { staleSocket(t, path) },
		check: func(t *testing.T, dir, path string) { wantDial(t, path) },
	}, {
		name:    "live socket refused",
		sock:    "csi.sock",
		setup:   func(t *testing.T, dir, path string) { liveSocket(t, path) },
		wantErr: "another process is serving on",
		check:   func(t *testing.T, dir, path string) { wantDial(t, path) },
	}, {
		name:    "regular file refused and untouched",
		sock:    "csi.sock",
		setup:   func(t *testing.T, dir, path string) { writeFile(t, path, "precious") },
		wantErr: "is a regular file, not a socket; refusing to remove it",
		check:   func(t *testing.T, dir, path string) { wantContent(t, path, "precious") },
	}, {
		name: "directory refused and untouched",
		sock: "csi.sock",
		setup: func(t *testing.T, dir, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(path, "inside"), "precious")
		},
		wantErr: "is a directory, not a socket",
		check: func(t *testing.T, dir, path string) {
			wantContent(t, filepath.Join(path, "inside"), "precious")
		},
	}, {
		name: "symlink to a file refused and untouched",
		sock: "csi.sock",
		setup: func(t *testing.T, dir, path string) {
			writeFile(t, filepath.Join(dir, "target"), "precious")
			if err := os.Symlink("target", path); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: `is a symbolic link to "target", not a socket`,
		check: func(t *testing.T, dir, path string) {
			wantType(t, path, fs.ModeSymlink)
			wantContent(t, path, "precious")
		},
	}, {
		name: "symlink to a stale socket refused and untouched",
		sock: "csi.sock",
		setup: func(t *testing.T, dir, path string) {
			staleSocket(t, filepath.Join(dir, "real.sock"))
			if err := os.Symlink("real.sock", path); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: "is a symbolic link",
		check: func(t *testing.T, dir, path string) {
			wantType(t, path, fs.ModeSymlink)
			wantType(t, filepath.Join(dir, "real.sock"), fs.ModeSocket)
		},
	}, {
		name: "dangling symlink refused and untouched",
		sock: "csi.sock",
		setup: func(t *testing.T, dir, path string) {
			if err := os.Symlink("/nonexistent/target", path); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: "is a symbolic link",
		check:   func(t *testing.T, dir, path string) { wantType(t, path, fs.ModeSymlink) },
	}, {
		name: "named pipe refused and untouched",
		sock: "csi.sock",
		setup: func(t *testing.T, dir, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: "is a named pipe, not a socket",
		check:   func(t *testing.T, dir, path string) { wantType(t, path, fs.ModeNamedPipe) },
	}, {
		name: "parent is a file",
		sock: "file/csi.sock",
		setup: func(t *testing.T, dir, path string) {
			writeFile(t, filepath.Dir(path), "precious")
		},
		wantErr: "create socket directory",
		check: func(t *testing.T, dir, path string) {
			wantContent(t, filepath.Dir(path), "precious")
		},
	}, {
		name:  "mode applied",
		sock:  "csi.sock",
		opts:  ListenOptions{Mode: 0o600},
		check: func(t *testing.T, dir, path string) { wantPerm(t, path, 0o600) },
	}, {
		name:  "wide mode applied despite umask",
		sock:  "csi.sock",
		opts:  ListenOptions{Mode: 0o777},
		check: func(t *testing.T, dir, path string) { wantPerm(t, path, 0o777) },
	}, {
		name:    "mode with non-permission bits refused",
		sock:    "csi.sock",
		opts:    ListenOptions{Mode: os.ModeSetuid | 0o660},
		wantErr: "has bits other than permissions",
		check: func(t *testing.T, dir, path string) {
			if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("socket file left behind: %v", err)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.sock)
			if tt.setup != nil {
				tt.setup(t, dir, path)
			}
			l, err := Listen(context.Background(), Endpoint{Network: NetworkUnix, Address: path}, tt.opts)
			if tt.wantErr != "" {
				if err == nil {
					l.Close()
					t.Fatalf("Listen succeeded, want error containing %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Listen error = %q, want it to contain %q", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("Listen: %v", err)
				}
				defer l.Close()
			}
			if tt.check != nil {
				tt.check(t, dir, path)
			}
		})
	}
}

func TestListenErrors(t *testing.T) {
	tests := []struct {
		name    string
		ctx     func() context.Context
		e       Endpoint
		wantErr string
	}{
		{name: "zero endpoint", e: Endpoint{}, wantErr: "unknown network"},
		{name: "relative unix path", e: Endpoint{NetworkUnix, "csi.sock"}, wantErr: "not an absolute, clean path"},
		{name: "unclean unix path", e: Endpoint{NetworkUnix, "/tmp/../csi.sock"}, wantErr: "not an absolute, clean path"},
		{name: "udp", e: Endpoint{"udp", "127.0.0.1:1"}, wantErr: "unknown network"},
		{
			name: "cancelled context",
			ctx: func() context.Context {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx
			},
			e:       Endpoint{NetworkUnix, filepath.Join(t.TempDir(), "csi.sock")},
			wantErr: "context canceled",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.ctx != nil {
				ctx = tt.ctx()
			}
			l, err := Listen(ctx, tt.e, ListenOptions{})
			if err == nil {
				l.Close()
				t.Fatalf("Listen(%+v) succeeded, want error containing %q", tt.e, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Listen(%+v) error = %q, want it to contain %q", tt.e, err, tt.wantErr)
			}
		})
	}
}

func TestListenChown(t *testing.T) {
	testenv.Root(t, "chown to another user")
	tests := []struct {
		name             string
		owner            *Owner
		wantUID, wantGID uint32
	}{
		{name: "unchanged", owner: nil, wantUID: 0, wantGID: 0},
		{name: "both", owner: &Owner{UID: 4242, GID: 4343}, wantUID: 4242, wantGID: 4343},
		{name: "group only", owner: &Owner{UID: -1, GID: 4343}, wantUID: 0, wantGID: 4343},
		{name: "user only", owner: &Owner{UID: 4242, GID: -1}, wantUID: 4242, wantGID: 0},
		{name: "root", owner: &Owner{UID: 0, GID: 0}, wantUID: 0, wantGID: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// The test directory's group is inherited when it is setgid;
			// make the expected "unchanged" group the directory's.
			dfi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			dirGID := dfi.Sys().(*syscall.Stat_t).Gid
			path := filepath.Join(dir, "csi.sock")
			l, err := Listen(context.Background(), Endpoint{NetworkUnix, path}, ListenOptions{Owner: tt.owner})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			wantGID := tt.wantGID
			if wantGID == 0 && (tt.owner == nil || tt.owner.GID == -1) {
				wantGID = dirGID
			}
			if st.Uid != tt.wantUID || st.Gid != wantGID {
				t.Fatalf("socket owned by %d:%d, want %d:%d", st.Uid, st.Gid, tt.wantUID, wantGID)
			}
			wantPerm(t, path, DefaultMode)
		})
	}
}

func TestListenCloseRemovesSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "csi.sock")
	l, err := Listen(context.Background(), Endpoint{NetworkUnix, path}, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantType(t, path, fs.ModeSocket)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket file still there after Close: %v", err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("second Close succeeded, want the net package's closed-listener error")
	}

	// The path is free again: a restarted plugin listens without fuss.
	l, err = Listen(context.Background(), Endpoint{NetworkUnix, path}, ListenOptions{})
	if err != nil {
		t.Fatalf("Listen after Close: %v", err)
	}
	l.Close()
}

func TestListenCloseSparesReplacedSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "csi.sock")
	l, err := Listen(context.Background(), Endpoint{NetworkUnix, path}, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Someone removes our socket and another plugin binds the same path.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	liveSocket(t, path)
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantDial(t, path)
}

func TestListenTCP(t *testing.T) {
	e, err := Parse("tcp://127.0.0.1:0", ParseOptions{AllowTCP: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := Listen(context.Background(), e, ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Addr().Network() != "tcp" {
		t.Fatalf("listening on %s, want tcp", l.Addr().Network())
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
