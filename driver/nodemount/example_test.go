package nodemount_test

import (
	"fmt"
	"os"
	"path/filepath"

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

// A node backend whose volumes are image files stages one by attaching it to a loop device and
// formatting and mounting the device; unstaging takes the mount off and detaches the device.
// Both are idempotent, so a CO's retry after a crash at any point finds what the first call
// left: AttachLoop returns the device already attached, FormatAndMount the mount already made.
// After a restart of the driver, FindLoop finds the device from the image alone (for
// NodeExpandVolume, NodeGetVolumeStats or a block publish), with nothing kept in memory.
func ExampleAttachLoop() {
	m := nodemount.New()
	imageOf := func(volumeID string) string { return "/var/lib/my-driver/images/" + volumeID + ".img" }
	stage := func(r *driver.NodeStageVolumeRequest) error {
		dev, err := nodemount.AttachLoop(imageOf(r.VolumeID))
		if err != nil {
			return err
		}
		return m.FormatAndMount(dev, r.StagingTargetPath, "ext4", nodemount.Options{MountFlags: r.Capability.MountFlags})
	}
	unstage := func(r *driver.NodeUnstageVolumeRequest) error {
		if err := m.Unpublish(r.StagingTargetPath); err != nil {
			return err
		}
		return nodemount.DetachLoop(imageOf(r.VolumeID))
	}
	expand := func(r *driver.NodeExpandVolumeRequest) (int64, error) {
		dev, err := nodemount.FindLoop(imageOf(r.VolumeID))
		if err != nil || dev == "" {
			return 0, fmt.Errorf("volume %q is not staged on this node: %w", r.VolumeID, driver.ErrFailedPrecondition)
		}
		size, err := nodemount.RefreshLoopSize(dev) // the controller grew the image
		if err != nil {
			return 0, err
		}
		return size, m.Resize(dev, r.StagingTargetPath)
	}
	_, _, _ = stage, unstage, expand
}

// FindLoop asks the kernel which loop device an image file is attached to; "" means none.
func ExampleFindLoop() {
	dir, err := os.MkdirTemp("", "images")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	image := filepath.Join(dir, "vol-1.img")
	if err := os.WriteFile(image, nil, 0o600); err != nil {
		fmt.Println(err)
		return
	}
	dev, err := nodemount.FindLoop(image)
	fmt.Printf("%q %v\n", dev, err)
	// Output:
	// "" <nil>
}
