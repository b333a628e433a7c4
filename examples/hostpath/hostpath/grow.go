package hostpath

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	utilexec "k8s.io/utils/exec"
)

// capSysResource is the capability the kernel asks for to grow a mounted ext4 file system
// (EXT4_IOC_RESIZE_FS). Containers often run without it.
const capSysResource = 24

// hasCapability reports whether the process has capability bit in its effective set.
func hasCapability(bit uint) bool {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<bit) != 0
		}
	}
	return false
}

func isExt(fsType string) bool { return fsType == "ext2" || fsType == "ext3" || fsType == "ext4" }

// growExtOffline grows an unmounted ext file system to its device's size, so a volume expanded
// while it could not be grown online gets its space at the next stage.
func (n *Node) growExtOffline(dev, staging string) error {
	format, err := n.mounter.GetDiskFormat(dev)
	if err != nil || !isExt(format) {
		return nil // unformatted (mkfs comes next) or not ext: nothing to grow here
	}
	need, err := n.resizer.NeedResize(dev, staging)
	if err != nil || !need {
		return nil
	}
	exec := utilexec.New()
	// resize2fs insists on a freshly checked file system; exit codes 0 and 1 mean clean or fixed.
	if out, err := exec.Command("e2fsck", "-f", "-p", dev).CombinedOutput(); err != nil {
		if ee, ok := err.(utilexec.ExitError); !ok || ee.ExitStatus() > 1 {
			return fmt.Errorf("check %s before growing it: %v: %s", dev, err, out)
		}
	}
	if out, err := exec.Command("resize2fs", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("grow %s: %v: %s", dev, err, out)
	}
	return nil
}
