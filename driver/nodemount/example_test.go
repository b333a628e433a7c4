package nodemount_test

import (
	"fmt"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/nodemount"
)

// A node backend publishes a volume directory at the CO's target path and unpublishes it again.
// Bind succeeds when the CO repeats the call, and answers an error wrapping
// driver.ErrAlreadyExists (ALREADY_EXISTS) when another volume is already there; Unpublish takes
// every mount off the target before it removes it.
func ExampleMounter_Bind() {
	m := nodemount.New()
	publish := func(r *driver.NodePublishRequest, volumeDir string) error {
		return m.Bind(volumeDir, r.TargetPath, nodemount.Options{ReadOnly: r.Readonly, MountFlags: r.Capability.MountFlags})
	}
	unpublish := func(r *driver.NodeUnpublishRequest) error {
		return m.Unpublish(r.TargetPath)
	}
	_, _ = publish, unpublish
}

// At tells whether a path is a mount point; SourceOf where its mount comes from.
func ExampleAt() {
	root, err := nodemount.At("/")
	fmt.Println(root != nil, err)
	dir, err := nodemount.At("/proc/self")
	fmt.Println(dir != nil, err)
	// Output:
	// true <nil>
	// false <nil>
}
