// Package block runs the conformance suite against the hostpath driver with raw block volumes
// (image files on loop devices, published as device nodes). Ginkgo runs one suite per test
// binary, hence a package of its own beside the filesystem run.
package block

import (
	"testing"

	"github.com/csikit/csikit/examples/hostpath/internal/conformancerun"
)

func TestConformanceBlock(t *testing.T) { conformancerun.Run(t, "block") }
