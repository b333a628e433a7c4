// Package serve serves a plugin on a fresh unix socket for one test and keeps its logs.
//
// It is the body of drivertest.NewServer, here so that the suites' own tests can serve a plugin
// without importing drivertest.
package serve

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver/plugin"
)

// Server is a plugin served on a fresh unix socket: New starts it and the test's cleanup closes
// it.
type Server struct {
	// Plugin is the plugin built from the Config.
	Plugin *plugin.Plugin
	// Socket is the path of the unix socket, short enough for a socket address (108 bytes).
	Socket string
	// Endpoint is Socket in CSI_ENDPOINT (and COSI_ENDPOINT) form: "unix://" + Socket.
	Endpoint string
	// Conn is a client connection to the plugin, for the client of any service it serves
	// (csi.NewControllerClient(s.Conn), ...). Close closes it.
	Conn *grpc.ClientConn

	t     testing.TB
	logs  *logBuffer
	stop  context.CancelFunc
	ended chan error
	once  sync.Once
}

// New builds the plugin of cfg with plugin.New and serves it on a fresh unix socket until the
// test ends or Close is called. Everything the plugin logs is captured at debug level, beside
// cfg.Logger when that is set, for Logs: the requests and answers, redacted, which is what a
// secret canary searches. The socket is in the test's temporary directory, or in a fresh one
// under the system's when that path would be too long for a unix socket. A Config that
// plugin.New refuses fails the test.
func New(t testing.TB, cfg plugin.Config) *Server {
	t.Helper()
	s := &Server{t: t, logs: &logBuffer{}, ended: make(chan error, 1)}
	capture := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), s.logs, zapcore.DebugLevel)
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, capture) }))
	} else {
		cfg.Logger = zap.New(capture)
	}
	p, err := plugin.New(cfg)
	if err != nil {
		t.Fatalf("drivertest: plugin.New: %v", err)
	}
	s.Plugin = p
	// A COSI-only plugin's socket is named as the COSI sidecar's is; both names end in .sock, as
	// COSI_ENDPOINT requires.
	name := "csi.sock"
	if cfg.COSI != nil && cfg.Controller == nil && cfg.Node == nil && cfg.GroupController == nil &&
		cfg.SnapshotMetadata == nil && cfg.VolumeGroups == nil {
		name = "cosi.sock"
	}
	s.Socket = socketPath(t, name)
	s.Endpoint = "unix://" + s.Socket
	lis, err := net.Listen("unix", s.Socket)
	if err != nil {
		t.Fatalf("drivertest: listen on %s: %v", s.Socket, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go func() { s.ended <- p.Serve(ctx, lis) }()
	s.Conn, err = grpc.NewClient(s.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Close()
		t.Fatalf("drivertest: connect to %s: %v", s.Endpoint, err)
	}
	t.Cleanup(s.Close)
	return s
}

// Logs returns everything the plugin has logged so far, one JSON object per line, at debug level.
func (s *Server) Logs() string { return s.logs.String() }

// Close closes Conn, stops serving, lets the calls in flight finish (up to the Config's
// ShutdownTimeout) and removes the socket. The test's cleanup calls it; calling it again does
// nothing. It fails the test when Serve ended with an error.
func (s *Server) Close() {
	s.once.Do(func() {
		if s.Conn != nil {
			s.Conn.Close()
		}
		s.stop()
		if err := <-s.ended; err != nil {
			s.t.Errorf("drivertest: Serve: %v", err)
		}
	})
}

// socketPath returns a path for a socket named name, short enough for sun_path (108 bytes):
// in the test's temporary directory when that is short, else in a fresh directory under the
// system's.
func socketPath(t testing.TB, name string) string {
	p := filepath.Join(t.TempDir(), name)
	if len(p) < 100 {
		return p
	}
	dir, err := os.MkdirTemp("", "drivertest")
	if err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, name)
}

// logBuffer collects log output; zap writes to it from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; zap calls it from many goroutines.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Sync does nothing: the buffer is in memory.
func (b *logBuffer) Sync() error { return nil }

// String returns everything written so far.
func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
