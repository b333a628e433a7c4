package drivertest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/driver/plugin"
)

// serveCaptured builds the plugin of cfg with a debug-level logger captured for the canaries
// (beside cfg.Logger when that is set), serves it on a fresh unix socket named name (CSI and
// COSI want different names: COSI_ENDPOINT must end in .sock) until the test ends, and returns
// the socket path and the captured log.
func serveCaptured(t *testing.T, cfg plugin.Config, name string) (sock string, logs *logBuffer) {
	t.Helper()
	capture := &logBuffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), capture, zapcore.DebugLevel)
	if cfg.Logger != nil {
		cfg.Logger = cfg.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, core) }))
	} else {
		cfg.Logger = zap.New(core)
	}
	d, err := plugin.New(cfg)
	if err != nil {
		t.Fatalf("drivertest: plugin.New: %v", err)
	}
	sock = socketPath(t, name)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("drivertest: listen on %s: %v", sock, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("drivertest: Serve: %v", err)
		}
	})
	return sock, capture
}

// socketPath returns a path for a socket named name, short enough for sun_path (108 bytes):
// in the test's temporary directory when that is short, else in a fresh directory under the
// system's.
func socketPath(t *testing.T, name string) string {
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
