// Package conformance runs csi-sanity and csikit's own specs against the hostpath driver with
// filesystem volumes: with real mounts, loop devices and mkfs when the test runs as root, and
// without the mount specs otherwise.
package conformance

import (
	"testing"

	"github.com/csikit/csikit/examples/hostpath/internal/conformancerun"
)

func TestConformance(t *testing.T) { conformancerun.Run(t, "mount") }
