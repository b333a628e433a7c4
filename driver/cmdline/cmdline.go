// Package cmdline gives every plugin binary the same operator knobs, with defaults that let the
// binary start with no arguments at all:
//
//   - --endpoint, default $CSI_ENDPOINT ($COSI_ENDPOINT for a plugin that serves only COSI),
//     else the driver's default: where the plugin listens;
//   - --log-level, default $LOG_LEVEL, else info: what is logged (debug: redacted payloads);
//   - --http-endpoint (and its deprecated spelling --metrics-address) and --metrics-path: the
//     diagnostics HTTP server (/metrics, /healthz, /livez, /readyz), off by default;
//   - the standard OTEL_* variables: OpenTelemetry tracing, off unless they name an exporter.
//
// Register adds the flags; after parsing, Settings.Apply puts all of it into a plugin.Config in
// one call and returns the flush to defer. This package, through Apply and Tracing, is also what
// brings the OpenTelemetry SDK and its exporters into a binary: plugin.Run alone links neither.
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
	// EndpointEnv is the variable read for the endpoint; empty means CSI_ENDPOINT. A plugin that
	// serves only COSI reads $COSI_ENDPOINT whatever this says (see Settings.Apply), so a COSI
	// driver needs to set it only to read a variable of its own as well.
	EndpointEnv string
	// LogLevel is debug, info, warn or error; empty means info.
	LogLevel string
}

// Settings holds the values the flags resolved to, once the flag set is parsed. Apply puts them
// into a plugin.Config.
type Settings struct {
	// Endpoint is where the plugin listens: the --endpoint flag, else the variable Defaults
	// names ($CSI_ENDPOINT), else the default. Apply may take $COSI_ENDPOINT instead when the
	// flag was not given and the plugin serves COSI (see Apply).
	Endpoint string
	// LogLevel is the minimum level logged; debug shows redacted request and response payloads.
	LogLevel string
	// HTTPEndpoint is the TCP address of the diagnostics server (/metrics, /healthz, /livez, /readyz);
	// empty serves none. The flag has the Kubernetes CSI sidecars' name and meaning.
	HTTPEndpoint string
	// MetricsAddress is the sidecars' deprecated spelling of HTTPEndpoint, accepted so that
	// manifests written for them work; setting both is an error.
	MetricsAddress string
	// MetricsPath is the HTTP path metrics are served on.
	MetricsPath string

	// What Register knew, for Apply to pick the endpoint by the services the plugin serves.
	registered    bool
	endpointEnv   string // the variable Defaults named, CSI_ENDPOINT when it named none
	envNamed      bool   // Defaults named it
	endpointDef   string // Defaults.Endpoint
	endpointGiven bool   // --endpoint was on the command line
}

// endpointFlag is the --endpoint flag: it records that the operator gave it, which Apply needs
// to tell the operator's choice from a default read from the environment.
type endpointFlag struct{ s *Settings }

func (f endpointFlag) String() string {
	if f.s == nil { // the flag package formats a zero value to tell whether a default is set
		return ""
	}
	return f.s.Endpoint
}

func (f endpointFlag) Set(v string) error {
	f.s.Endpoint, f.s.endpointGiven = v, true
	return nil
}

