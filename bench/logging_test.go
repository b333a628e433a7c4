package bench

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/secrets"
)

// sink keeps results alive so the compiler cannot drop the work.
var sink string

// BenchmarkLogCreateVolume logs one CreateVolumeRequest with secrets at debug level, redacted.
//
//   - csikit: logger.Debug("request", secrets.Field("request", req)) through a zap JSON core.
//   - protosanitizer-zap: the same zap logger with zap.Stringer over protosanitizer.StripSecrets.
//   - protosanitizer-string: protosanitizer.StripSecrets(req).String() alone.
//   - protosanitizer-klog: the line the kubernetes-csi sidecars build for klog,
//     fmt.Sprintf("GRPC request: %s", protosanitizer.StripSecrets(req)).
//   - csikit-string: secrets.String(req), the counterpart of protosanitizer-string.
func BenchmarkLogCreateVolume(b *testing.B) {
	req := createVolumeRequest()
	logger := zapJSON(io.Discard, zapcore.DebugLevel)
	b.Run("csikit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			logger.Debug("request", secrets.Field("request", req))
		}
	})
	b.Run("protosanitizer-zap", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			logger.Debug("request", zap.Stringer("request", protosanitizer.StripSecrets(req)))
		}
	})
	b.Run("protosanitizer-string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = protosanitizer.StripSecrets(req).String()
		}
	})
	b.Run("protosanitizer-klog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = fmt.Sprintf("GRPC request: %s", protosanitizer.StripSecrets(req))
		}
	})
	b.Run("csikit-string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sink = secrets.String(req)
		}
	})
}

// BenchmarkDebugOff is csikit's payload logging with the logger at info: guarded by
// logger.Check as middleware/logging does, it must cost nothing and allocate nothing.
func BenchmarkDebugOff(b *testing.B) {
	req := createVolumeRequest()
	logger := zapJSON(io.Discard, zapcore.InfoLevel)
	b.ReportAllocs()
	for b.Loop() {
		if ce := logger.Check(zapcore.DebugLevel, "request"); ce != nil {
			ce.Write(secrets.Field("request", req))
		}
	}
}

func TestDebugOffDoesNotAllocate(t *testing.T) {
	req := createVolumeRequest()
	logger := zapJSON(io.Discard, zapcore.InfoLevel)
	allocs := testing.AllocsPerRun(100, func() {
		if ce := logger.Check(zapcore.DebugLevel, "request"); ce != nil {
			ce.Write(secrets.Field("request", req))
		}
	})
	if allocs != 0 {
		t.Errorf("debug logging with debug off: %v allocations per call, want 0", allocs)
	}
}

// TestRedactedOutputsHaveNoSecrets checks that every compared way of logging the request keeps
// the secret values out while still naming the request (so a benchmark cannot win by logging
// nothing).
func TestRedactedOutputsHaveNoSecrets(t *testing.T) {
	req := createVolumeRequest()
	var buf bytes.Buffer
	logger := zapJSON(&buf, zapcore.DebugLevel)

	logger.Debug("request", secrets.Field("request", req))
	ours := buf.String()
	buf.Reset()
	logger.Debug("request", zap.Stringer("request", protosanitizer.StripSecrets(req)))
	theirsZap := buf.String()

	outputs := map[string]string{
		"csikit":                ours,
		"csikit-string":         secrets.String(req),
		"protosanitizer-zap":    theirsZap,
		"protosanitizer-string": protosanitizer.StripSecrets(req).String(),
		"protosanitizer-klog":   fmt.Sprintf("GRPC request: %s", protosanitizer.StripSecrets(req)),
	}
	for name, out := range outputs {
		for _, secret := range []string{secretUser, secretPass} {
			if strings.Contains(out, secret) {
				t.Errorf("%s: output contains a secret value: %s", name, out)
			}
		}
		for _, want := range []string{req.GetName(), "snap-0123456789", "zone-b", "nouuid"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q: %s", name, want, out)
			}
		}
		// csikit keeps secret keys (an operator sees which secret was sent); protosanitizer
		// replaces the whole map with "***stripped***".
		if strings.HasPrefix(name, "csikit") && !strings.Contains(out, "password") {
			t.Errorf("%s: output lacks the secret key %q: %s", name, "password", out)
		}
	}
	// The request is unchanged: redaction must not write into the caller's message.
	if req.GetSecrets()["password"] != secretPass {
		t.Error("logging changed the request's secrets")
	}
}

// BenchmarkLogCreateVolumeInterleaved is BenchmarkLogCreateVolume with the five ways run in
// turn inside one benchmark (see interleaveFuncs), so that load from other processes hits them
// alike. It reports each way's mean time per call and the ratios of protosanitizer's to
// csikit's.
func BenchmarkLogCreateVolumeInterleaved(b *testing.B) {
	req := createVolumeRequest()
	logger := zapJSON(io.Discard, zapcore.DebugLevel)
	per := interleaveFuncs(b, []namedFunc{
		{"csikit", func() { logger.Debug("request", secrets.Field("request", req)) }},
		{"protosanitizer-zap", func() {
			logger.Debug("request", zap.Stringer("request", protosanitizer.StripSecrets(req)))
		}},
		{"protosanitizer-string", func() { sink = protosanitizer.StripSecrets(req).String() }},
		{"protosanitizer-klog", func() { sink = fmt.Sprintf("GRPC request: %s", protosanitizer.StripSecrets(req)) }},
		{"csikit-string", func() { sink = secrets.String(req) }},
	})
	b.ReportMetric(per[1]/per[0], "ratio-zap")
	b.ReportMetric(per[2]/per[0], "ratio-string-vs-log")
	b.ReportMetric(per[2]/per[4], "ratio-string-vs-string")
	b.ReportMetric(per[3]/per[0], "ratio-klog")
}
