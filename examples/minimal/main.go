// Command minimal is the smallest complete CSI driver on csikit: volumes are directories under
// --root, publishing bind-mounts one at the target path. Validation, locking, redaction, error codes,
// capabilities and the socket are the library's job; mounting safely is driver/nodemount's.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/driver/nodemount"
	"github.com/csikit/csikit/driver/plugin"
)

type dirs struct {
	root   string
	mounts *nodemount.Mounter
}

// record is kept beside each volume directory: what a repeated CreateVolume is compared with.
type record struct {
	Fingerprint string `json:"fingerprint"`
	Capacity    int64  `json:"capacity"`
}

// path maps a volume ID to its directory. IDs come from the CO: one we could not have issued
// names no volume, and never becomes a path outside root.
func (d dirs) path(id string) (string, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return "", fmt.Errorf("volume ID %q is not a plain name: %w", id, driver.ErrNotFound)
	}
	return filepath.Join(d.root, id), nil
}

// existing returns the volume's directory and record, or an error wrapping driver.ErrNotFound.
func (d dirs) existing(id string) (string, *record, error) {
	p, err := d.path(id)
	if err != nil {
		return "", nil, err
	}
	raw, err := os.ReadFile(p + ".json")
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
	}
	var rec record
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	return p, &rec, err
}

func (d dirs) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	if err := directoriesOnly(r.Capabilities); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(r.Name)) // the same name always maps to the same volume
	id := "vol-" + hex.EncodeToString(sum[:8])
	if _, rec, err := d.existing(id); err == nil {
		v := &driver.Volume{ID: id, CapacityBytes: rec.Capacity}
		return v, r.CheckExisting(rec.Fingerprint, v)
	} else if !errors.Is(err, driver.ErrNotFound) {
		return nil, err
	}
	if err := d.fits(r.Capacity); err != nil {
		return nil, err
	}
	p, _ := d.path(id)
	if err := os.MkdirAll(p, 0o750); err != nil {
		return nil, fmt.Errorf("create volume directory: %w", err)
	}
	// The record is written last and renamed into place: when it exists, the volume does.
	raw, _ := json.Marshal(record{Fingerprint: r.Fingerprint(), Capacity: r.Capacity.RequiredBytes})
	if err := os.WriteFile(p+".json.tmp", raw, 0o640); err != nil {
		return nil, fmt.Errorf("write volume record: %w", err)
	}
	return &driver.Volume{ID: id, CapacityBytes: r.Capacity.RequiredBytes}, os.Rename(p+".json.tmp", p+".json")
}

