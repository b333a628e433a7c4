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
	publish := func(r *driver.NodePublishVolumeRequest, volumeDir string) error {
		return m.Bind(volumeDir, r.TargetPath, nodemount.Options{ReadOnly: r.Readonly, MountFlags: r.Capability.MountFlags})
	}
	unpublish := func(r *driver.NodeUnpublishVolumeRequest) error {
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

// A node backend whose volumes are filesystems of their own, not directories to bind: a tmpfs
// per inline ephemeral volume, or an NFS export named in the volume context. Mount succeeds when
// the CO repeats the call, answers an error wrapping driver.ErrAlreadyExists when another
// filesystem (or the same one with another size, read-only setting or per-mount flag) is already
// at the target, and mounts read-only for real; Unpublish takes it off and removes the target.
func ExampleMounter_Mount() {
	m := nodemount.New()
	scratch := func(r *driver.NodePublishVolumeRequest) error {
		flags := append([]string{"size=64m", "mode=0750", "nosuid", "nodev"}, r.Capability.MountFlags...)
		return m.Mount("scratch-"+r.VolumeID, r.TargetPath, "tmpfs", nodemount.Options{ReadOnly: r.Readonly, MountFlags: flags})
	}
	export := func(r *driver.NodePublishVolumeRequest) error {
		// "server:/exports/vol-1"; "nfs" also recognises the nfs4 the mount table shows for v4.
		return m.Mount(r.VolumeContext["export"], r.TargetPath, "nfs", nodemount.Options{ReadOnly: r.Readonly, MountFlags: r.Capability.MountFlags})
	}
	unpublish := func(r *driver.NodeUnpublishVolumeRequest) error {
		return m.Unpublish(r.TargetPath)
	}
	_, _, _ = scratch, export, unpublish
}
