package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
)

// BenchmarkGocsiControllerPublish runs, in one process and interleaved, a bare grpc.Server,
// csikit (zap at info to a file), gocsi's interceptor chain around the bare handler (logrus at
// info to a file) and csikit at debug. gocsi's logging interceptor logs the request and response
// payloads, so csikit-debug, which logs the redacted payloads too, is the like-for-like row for
// logging; csikit at info is what csikit runs in production.
func BenchmarkGocsiControllerPublish(b *testing.B) {
	dir := b.TempDir()
	interleave(b, []target{
		startBare(b, dir),
		startCsikit(b, dir, "csikit", zapcore.InfoLevel),
		startGocsi(b, dir),
		startCsikit(b, dir, "csikit-debug", zapcore.DebugLevel),
	})
}

// TestServersAnswer keeps the benchmarks honest: every server under test answers the benchmark
// request correctly, and no server's log holds a secret value.
func TestServersAnswer(t *testing.T) {
	dir := t.TempDir()
	targets := []target{
		startBare(t, dir),
		startCsikit(t, dir, "csikit", zapcore.InfoLevel),
		startGocsi(t, dir),
		startCsikit(t, dir, "csikit-debug", zapcore.DebugLevel),
	}
	req := publishRequest()
	for _, tg := range targets {
		checkPublish(t, tg, req)
	}
	// The loggers write synchronously, so the lines are in the files once the calls returned.
	for name, want := range map[string]string{
		"csikit.log":       `"msg":"call"`,
		"csikit-debug.log": req.GetVolumeId(),
		"gocsi.log":        req.GetVolumeId(),
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		if !strings.Contains(log, want) {
			t.Errorf("%s lacks %q:\n%s", name, want, log)
		}
		for _, secret := range []string{secretUser, secretPass} {
			if strings.Contains(log, secret) {
				t.Errorf("%s holds a secret value:\n%s", name, log)
			}
		}
	}
}

// TestInProcessCallsAnswer checks every in-process path BenchmarkInProcessChain measures.
func TestInProcessCallsAnswer(t *testing.T) {
	wire := mustMarshal(t, publishRequest())
	for name, c := range inProcessCalls(t) {
		resp, err := c.call(t.Context(), wire)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := publishContextOf(resp)["devicePath"]; got != "/dev/x" {
			t.Errorf("%s: response %v", name, resp)
		}
	}
}
