package cmdline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/recovery"
)

// fileLogger is Settings.Logger with its output sent to a file the test can read.
func fileLogger(t *testing.T, level string) (*zap.Logger, func() []map[string]any) {
	t.Helper()
	cfg, err := (&Settings{LogLevel: level}).loggerConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "log.json")
	cfg.OutputPaths = []string{path}
	cfg.ErrorOutputPaths = []string{path}
	logger, err := cfg.Build(loggerOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	read := func() []map[string]any {
		t.Helper()
		_ = logger.Sync()
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var entries []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e map[string]any
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
			}
			entries = append(entries, e)
		}
		return entries
	}
	return logger, read
}

// panickingHandler is named so that the panic report's stack can be checked for it.
func panickingHandler(context.Context, any) (any, error) { panic("backend bug") }

// TestLoggerStackTraces: a stack trace is what an operator needs for a panic and noise for a
// failed call, which the middleware logs at warn or error for every non-OK answer.
func TestLoggerStackTraces(t *testing.T) {
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	fail := func(c codes.Code) grpc.UnaryHandler {
		return func(context.Context, any) (any, error) { return nil, status.Error(c, "no") }
	}
	tests := []struct {
		name string
		log  func(l *zap.Logger)
		// wantLevel is the level of the one entry written.
		wantLevel string
		// wantTrace says whether zap's own "stacktrace" key may appear.
		wantTrace bool
		// wantStack is a substring the recovery report's "stack" field must hold.
		wantStack string
	}{
		{
			name: "non-OK call logged at warn has no trace",
			log: func(l *zap.Logger) {
				_, _ = logging.UnaryServerInterceptor(l)(context.Background(), nil, info, fail(codes.NotFound))
			},
			wantLevel: "warn",
		},
		{
			name: "failed call logged at error has no trace",
			log: func(l *zap.Logger) {
				_, _ = logging.UnaryServerInterceptor(l)(context.Background(), nil, info, fail(codes.Internal))
			},
			wantLevel: "error",
		},
		{
			name:      "direct error entry has no trace",
			log:       func(l *zap.Logger) { l.Error("storage unreachable") },
			wantLevel: "error",
		},
		{
			name: "panic report keeps the panicking goroutine's stack",
			log: func(l *zap.Logger) {
				_, _ = recovery.UnaryServerInterceptor(recovery.WithLogger(l))(context.Background(), nil, info, panickingHandler)
			},
			wantLevel: "error",
			wantStack: "cmdline.panickingHandler",
		},
		{
			// Production loggers do not panic on DPanic; the entry still gets a trace.
			name:      "DPanic gets a trace",
			log:       func(l *zap.Logger) { l.DPanic("invariant broken") },
			wantLevel: "dpanic",
			wantTrace: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, read := fileLogger(t, "info")
			tt.log(logger)
			entries := read()
			if len(entries) != 1 {
				t.Fatalf("got %d log entries, want 1: %v", len(entries), entries)
			}
			e := entries[0]
			if e["level"] != tt.wantLevel {
				t.Errorf("level = %v, want %s", e["level"], tt.wantLevel)
			}
			if _, has := e["stacktrace"]; has != tt.wantTrace {
				t.Errorf("stacktrace present = %v, want %v; entry: %v", has, tt.wantTrace, e)
			}
			if tt.wantStack != "" {
				stack, _ := e["stack"].(string)
				if !strings.Contains(stack, tt.wantStack) {
					t.Errorf("panic report stack does not name %s:\n%s", tt.wantStack, stack)
				}
			}
		})
	}
}

// TestLoggerBuildsWithoutTraceOption guards the public path: Logger must use the same options
// the test above checks, so a non-OK entry from it carries no trace either.
func TestLoggerBuildsWithoutTraceOption(t *testing.T) {
	logger, err := (&Settings{LogLevel: "info"}).Logger()
	if err != nil {
		t.Fatal(err)
	}
	if ce := logger.Check(zap.ErrorLevel, "x"); ce == nil {
		t.Fatal("error level disabled at info")
	} else if ce.Stack != "" {
		t.Fatalf("an error entry from Settings.Logger carries a stack trace:\n%s", ce.Stack)
	}
}
