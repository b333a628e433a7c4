// Command minimal is the smallest complete CSI driver on csikit: volumes are directories under
// --root, publishing bind-mounts one at the target path. Validation, locking, redaction, error codes,
// capabilities and the socket are the library's job.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/cmdline"
)

type dirs struct{ root string }

func (d dirs) path(id string) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("volume ID %q is not a plain name: %w", id, driver.ErrNotFound)
	}
	return filepath.Join(d.root, id), nil
}

func (d dirs) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	sum := sha256.Sum256([]byte(r.Name)) // the same name always maps to the same volume
	id := "vol-" + hex.EncodeToString(sum[:8])
	p, _ := d.path(id)
	if old, err := os.ReadFile(p + ".request"); err == nil && string(old) != r.Fingerprint() {
		return nil, fmt.Errorf("volume %q exists with other settings: %w", r.Name, driver.ErrAlreadyExists)
	}
	if err := os.MkdirAll(p, 0o750); err != nil {
		return nil, err
	}
	return &driver.Volume{ID: id, CapacityBytes: r.Capacity.RequiredBytes}, os.WriteFile(p+".request", []byte(r.Fingerprint()), 0o640)
}

func (d dirs) DeleteVolume(_ context.Context, r *driver.DeleteVolumeRequest) error {
	p, err := d.path(r.VolumeID)
	if err != nil {
		return nil // an ID we could never have issued does not exist: deleted already
	}
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.RemoveAll(p + ".request")
}

func (d dirs) ValidateVolumeCapabilities(_ context.Context, r *driver.ValidateVolumeCapabilitiesRequest) error {
	p, err := d.path(r.VolumeID)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("volume %q: %w", r.VolumeID, driver.ErrNotFound)
	}
	for _, c := range r.Capabilities {
		if c.Block {
			return fmt.Errorf("directories cannot be block devices: %w", driver.ErrUnsupported)
		}
	}
	return nil
}

func (d dirs) NodePublishVolume(_ context.Context, r *driver.NodePublishRequest) error {
	src, err := d.path(r.VolumeID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.TargetPath, 0o750); err != nil {
		return err
	}
	flags := uintptr(syscall.MS_BIND)
	if r.Readonly {
		flags |= syscall.MS_RDONLY
	}
	return syscall.Mount(src, r.TargetPath, "", flags, "")
}

func (d dirs) NodeUnpublishVolume(_ context.Context, r *driver.NodeUnpublishRequest) error {
	if err := syscall.Unmount(r.TargetPath, 0); err != nil && err != syscall.EINVAL && !os.IsNotExist(err) {
		return err
	}
	return os.RemoveAll(r.TargetPath)
}

func (d dirs) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	host, err := os.Hostname()
	return &driver.NodeInfo{NodeID: host}, err
}

func main() {
	settings := cmdline.Register(flag.CommandLine, cmdline.Defaults{Endpoint: "unix:///tmp/csikit-minimal.sock"})
	root := flag.String("root", filepath.Join(os.TempDir(), "csikit-minimal"), "directory that holds the volumes")
	flag.Parse()
	if err := run(context.Background(), settings, *root); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, settings *cmdline.Settings, root string) error {
	logger, err := settings.Logger()
	if err != nil {
		return err
	}
	backend := dirs{root: root}
	d, err := driver.New(driver.Config{
		Name: "minimal.csikit.dev", VendorVersion: "0.1.0",
		Controller: backend, Node: backend,
		Logger: logger, Endpoint: settings.Endpoint,
	})
	if err != nil {
		return err
	}
	return d.Run(ctx)
}
