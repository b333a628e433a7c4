package csikit

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// examplesOnly are the module path prefixes only the examples and csictl use: the S3 clients and
// server, their storage, Ceph's bindings, and csictl's command-line library. A driver that depends on csikit must
// never find them in its module graph.
var examplesOnly = []string{
	"github.com/aws/",
	"github.com/minio/",
	"github.com/johannesboyne/gofakes3",
	"gopkg.in/mgo.v2",
	"go.etcd.io/bbolt",
	"github.com/spf13/cobra",
	"github.com/ceph/go-ceph",
}

// TestSDKRequiresNothingOnlyTheExamplesUse fails for every requirement of the SDK's go.mod, direct
// or indirect, on a module only the examples or csictl need: those are modules of their own
// (go.work), so that the SDK's go.mod lists only what the SDK's packages import.
func TestSDKRequiresNothingOnlyTheExamplesUse(t *testing.T) {
	f, err := os.Open("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inRequire := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var path string
		switch {
		case line == "require (":
			inRequire = true
		case inRequire && line == ")":
			inRequire = false
		case inRequire && line != "" && !strings.HasPrefix(line, "//"):
			path = strings.Fields(line)[0]
		case strings.HasPrefix(line, "require "):
			path = strings.Fields(line)[1]
		}
		for _, prefix := range examplesOnly {
			if path != "" && strings.HasPrefix(path, prefix) {
				t.Errorf("go.mod requires %s, which only the examples or csictl use; require it in their go.mod", path)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestServerLinksNoTracingSDK fails if the server (driver/plugin), and so every driver that calls
// plugin.Run, links the OpenTelemetry SDK or an exporter. Tracing needs only the OpenTelemetry API
// there; the SDK and the exporters come with a TracerProvider the driver asks for
// (cmdline.Settings.Tracing, middleware/tracing/otelenv).
func TestServerLinksNoTracingSDK(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", "./driver/plugin").Output()
	if err != nil {
		t.Fatalf("go list -deps ./driver/plugin: %v", err)
	}
	linked := strings.Fields(string(out))
	if len(linked) < 100 {
		t.Fatalf("go list -deps ./driver/plugin printed %d packages; want the whole dependency list", len(linked))
	}
	for _, pkg := range linked {
		for _, prefix := range []string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters"} {
			if pkg == prefix || strings.HasPrefix(pkg, prefix+"/") {
				t.Errorf("driver/plugin links %s; only a driver that asks for tracing may (cmdline.Settings.Tracing)", pkg)
			}
		}
	}
}
