package cmdline

import (
	"fmt"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// RouteKlog sends what klog logs to l, as lines of l named "klog" (field "logger"), with l's
// fields, instead of klog's own text lines on stderr beside the plugin's JSON. k8s.io/mount-utils,
// which driver/nodemount runs on, logs through klog, and so does any Kubernetes library a driver
// links. klog's Info and Warning lines are logged at info, its Error lines at error; klog's own
// verbosity (its -v flag, 0 unless the driver registers and sets it) still decides which V(n)
// lines are written, and a V(n) line with n > 0 is logged at debug.
//
// klog has one logger per process, so the last call wins. restore sends klog back to stderr.
// Apply calls RouteKlog with the plugin's logger, and its flush calls restore; a driver that does
// not use Apply calls it once its logger is built.
func RouteKlog(l *zap.Logger) (restore func()) {
	klog.SetLogger(logr.New(&klogSink{log: l.Named("klog")}))
	return klog.ClearLogger
}

// klogSink is a logr.LogSink over zap, the one klog needs: go-logr/zapr would be a module more in
// the SDK's go.mod for these few lines.
type klogSink struct {
	log *zap.Logger
}

var (
	_ logr.LogSink          = (*klogSink)(nil)
	_ logr.CallDepthLogSink = (*klogSink)(nil)
)

// Init makes the caller field name the code that called klog, not klog or this sink: zap counts
// from this sink's method (the caller of Check), logr says how many of its frames lie above it
// (CallDepth), and klog adds its own with WithCallDepth.
func (s *klogSink) Init(info logr.RuntimeInfo) {
	s.log = s.log.WithOptions(zap.AddCallerSkip(info.CallDepth + 1))
}

// level is the zap level of a logr verbosity: 0 is info, anything above is debug.
func level(v int) zapcore.Level {
	if v > 0 {
		return zapcore.DebugLevel
	}
	return zapcore.InfoLevel
}

func (s *klogSink) Enabled(v int) bool { return s.log.Core().Enabled(level(v)) }

func (s *klogSink) Info(v int, msg string, kv ...any) {
	if ce := s.log.Check(level(v), msg); ce != nil {
		ce.Write(fields(kv)...)
	}
}

func (s *klogSink) Error(err error, msg string, kv ...any) {
	if ce := s.log.Check(zapcore.ErrorLevel, msg); ce != nil {
		f := fields(kv)
		if err != nil {
			f = append(f, zap.Error(err))
		}
		ce.Write(f...)
	}
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.log.With(fields(kv)...)}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	return &klogSink{log: s.log.Named(name)}
}

func (s *klogSink) WithCallDepth(depth int) logr.LogSink {
	return &klogSink{log: s.log.WithOptions(zap.AddCallerSkip(depth))}
}

// fields turns logr's alternating keys and values into zap fields. A key that is not a string
// is printed; a last key without a value gets none.
func fields(kv []any) []zap.Field {
	out := make([]zap.Field, 0, (len(kv)+1)/2)
	for i := 0; i < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			key = fmt.Sprint(kv[i])
		}
		if i+1 == len(kv) {
			out = append(out, zap.String(key, "(no value)"))
			break
		}
		out = append(out, zap.Any(key, kv[i+1]))
	}
	return out
}
