package drivertest_test

import (
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// This file is the whole conformance test of a driver, ready to copy into a conformance_test.go
// of a package of its own: Ginkgo runs one suite per test binary, so drivertest.CSI may be
// called once per package, and a second profile (say, privileged) needs a second package. Swap
// memdriver for your backend and conformanceConfig for the Config your main function serves.

// conformanceConfig is the plugin under test, assembled exactly as the real binary assembles it,
// so the test proves what ships and not a test-only variant.
func conformanceConfig() plugin.Config {
	backend := memdriver.New(memdriver.Options{Topology: driver.Topology{"example.com/zone": "a"}})
	return plugin.Config{
		Name:            "mem.example.com",
		VendorVersion:   "1.0.0",
		Controller:      backend,
		Node:            backend,
		GroupController: backend,
		Features:        driver.Features{VolumeAccessibilityConstraints: true},
		// In tests, report answers that break the spec as INTERNAL instead of passing them on.
		CheckResponses: true,
	}
}

// conformanceOptions picks the profile. memdriver mounts nothing, so NoMounts lets the
// unprivileged profile run every spec; a driver that really mounts leaves NoMounts false (the
// mount specs are then skipped, each with its reason) and runs them as root in a second package
// with Privileged: true.
var conformanceOptions = drivertest.Options{
	NoMounts:       true,
	TestVolumeSize: 1 << 30,
	Disable:        map[drivertest.Check]string{drivertest.CheckPagination: "example: keep it short"},
}

// In your package the function below is a top-level func TestConformance(t *testing.T). Here it
// is a variable, because this package runs its own suite and a second drivertest.CSI call in one
// test binary fails; for the same reason the example has no output to check.
func ExampleCSI() {
	TestConformance := func(t *testing.T) {
		res := drivertest.CSI(t, conformanceConfig(), conformanceOptions)
		t.Logf("%d specs ran, %d skipped", res.Ran, res.Skipped)
	}
	_ = TestConformance
}
