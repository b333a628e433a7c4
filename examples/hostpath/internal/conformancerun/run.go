// Package conformancerun runs drivertest's conformance suite against the hostpath driver. The
// suite can run once per test binary, so each access type has a test package of its own that
// calls Run.
package conformancerun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

// groupLimit is the member limit of the volume groups under test: small, so the limit spec
// needs few volumes.
const groupLimit = 4

// Run serves a fresh hostpath driver and runs csi-sanity and csikit's own specs against it with
// volumes of the given access type ("mount" or "block"): privileged (real mounts, loop devices
// and mkfs) as root, without the mount specs otherwise.
func Run(t *testing.T, accessType string) {
	t.Helper()
	dir := t.TempDir()
	p, err := hostpath.Open(hostpath.Config{
		StateDir:          filepath.Join(dir, "state"),
		NodeID:            "conformance-node",
		MaxVolumesPerNode: 32,
		MutableParameters: []string{"iops"},
		MaxGroupMembers:   groupLimit,
	}, hostpath.ModeBoth)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	cfg := p.Config()
	cfg.CheckResponses = true
	privileged := os.Geteuid() == 0
	if !privileged {
		t.Log("not root: the specs that mount or attach loop devices are skipped (run as root for the privileged profile)")
	}
	res := drivertest.CSI(t, cfg, drivertest.Options{
		Privileged:                  privileged,
		TestVolumeAccessType:        accessType,
		TestVolumeSize:              64 << 20,
		TestVolumeExpandSize:        128 << 20,
		TestVolumeMutableParameters: map[string]string{"iops": "3000"},
		TestNodeVolumeAttachLimit:   true,
		IdempotentCount:             5,
		VolumeGroups: drivertest.VolumeGroupOptions{
			MaxMembers: groupLimit,
			// A volume is in one group at most, and a published member keeps its group.
			ExclusiveMembership:  true,
			PublishedMemberInUse: true,
			// Volume groups hold no parameters, so any is incompatible with none.
			IncompatibleParameters: map[string]string{"replication": "sync"},
			JoinParameter:          hostpath.ParamVolumeGroup,
			SnapshotParameter:      hostpath.ParamVolumeGroup,
		},
	})
	t.Logf("specs: %d ran, %d passed, %d skipped, %d failed", res.Ran, res.Passed, res.Skipped, res.Failed)
	for spec, reason := range res.Skips {
		t.Logf("skipped %q: %s", spec, reason)
	}
	if res.Failed != 0 {
		t.Fatalf("%d specs failed", res.Failed)
	}
}
