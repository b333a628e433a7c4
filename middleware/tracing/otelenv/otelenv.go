// Package otelenv builds an OpenTelemetry TracerProvider from the standard OTEL_* environment
// variables: the OpenTelemetry SDK, the OTLP exporters (HTTP and gRPC) and the console exporter,
// each fed by the SDK's batch span processor.
//
// It is apart from package tracing, whose interceptors need only the OpenTelemetry API, so that a
// driver links the SDK and its exporters only when it asks for them: plugin.Run never does, and
// cmdline.Settings.Tracing, which every example calls, is the usual way in. A driver that builds
// its own provider passes it as plugin.Config.TracerProvider and needs neither.
package otelenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Environment variables NewProvider reads itself. The exporters and
// the SDK read the rest (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _TIMEOUT, TLS
// settings, OTEL_BSP_* for the batch span processor, OTEL_TRACES_SAMPLER,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
const (
	// EnvSDKDisabled set to "true" turns tracing off whatever else is set.
	EnvSDKDisabled = "OTEL_SDK_DISABLED"
	// EnvTracesExporter lists the exporters: otlp, console, none.
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	// EnvOTLPTracesProtocol is the OTLP protocol for traces; it wins over
	// EnvOTLPProtocol.
	EnvOTLPTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	// EnvOTLPProtocol is the OTLP protocol for every signal.
	EnvOTLPProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
)

const (
	exporterOTLP    = "otlp"
	exporterConsole = "console"
	exporterNone    = "none"

	protocolGRPC      = "grpc"
	protocolHTTPProto = "http/protobuf"
	// The specification's default protocol; gRPC is opt-in.
	defaultProtocol = protocolHTTPProto
)

// noShutdown is the shutdown of a provider that holds nothing.
func noShutdown(context.Context) error { return nil }

// NewProvider returns the TracerProvider the standard OpenTelemetry
// environment variables ask for, and the function that flushes and stops it
// (call it once, at exit).
//
// Tracing is off by default: unless OTEL_TRACES_EXPORTER names an exporter,
// or when OTEL_SDK_DISABLED is "true", the provider is a no-op, which
// package tracing recognises and turns into no span and no handler at all.
// OTEL_TRACES_EXPORTER is a comma-separated list of:
//
//   - "otlp": OTLP over the protocol in OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
//     OTEL_EXPORTER_OTLP_PROTOCOL, "http/protobuf" (the default) or "grpc";
//     endpoint, headers, timeout and TLS from the OTEL_EXPORTER_OTLP_*
//     variables.
//   - "console": spans as JSON on standard output, for debugging.
//   - "none": nothing.
//
// Each exporter gets its spans in batches from the SDK's batch span
// processor (sdktrace.WithBatcher), which reads the OTEL_BSP_* variables
// (schedule delay, export timeout, queue and batch sizes). Sampling follows
// OTEL_TRACES_SAMPLER (default: parent-based, always on), the resource
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. opts are applied last, so a
// driver can set, for example, sdktrace.WithResource with its own name.
// An unknown exporter or protocol is an error, so a typo does not silently
// turn tracing off.
func NewProvider(ctx context.Context, opts ...sdktrace.TracerProviderOption) (trace.TracerProvider, func(context.Context) error, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvSDKDisabled)), "true") {
		return tracenoop.NewTracerProvider(), noShutdown, nil
	}
	names := exporterNames(os.Getenv(EnvTracesExporter))
	if len(names) == 0 {
		return tracenoop.NewTracerProvider(), noShutdown, nil
	}
	var exporters []sdktrace.SpanExporter
	// An exporter created before a later one fails holds a connection or a
	// goroutine; it is shut down before returning the error.
	fail := func(err error) (trace.TracerProvider, func(context.Context) error, error) {
		for _, e := range exporters {
			err = errors.Join(err, e.Shutdown(ctx))
		}
		return nil, nil, err
	}
	for _, name := range names {
		e, err := newExporter(ctx, name)
		if err != nil {
			return fail(err)
		}
		exporters = append(exporters, e)
	}
	all := make([]sdktrace.TracerProviderOption, 0, len(exporters)+len(opts))
	for _, e := range exporters {
		all = append(all, sdktrace.WithBatcher(e))
	}
	tp := sdktrace.NewTracerProvider(append(all, opts...)...)
	return tp, tp.Shutdown, nil
}

// exporterNames splits OTEL_TRACES_EXPORTER, dropping "none" and
// duplicates; the result is empty when tracing is off.
func exporterNames(v string) []string {
	var names []string
	for name := range strings.SplitSeq(v, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" || name == exporterNone || slices.Contains(names, name) {
			continue
		}
		names = append(names, name)
	}
	return names
}

func newExporter(ctx context.Context, name string) (sdktrace.SpanExporter, error) {
	switch name {
	case exporterOTLP:
		var (
			e   sdktrace.SpanExporter
			err error
		)
		switch protocol := otlpProtocol(); protocol {
		case protocolGRPC:
			e, err = otlptracegrpc.New(ctx)
		case protocolHTTPProto:
			e, err = otlptracehttp.New(ctx)
		default:
			return nil, fmt.Errorf("unsupported OTLP protocol %q (want %s or %s)",
				protocol, protocolHTTPProto, protocolGRPC)
		}
		if err != nil {
			return nil, fmt.Errorf("create otlp exporter: %w", err)
		}
		return e, nil
	case exporterConsole:
		e, err := stdouttrace.New(stdouttrace.WithWriter(os.Stdout))
		if err != nil {
			return nil, fmt.Errorf("create console exporter: %w", err)
		}
		return e, nil
	}
	return nil, fmt.Errorf("unsupported %s value %q (want %s, %s or %s)",
		EnvTracesExporter, name, exporterOTLP, exporterConsole, exporterNone)
}

// otlpProtocol reads the trace-specific protocol first, as the
// specification orders them.
func otlpProtocol() string {
	for _, env := range [...]string{EnvOTLPTracesProtocol, EnvOTLPProtocol} {
		if v := strings.TrimSpace(os.Getenv(env)); v != "" {
			return strings.ToLower(v)
		}
	}
	return defaultProtocol
}
