// Package cmdline gives every plugin binary the same operator knobs: the endpoint from
// CSI_ENDPOINT and the log level from LOG_LEVEL, each overridable by a flag (--endpoint,
// --log-level), with defaults that let the binary start with no arguments at all.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
	return s
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// Logger builds a JSON logger to stderr at the configured level.
func (s *Settings) Logger() (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(s.LogLevel)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", s.LogLevel)
	}
	if lvl < zapcore.DebugLevel || lvl > zapcore.ErrorLevel {
		return nil, errors.New("log level must be one of debug, info, warn, error")
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil // every call is worth a line; sampling would hide failures under load
	cfg.EncoderConfig.TimeKey = "time"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	logger, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	return logger, nil
}
