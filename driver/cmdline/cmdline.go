// Package cmdline gives every plugin binary the same operator knobs: the endpoint from
// CSI_ENDPOINT and the log level from LOG_LEVEL, each overridable by a flag (--endpoint,
// --log-level), with defaults that let the binary start with no arguments at all; the
// diagnostics HTTP endpoint (--http-endpoint); and OpenTelemetry tracing from the standard OTEL_*
// variables (Tracing), which is also what links the OpenTelemetry SDK and its exporters into a
// binary: plugin.Run alone links neither.
package cmdline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/middleware/tracing/otelenv"
)

// Defaults are used when neither the flag nor the environment variable is set.
type Defaults struct {
	// Endpoint, e.g. "unix:///tmp/csi.sock".
	Endpoint string
	// EndpointEnv is the variable read for the endpoint; empty means CSI_ENDPOINT (COSI drivers
	// pass COSI_ENDPOINT).
	EndpointEnv string
	// LogLevel is debug, info, warn or error; empty means info.
	LogLevel string
}

// Settings holds the resolved values after flag parsing.
type Settings struct {
	// Endpoint is where the plugin listens.
	Endpoint string
	// LogLevel is the minimum level logged; debug shows redacted request and response payloads.
	LogLevel string
	// HTTPEndpoint is the TCP address of the diagnostics server (/metrics, /healthz, /readyz);
	// empty serves none. The flag has the Kubernetes CSI sidecars' name and meaning.
	HTTPEndpoint string
	// MetricsAddress is the sidecars' deprecated spelling of HTTPEndpoint, accepted so that
	// manifests written for them work; setting both is an error.
	MetricsAddress string
	// MetricsPath is the HTTP path metrics are served on.
	MetricsPath string
}

// Register adds --endpoint and --log-level to fs. Precedence: flag, then environment, then
// default. Read the returned Settings after fs.Parse.
func Register(fs *flag.FlagSet, d Defaults) *Settings {
	env := d.EndpointEnv
	if env == "" {
		env = "CSI_ENDPOINT"
	}
	level := d.LogLevel
	if level == "" {
		level = "info"
	}
	s := &Settings{}
	fs.StringVar(&s.Endpoint, "endpoint", envOr(env, d.Endpoint),
		fmt.Sprintf("where to listen: unix:///abs/path.sock (default from $%s)", env))
	fs.StringVar(&s.LogLevel, "log-level", envOr("LOG_LEVEL", level),
		"debug, info, warn or error; debug logs redacted payloads (default from $LOG_LEVEL)")
	fs.StringVar(&s.HTTPEndpoint, "http-endpoint", "",
		"TCP address (e.g. :8080) of the HTTP server for /metrics, /healthz and /readyz; empty serves none")
	fs.StringVar(&s.MetricsAddress, "metrics-address", "",
		"deprecated: use --http-endpoint")
	fs.StringVar(&s.MetricsPath, "metrics-path", "/metrics", "HTTP path of the Prometheus metrics")
	return s
}

// Diagnostics turns the HTTP flags into cfg's settings: with --http-endpoint (or the deprecated
// --metrics-address) set, a new Prometheus registry as cfg.Metrics, the address and the metrics
// path. Without either, cfg is left as it is and no metric is recorded.
func (s *Settings) Diagnostics(cfg *plugin.Config) error {
	addr := s.HTTPEndpoint
	if s.MetricsAddress != "" {
		if addr != "" {
			return errors.New("only one of --metrics-address and --http-endpoint can be set (--metrics-address is deprecated)")
		}
		addr = s.MetricsAddress
	}
	if addr == "" {
		return nil
	}
	cfg.Metrics = prometheus.NewRegistry()
	cfg.HTTPEndpoint = addr
	cfg.MetricsPath = s.MetricsPath
	return nil
}

// flushTimeout bounds how long the spans of the last calls may take to leave at exit.
const flushTimeout = 5 * time.Second

// Tracing sets cfg.TracerProvider from the standard OpenTelemetry environment variables
// (otelenv.NewProvider): OTEL_TRACES_EXPORTER=otlp (endpoint, protocol, headers and TLS from the
// OTEL_EXPORTER_OTLP_* variables) or console, batched as the OTEL_BSP_* variables say, sampled as
// OTEL_TRACES_SAMPLER says. With no exporter named, or OTEL_SDK_DISABLED=true, tracing stays off
// and cfg is left as it is. An unknown exporter or protocol is an error, so that a typo does not
// silently turn tracing off. A TracerProvider already in cfg is kept and the variables are not
// read: the driver chose its own.
//
// Call flush once the plugin has stopped (defer it after Run, which returns after the in-flight
// calls have drained): it sends the spans of the last calls, within five seconds, and logs a
// failure as a warning on cfg.Logger (set cfg.Logger first).
func (s *Settings) Tracing(ctx context.Context, cfg *plugin.Config) (flush func(), err error) {
	if cfg.TracerProvider != nil {
		return func() {}, nil
	}
	tp, shutdown, err := otelenv.NewProvider(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing from the OTEL_* variables: %w", err)
	}
	if _, off := tp.(tracenoop.TracerProvider); off {
		return func() {}, nil
	}
	cfg.TracerProvider = tp
	log := cfg.Logger
	return func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := shutdown(fctx); err != nil && log != nil {
			log.Warn("flushing traces", zap.Error(err))
		}
	}, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// Logger builds a JSON logger to stderr at the configured level.
//
// Entries carry no stack trace, except at DPanic and above: a failed call is
// logged at warn or error by the logging middleware, and a 20-frame trace of
// the logging code under each of those lines told the operator nothing. A
// panic in a handler is different, and the recovery middleware already puts
// the panicking goroutine's own stack into its report (the "stack" field).
func (s *Settings) Logger() (*zap.Logger, error) {
	cfg, err := s.loggerConfig()
	if err != nil {
		return nil, err
	}
	logger, err := cfg.Build(loggerOptions()...)
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	return logger, nil
}

// loggerConfig is Logger's configuration, apart so that tests can point the output elsewhere.
func (s *Settings) loggerConfig() (zap.Config, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(s.LogLevel)); err != nil {
		return zap.Config{}, fmt.Errorf("log level %q: want debug, info, warn or error", s.LogLevel)
	}
	if lvl < zapcore.DebugLevel || lvl > zapcore.ErrorLevel {
		return zap.Config{}, fmt.Errorf("log level %q: want debug, info, warn or error", s.LogLevel)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil // every call is worth a line; sampling would hide failures under load
	cfg.EncoderConfig.TimeKey = "time"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	// The production default adds a trace to every error entry; loggerOptions decides instead.
	cfg.DisableStacktrace = true
	return cfg, nil
}

// loggerOptions limits automatic stack traces to DPanic and above (see Logger).
func loggerOptions() []zap.Option {
	return []zap.Option{zap.AddStacktrace(zapcore.DPanicLevel)}
}