// Register adds the operator's flags to fs and returns the Settings they fill; read them after
// fs.Parse, or hand them all to a plugin.Config with Settings.Apply. The flags:
//
//   - --endpoint: where the plugin listens, unix:///abs/path.sock. Default: the variable
//     d.EndpointEnv names ($CSI_ENDPOINT when empty), else d.Endpoint; for a plugin that serves
//     COSI, Apply also reads $COSI_ENDPOINT (see Apply).
//   - --log-level: debug, info, warn or error; debug logs redacted request and response payloads.
//     Default: $LOG_LEVEL, else d.LogLevel, else info.
//   - --http-endpoint: the TCP address (":8080") of the diagnostics HTTP server, which serves
//     /metrics, /healthz, /livez and /readyz, as the CSI sidecars' flag of that name does. Default: none,
//     no HTTP server.
//   - --metrics-address: the sidecars' deprecated spelling of --http-endpoint, accepted so that
//     manifests written for them work; Apply and Diagnostics refuse both at once.
//   - --metrics-path: the HTTP path of the Prometheus metrics. Default: /metrics.
//
// For --endpoint and --log-level the flag wins over the variable, which wins over the default; a
// variable set to the empty string counts as unset. The help text (-h) states each default once,
// naming the variable and the value used without it.
func Register(fs *flag.FlagSet, d Defaults) *Settings {
	env := d.EndpointEnv
	if env == "" {
		env = "CSI_ENDPOINT"
	}
	level := d.LogLevel
	if level == "" {
		level = "info"
	}
	s := &Settings{registered: true, endpointEnv: env, envNamed: d.EndpointEnv != "", endpointDef: d.Endpoint}
	endpointDefault := "$" + env
	if env != cosiEndpointEnv {
		endpointDefault += " ($" + cosiEndpointEnv + " for a plugin that serves only COSI)"
	}
	if d.Endpoint != "" {
		endpointDefault += fmt.Sprintf(", else %q", d.Endpoint)
	}
	s.Endpoint = envOr(env, d.Endpoint)
	fs.Var(endpointFlag{s}, "endpoint", fmt.Sprintf("where to listen: unix:///abs/path.sock (default %s)", endpointDefault))
	fs.StringVar(&s.LogLevel, "log-level", envOr("LOG_LEVEL", level),
		fmt.Sprintf("debug, info, warn or error; debug logs redacted payloads (default $LOG_LEVEL, else %s)", level))
	// The usage above states these two defaults, variable first; the flag package would add the
	// value resolved now as a second "(default ...)". An empty DefValue (the field exists for the
	// usage message) keeps it to one.
	fs.Lookup("endpoint").DefValue = ""
	fs.Lookup("log-level").DefValue = ""
	fs.StringVar(&s.HTTPEndpoint, "http-endpoint", "",
		"TCP address (e.g. :8080) of the HTTP server for /metrics, /healthz, /livez and /readyz (default none: no HTTP server)")
	fs.StringVar(&s.MetricsAddress, "metrics-address", "",
		"deprecated spelling of --http-endpoint; setting both is an error")
	fs.StringVar(&s.MetricsPath, "metrics-path", "/metrics", "HTTP path of the Prometheus metrics")
	return s
}

// Apply puts everything the settings hold into cfg, so that a binary cannot forget a part: a
// Config without Endpoint listens on $CSI_ENDPOINT whatever --endpoint said, and one without
// Logger logs nothing.
//
//   - Endpoint: the --endpoint value (flag, variable or default) when it is not empty. It wins
//     over an Endpoint already in cfg: it is the operator's choice, or the driver's own default.
//     Without the flag, the variable follows the services cfg serves: a plugin that serves only
//     COSI listens on $COSI_ENDPOINT (and on the variable Defaults.EndpointEnv names, if any),
//     whatever Defaults say; one that serves CSI and COSI on one socket takes $CSI_ENDPOINT (or
//     the variable Defaults name) or $COSI_ENDPOINT, whichever is set. Two variables that name
//     different sockets, or a COSI-only plugin that finds $CSI_ENDPOINT set and $COSI_ENDPOINT
//     not, are an error naming the variables: picking one would be a guess.
//   - Logger: a logger at --log-level, as Logger builds it, unless cfg.Logger is set already. A
//     driver whose backend needs the logger before Apply builds it with Logger and sets
//     cfg.Logger to it first.
//   - HTTPEndpoint, MetricsPath and Metrics: from the HTTP flags, as Diagnostics sets them.
//   - TracerProvider: from the OTEL_* variables, as Tracing sets it (a provider already in cfg
//     is kept).
//   - klog (k8s.io/mount-utils' logger): routed into cfg.Logger, as RouteKlog does, so that its
//     lines are JSON lines of the plugin's log rather than text on stderr.
//
// On error cfg is left as it was and klog is untouched. Defer flush right after Apply: deferred
// calls run after Run returns, once the in-flight calls have drained, and flush then sends the
// spans of the last calls (within five seconds), sends klog back to stderr and syncs the logger
// Apply built.
func (s *Settings) Apply(ctx context.Context, cfg *plugin.Config) (flush func(), err error) {
	c := *cfg
	ep, err := s.endpointFor(&c)
	if err != nil {
		return nil, err
	}
	if ep != "" {
		c.Endpoint = ep
	}
	var built *zap.Logger
	if c.Logger == nil {
		if built, err = s.Logger(); err != nil {
			return nil, err
		}
		c.Logger = built
	}
	if err := s.Diagnostics(&c); err != nil {
		return nil, err
	}
	// Last: the only step that starts something (an exporter), so nothing is left to undo when
	// an earlier one fails.
	flushTraces, err := s.Tracing(ctx, &c)
	if err != nil {
		return nil, err
	}
	*cfg = c
	restoreKlog := RouteKlog(c.Logger)
	return func() {
		flushTraces()
		restoreKlog()
		if built != nil {
			_ = built.Sync() // stderr: nothing to do about a failure at exit
		}
	}, nil
}

