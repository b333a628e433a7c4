package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// benchEnv is the driver served in-process (controller mode) and a client over its socket.
type benchEnv struct {
	ctrl     csi.ControllerClient
	plugin   *hostpath.Plugin
	stateDir string
	stop     func()
}

// serveInProcessPlugin opens the driver on dir/state (made if missing, reused if there: a
// restart), logging at info level to a file as an operator would, and serves it on a unix socket
// in dir.
func serveInProcessPlugin(tb testing.TB, dir string) *benchEnv {
	tb.Helper()
	return serveWith(tb, dir, hostpath.Config{})
}

// serveWith is serveInProcessPlugin with extra configuration (StateDir, NodeID, CapacityBytes and
// Logger are set here).
func serveWith(tb testing.TB, dir string, cfg hostpath.Config) *benchEnv {
	tb.Helper()
	logFile, err := os.OpenFile(filepath.Join(dir, "driver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(logFile), zapcore.InfoLevel))
	cfg.StateDir, cfg.NodeID, cfg.CapacityBytes, cfg.Logger = filepath.Join(dir, "state"), "scale-node", 1<<50, logger
	p, err := hostpath.Open(cfg, hostpath.ModeController)
	if err != nil {
		tb.Fatal(err)
	}
	dcfg := p.Config()
	dcfg.Logger = logger
	d, err := plugin.New(dcfg)
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "csi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	return &benchEnv{ctrl: csi.NewControllerClient(conn), plugin: p, stateDir: cfg.StateDir, stop: func() {
		conn.Close()
		cancel()
		<-done
		p.Close()
		logFile.Close()
	}}
}
