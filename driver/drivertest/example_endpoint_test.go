package drivertest_test

import (
	"testing"

	"github.com/csikit/csikit/driver/drivertest"
)

// A plugin running elsewhere, e.g. started by the test or a sidecar of a pod, is tested through
// its socket. Its logs, at debug level, let the secret canary search them. Like CSI, CSIEndpoint
// may be called once per test binary.
func ExampleCSIEndpoint() {
	TestDeployed := func(t *testing.T) {
		var logs func() string // e.g. read the plugin's log file
		drivertest.CSIEndpoint(t, "unix:///run/csi/csi.sock", drivertest.Options{
			Privileged: true,
			Logs:       logs,
		})
	}
	_ = TestDeployed
}