// Diagnostics turns the HTTP flags into cfg's settings: with --http-endpoint (or the deprecated
// --metrics-address) set, the address, the metrics path and, unless the driver set cfg.Metrics
// to a registry of its own, a new Prometheus registry as cfg.Metrics. Without either flag, cfg
// is left as it is and no metric is recorded. Apply calls it.
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
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
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
// failure as a warning on cfg.Logger (set cfg.Logger first). Apply calls it.
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

// cosiEndpointEnv is the variable COSI's sidecar deployments set, and plugin.Run reads for a
// plugin that serves COSI.
const cosiEndpointEnv = "COSI_ENDPOINT"

// endpointFor picks the endpoint for the services cfg serves (see Apply).
func (s *Settings) endpointFor(cfg *plugin.Config) (string, error) {
	if !s.registered || s.endpointGiven || cfg.COSI == nil {
		return s.Endpoint, nil // the flag, a hand-made Settings, or a plugin without COSI
	}
	servesCSI := cfg.Controller != nil || cfg.Node != nil || cfg.GroupController != nil ||
		cfg.SnapshotMetadata != nil || cfg.VolumeGroups != nil
	// The variables that may name the socket, first the one that wins alone.
	vars := []string{cosiEndpointEnv}
	if servesCSI || s.envNamed {
		vars = append(vars, s.endpointEnv)
	}
	if servesCSI {
		vars[0], vars[1] = vars[1], vars[0]
	}
	var set []string // "$NAME (value)" of each variable set, for an error
	chosen := ""
	for i, v := range vars {
		if i > 0 && v == vars[0] {
			break
		}
		val := os.Getenv(v)
		if val == "" {
			continue
		}
		set = append(set, fmt.Sprintf("$%s (%s)", v, val))
		if chosen != "" && val != chosen {
			what := "the plugin serves only COSI, on"
			if servesCSI {
				what = "the plugin serves CSI and COSI on one socket, at"
			}
			return "", fmt.Errorf("endpoint: %s and %s name different sockets, and %s one of them: unset one, or pass --endpoint",
				set[0], set[1], what)
		}
		chosen = val
	}
	if chosen != "" {
		return chosen, nil
	}
	if !servesCSI && !s.envNamed {
		if v := os.Getenv(s.endpointEnv); v != "" {
			return "", fmt.Errorf("endpoint: the plugin serves only COSI, which listens on $%s, and $%s is not set while $%s (%s) is: "+
				"set %s, or pass --endpoint", cosiEndpointEnv, cosiEndpointEnv, s.endpointEnv, v, cosiEndpointEnv)
		}
	}
	return s.endpointDef, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// Logger builds a JSON logger to stderr at the configured level; each call builds a new one.
// Apply calls it when cfg.Logger is not set.
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
