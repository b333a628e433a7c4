package cmdline_test

import (
	"flag"
	"fmt"

	"github.com/csikit/csikit/driver/cmdline"
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
