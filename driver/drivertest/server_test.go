package drivertest_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// lockedBuffer is a log sink safe for the concurrent writes zap may make.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Sync() error { return nil }

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNewServer: the server answers on its connection, captures the plugin's log at debug level
// (the requests, with their secrets redacted) beside the Config's own logger, and Close stops it
// and removes the socket, once however often it is called.
func TestNewServer(t *testing.T) {
	// The plugin logs from several goroutines (calls, the readiness watch), so the sink locks.
	var own lockedBuffer
	cfg := plugin.Config{Name: "mem.csikit.dev", VendorVersion: "1.0.0", Controller: memdriver.New(memdriver.Options{}),
		Logger: zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), &own, zapcore.InfoLevel))}
	srv := drivertest.NewServer(t, cfg)
	if !strings.HasPrefix(srv.Endpoint, "unix:///") || srv.Endpoint != "unix://"+srv.Socket || srv.Plugin == nil {
		t.Fatalf("endpoint %q, socket %q, plugin %v", srv.Endpoint, srv.Socket, srv.Plugin)
	}
	const secret = "s3cr3t-9c1e7d"
	_, err := csi.NewControllerClient(srv.Conn).CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "pvc-logged", Secrets: map[string]string{"password": secret},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		t.Fatalf("CreateVolume through the server: %v", err)
	}
	logs := srv.Logs()
	if !strings.Contains(logs, "pvc-logged") || !strings.Contains(logs, "password") {
		t.Errorf("the captured log lacks the request (debug level, keys kept):\n%s", logs)
	}
	if strings.Contains(logs, secret) {
		t.Errorf("the captured log holds a secret value:\n%s", logs)
	}
	if !strings.Contains(own.String(), "CreateVolume") {
		t.Errorf("the Config's own logger no longer gets the plugin's log: %q", own.String())
	}
	srv.Close()
	srv.Close()
	if _, err := os.Stat(srv.Socket); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket outlives Close: %v", err)
	}
}

// TestNewServerSocketFitsUnderALongTestName: a test whose temporary directory is too deep for a
// unix socket address (108 bytes: a long test name under a long TMPDIR, as on macOS) still gets a
// socket that works.
func TestNewServerSocketFitsUnderALongTestName(t *testing.T) {
	base, err := os.MkdirTemp("", "drivertest-tmpdir")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// A TMPDIR of 60 bytes: deep enough that a test's directory under it (the test name, up to
	// 64 bytes, and a suffix) is too long, shallow enough for a short directory beside it.
	const depth = 60
	if len(base) > depth-10 {
		t.Skipf("the system's temporary directory %s is too deep to build a %d-byte TMPDIR under it", base, depth)
	}
	tmp := filepath.Join(base, strings.Repeat("d", depth-len(base)-1))
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Run(strings.Repeat("a-test-name-that-goes-on-", 4), func(t *testing.T) {
		t.Setenv("TMPDIR", tmp)
		if p := filepath.Join(t.TempDir(), "csi.sock"); len(p) < 108 {
			t.Fatalf("the temporary directory is not deep enough (%d bytes) to test the fallback", len(p))
		}
		srv := drivertest.NewServer(t, plugin.Config{Name: "mem.csikit.dev", VendorVersion: "1.0.0", Controller: memdriver.New(memdriver.Options{})})
		if len(srv.Socket) >= 108 {
			t.Fatalf("socket path of %d bytes: %s", len(srv.Socket), srv.Socket)
		}
		if _, err := csi.NewIdentityClient(srv.Conn).Probe(context.Background(), &csi.ProbeRequest{}); err != nil {
			t.Fatalf("Probe: %v", err)
		}
	})
}
