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

// A plugin binary registers the flags, parses them and puts everything they hold into its Config
// with one call: the endpoint, a logger at the level asked for, the diagnostics HTTP server and
// tracing from the OTEL_* variables. Forgetting a field by hand (the endpoint, say, which Run
// would then look for in $CSI_ENDPOINT) is not possible.
func ExampleSettings_Apply() {
	fs := flag.NewFlagSet("myplugin", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: "unix:///tmp/myplugin.sock"})
	if err := fs.Parse([]string{"--endpoint", "unix:///csi/csi.sock", "--http-endpoint", ":8080"}); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	cfg := plugin.Config{Name: "myplugin.example.com", VendorVersion: "1.0.0"} // and the backends
	flush, err := settings.Apply(ctx, &cfg)
	if err != nil {
		fmt.Println(err) // a bad --log-level, both HTTP flags, an unknown OTEL exporter
		return
	}
	defer flush() // runs after Run returns: the last spans leave, the log is synced
	// p, err := plugin.New(cfg); ...; return p.Run(ctx)
	fmt.Println(cfg.Endpoint, cfg.HTTPEndpoint, cfg.Logger != nil)
	// Output: unix:///csi/csi.sock :8080 true
}

// Tracing alone is for a binary that fills the rest of its Config itself (Apply calls it too).
// The OTEL_* variables (OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT, say) decide
// whether spans leave, and where to.
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
