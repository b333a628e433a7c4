// Package csisuite holds csikit's own CSI specs, run inside csi-sanity's suite.
//
// They join that suite behind drivertest.CSI.
// The specs are registered with csi-sanity once per process, and read the run they belong to
// through an Active function when each spec starts. drivertest owns the run, its options and
// the names of the spec groups; this package owns the specs, their fixture and their texts.
package csisuite

import (
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
)

// Run is what the specs need of the conformance run that started them.
type Run interface {
	// Logs returns everything the plugin has logged so far; ok is false when the run was
	// given no way to read its logs.
	Logs() (logs string, ok bool)
	// AddCanary records the values a canary spec sent and the request types that carried
	// them, for the sweep of the logs at the end of the run.
	AddCanary(values, sent []string)
}

// Active returns the run the specs belong to, or nil when the suite was started by something
// other than drivertest.CSI or drivertest.CSIEndpoint (the specs are registered globally).
type Active func() Run

// GroupText is the container text of a csikit spec group; Ginkgo prefixes every spec of the
// group with it, and drivertest skips a group by it.
func GroupText(group string) string { return "csikit " + group }

// Register registers one group of csikit specs with csi-sanity, so they run in the same suite,
// with csi-sanity's per-spec setup, fresh directories and resource cleanup.
func Register(active Active, group string, body func(sc *sanity.TestContext, f *Fixture)) bool {
	return sanity.DescribeSanity(GroupText(group), func(sc *sanity.TestContext) {
		f := &Fixture{SC: sc}
		BeforeEach(func() {
			f.run = active()
			if f.run == nil {
				Skip("csikit specs run only under drivertest.CSI or drivertest.CSIEndpoint")
			}
			f.setup(sc.ControllerConn, sc.Conn)
		})
		// Declared before csi-sanity's Teardown, so it runs first: resources are released
		// while their directories still exist.
		AfterEach(func() {
			defer func() { // also when a cleanup step fails the spec
				for _, fn := range f.closers {
					fn()
				}
				f.closers = nil
			}()
			if f.R == nil {
				return
			}
			for i := len(f.cleanups) - 1; i >= 0; i-- {
				f.cleanups[i]()
			}
			f.cleanups = nil
			f.R.Cleanup()
		})
		body(sc, f)
	})
}