// fits refuses a capacity range the filesystem holding root cannot hold. A volume is a directory
// there, with no quota: nothing reserves its space and nothing stops it growing past its size, so
// the capacity minimal reports is the one asked for, provisioned thinly, and true only in that
// the filesystem is large enough to hold it. A request larger than the whole filesystem could
// never be met, whatever is deleted: the range is beyond what this driver supports (OUT_OF_RANGE),
// not short of space for now (RESOURCE_EXHAUSTED). Free space is not checked: every volume and
// everything else on the filesystem share it. Reporting capacity 0 ("unknown", which the spec
// allows) would be as true, but then CreateVolumeRequest.CheckExisting could not tell a repeated
// request for another size from a retry. limit_bytes alone leaves the capacity unknown (0), which
// no limit excludes.
func (d dirs) fits(c driver.CapacityRange) error {
	if c.RequiredBytes == 0 {
		return nil
	}
	if err := os.MkdirAll(d.root, 0o750); err != nil {
		return fmt.Errorf("create the volumes directory: %w", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(d.root, &st); err != nil {
		return fmt.Errorf("size of the filesystem holding the volumes: %w", err)
	}
	size := int64(math.MaxInt64)
	if st.Frsize > 0 && st.Blocks <= uint64(math.MaxInt64/st.Frsize) {
		size = int64(st.Blocks) * st.Frsize
	}
	if c.RequiredBytes > size {
		return fmt.Errorf("%d bytes required, and the filesystem holding the volumes is %d bytes in all: %w", c.RequiredBytes, size, driver.ErrOutOfRange)
	}
	return nil
}

func (d dirs) DeleteVolume(_ context.Context, r *driver.DeleteVolumeRequest) error {
	p, _, err := d.existing(r.VolumeID)
	if err != nil {
		return err // not found: the library answers OK, the volume is deleted already
	}
	// Controller and node run in one process here, so the node's mounts say whether it is in use.
	// minimal never mounts on a volume's directory itself: a filesystem there is someone else's,
	// and deleting the directory would delete its files.
	if on, err := nodemount.At(p); err != nil {
		return err
	} else if on != nil {
		return fmt.Errorf("volume %q has %s (%s) mounted on its directory: %w", r.VolumeID, on.Source, on.FsType, driver.ErrInUse)
	}
	points, err := nodemount.MountsOf(p)
	if err != nil {
		return err
	}
	if len(points) > 0 {
		return fmt.Errorf("volume %q is mounted at %s: %w", r.VolumeID, strings.Join(points, ", "), driver.ErrInUse)
	}
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("remove volume directory: %w", err)
	}
	return os.Remove(p + ".json")
}

func (d dirs) ValidateVolumeCapabilities(_ context.Context, r *driver.ValidateVolumeCapabilitiesRequest) error {
	if _, _, err := d.existing(r.VolumeID); err != nil {
		return err
	}
	return directoriesOnly(r.Capabilities)
}

func directoriesOnly(caps []driver.VolumeCapability) error {
	for _, c := range caps {
		if c.Block {
			return fmt.Errorf("volumes are directories and cannot be block devices: %w", driver.ErrUnsupported)
		}
	}
	return nil
}

func (d dirs) NodePublishVolume(_ context.Context, r *driver.NodePublishVolumeRequest) error {
	p, _, err := d.existing(r.VolumeID)
	if err != nil {
		return err
	}
	if err := directoriesOnly([]driver.VolumeCapability{r.Capability}); err != nil {
		return err
	}
	return d.mounts.Bind(p, r.TargetPath, nodemount.Options{ReadOnly: r.Readonly, MountFlags: r.Capability.MountFlags})
}

func (d dirs) NodeUnpublishVolume(_ context.Context, r *driver.NodeUnpublishVolumeRequest) error {
	p, _, err := d.existing(r.VolumeID)
	if err != nil {
		return err
	}
	// Only this volume's mounts are taken off the target, every one of them if a retry stacked them.
	mine := func(m *nodemount.Info) (bool, error) { return nodemount.Shows(m.MountPoint, p) }
	if err := d.mounts.Unmount(r.TargetPath, mine); err != nil {
		return err
	}
	return nodemount.RemoveTarget(r.TargetPath)
}

func (d dirs) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	host, err := os.Hostname()
	return &driver.NodeInfo{NodeID: host}, err
}

// defaultEndpoint is where the driver listens with no arguments. Its directory holds the socket
// and nothing else: it is what a container mounts to share the socket with the sidecars, and
// what the socket's permissions are judged by.
const defaultEndpoint = "unix:///tmp/csikit-minimal/csi.sock"

// register adds minimal's flags to fs: cmdline's, and --root.
func register(fs *flag.FlagSet) (*cmdline.Settings, *string) {
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: defaultEndpoint})
	root := fs.String("root", filepath.Join(os.TempDir(), "csikit-minimal-volumes"), "directory that holds the volumes; never the socket's directory")
	return settings, root
}

func main() {
	settings, root := register(flag.CommandLine)
	flag.Parse()
	if err := run(context.Background(), settings, *root); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, settings *cmdline.Settings, root string) error {
	cfg := config(root)
	// --endpoint, --log-level, --http-endpoint (/metrics, /healthz, /livez, /readyz) and the OTEL_*
	// variables (OTEL_TRACES_EXPORTER=otlp or console: spans leave), all into cfg.
	flush, err := settings.Apply(ctx, &cfg)
	if err != nil {
		return err
	}
	defer flush() // after Run: the last spans leave, the log is synced
	d, err := plugin.New(cfg)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// config assembles the driver; run adds where to serve and what to log with.
func config(root string) plugin.Config {
	backend := dirs{root: root, mounts: nodemount.New()}
	return plugin.Config{Name: "minimal.csikit.dev", VendorVersion: "0.1.0", Controller: backend, Node: backend}
}
