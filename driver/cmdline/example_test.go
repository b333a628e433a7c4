package cmdline_test

import (
	"context"
	"flag"
	"fmt"

	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/driver/plugin"
)

// Flags win over CSI_ENDPOINT and LOG_LEVEL, which win over the defaults.
func ExampleRegister() {
	fs := flag.NewFlagSet("myplugin", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: "unix:///tmp/myplugin.sock"})
	if err := fs.Parse([]string{"--endpoint", "unix:///csi/csi.sock", "--log-level", "debug"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(settings.Endpoint, settings.LogLevel)
	// Output: unix:///csi/csi.sock debug
}

// A plugin binary opts in to tracing from the OTEL_* variables (OTEL_TRACES_EXPORTER=otlp and
// OTEL_EXPORTER_OTLP_ENDPOINT, say); without this call it links no OpenTelemetry SDK or exporter.
func ExampleSettings_Tracing() {
	ctx := context.Background()
	settings := cmdline.Register(flag.CommandLine, cmdline.Defaults{Endpoint: "unix:///tmp/myplugin.sock"})
	flag.Parse()
	logger, err := settings.Logger()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := plugin.Config{Name: "myplugin.example.com", VendorVersion: "1.0.0", Logger: logger, Endpoint: settings.Endpoint}
	flush, err := settings.Tracing(ctx, &cfg)
	if err != nil {
		fmt.Println(err) // an unknown exporter or protocol: a typo does not silently turn tracing off
		return
	}
	defer flush() // after Run returns: the spans of the last calls leave before the process exits
	// cfg.Controller, cfg.Node = ...; p, err := plugin.New(cfg); ...; p.Run(ctx)
}
