package cmdline

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"k8s.io/klog/v2"
	"k8s.io/mount-utils"

	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// captureStderr runs f with os.Stderr pointing at a pipe and returns what was written to it.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	saved := os.Stderr
	os.Stderr = w
	func() {
		defer func() { os.Stderr = saved }()
		f()
		klog.Flush()
	}()
	w.Close()
	out := <-read
	r.Close()
	return out
}

// TestApplyRoutesKlogIntoThePluginLogger: k8s.io/mount-utils logs through klog. After Apply, its
// lines are JSON lines of the plugin's logger, with that logger's fields, named "klog", at the
// level klog gave them; nothing reaches stderr. The flush Apply returns sends klog back.
func TestApplyRoutesKlogIntoThePluginLogger(t *testing.T) {
	base, read := fileLogger(t, "info")
	logger := base.With(zap.String("plugin", "mem.csikit.dev"))
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	s := Register(fs, Defaults{Endpoint: "unix:///tmp/csikit-klog-test/csi.sock"})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	mem := memdriver.New(memdriver.Options{})
	cfg := plugin.Config{Name: "mem.csikit.dev", VendorVersion: "1", Controller: mem, Node: mem, Logger: logger}
	missing := filepath.Join(t.TempDir(), "no-such-target")
	var flush func()
	stderr := captureStderr(t, func() {
		var err error
		if flush, err = s.Apply(context.Background(), &cfg); err != nil {
			t.Fatal(err)
		}
		// A real mount-utils call that logs a warning, and klog's own error call.
		if err := mount.CleanupMountPoint(missing, mount.NewWithoutSystemd(""), false); err != nil {
			t.Fatal(err)
		}
		klog.ErrorS(errors.New("disk on fire"), "could not format", "device", "/dev/loop9")
	})
	defer flush()
	if stderr != "" {
		t.Errorf("klog wrote to stderr:\n%s", stderr)
	}
	tests := []struct {
		name   string
		msg    string
		level  string
		caller string // the file that called klog
		more   map[string]any
	}{
		{"mount-utils' warning", "Mount cleanup skipped because path does not exist: " + missing, "info", "mount_helper_common.go", nil},
		{"klog's error", "could not format", "error", "klog_test.go", map[string]any{"error": "disk on fire", "device": "/dev/loop9"}},
	}
	entries := read()
	for _, tt := range tests {
		var found map[string]any
		for _, e := range entries {
			if e["msg"] == tt.msg {
				found = e
			}
		}
		if found == nil {
			t.Errorf("%s: no log line with msg %q in %v", tt.name, tt.msg, entries)
			continue
		}
		want := map[string]any{"level": tt.level, "logger": "klog", "plugin": "mem.csikit.dev"}
		for k, v := range tt.more {
			want[k] = v
		}
		for k, v := range want {
			if found[k] != v {
				t.Errorf("%s: field %q = %v, want %v (line %v)", tt.name, k, found[k], v, found)
			}
		}
		if c, _ := found["caller"].(string); !strings.Contains(c, tt.caller+":") {
			t.Errorf("%s: caller %q; want the code that called klog, %s", tt.name, c, tt.caller)
		}
	}
	flush()
	after := captureStderr(t, func() { klog.Info("after the flush") })
	if !strings.Contains(after, "after the flush") {
		t.Errorf("after the flush klog still does not write to stderr: %q", after)
	}
}
