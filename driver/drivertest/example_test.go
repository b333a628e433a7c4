package drivertest_test

import (
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
)

// A driver's conformance test is one call, in a _test.go file of a package of its own (Ginkgo
// runs one suite per test binary). Here the backend mounts nothing, so the unprivileged profile
// runs every spec; a driver that really mounts leaves NoMounts false and runs the mount specs
// as root with Privileged: true.
func ExampleCSI() {
	TestConformance := func(t *testing.T) {
		backend := memdriver.New(memdriver.Options{Topology: driver.Topology{"example.com/zone": "a"}})
		drivertest.CSI(t, driver.Config{
			Name:            "mem.example.com",
			VendorVersion:   "1.0.0",
			Controller:      backend,
			Node:            backend,
			GroupController: backend,
			Features:        driver.Features{VolumeAccessibilityConstraints: true},
			CheckResponses:  true, // report answers that break the spec as INTERNAL
		}, drivertest.Options{
			NoMounts:       true,
			TestVolumeSize: 1 << 30,
			Disable:        map[drivertest.Check]string{drivertest.CheckPagination: "example: keep it short"},
		})
	}
	_ = TestConformance
}

// A plugin running elsewhere, e.g. started by the test or a sidecar of a pod, is tested through
// its socket. Its logs, at debug level, let the secret canary search them.
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
