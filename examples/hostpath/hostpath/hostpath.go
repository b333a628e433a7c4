package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/csikit/csikit/driver"
)

// Topology keys of this driver.
const (
	TopologyNodeKey = "topology.hostpath.csikit.dev/node"
	TopologyZoneKey = "topology.hostpath.csikit.dev/zone"
)

// Volume kinds.
const (
	kindDir  = "dir"  // a directory, mounted with bind mounts
	kindFile = "file" // an image file on a loop device: raw block, or formatted with FSType
)

// Parameters a StorageClass may set.
const (
	// ParamKind forces the backing: "dir" or "file". By default block access or a requested
	// fs_type means "file", anything else "dir".
	ParamKind = "kind"
	// ParamFSType is the filesystem for "file" volumes mounted as filesystems (default ext4).
	ParamFSType = "csi.storage.k8s.io/fstype"
	// ParamVolumeGroup makes CreateVolume put the new volume into a volume group, named by its
	// name or its ID.
	ParamVolumeGroup = "volumegroup.csikit.dev/group"
	// ParamVolumeGroupOperator means the same as ParamVolumeGroup under the key the IBM
	// volume-group operator looks for: it leaves alone every PVC whose StorageClass has it,
	// because the driver, not the operator, then decides the PVC's group.
	ParamVolumeGroupOperator = "volume_group"
)

// volumeContextKind tells the node how the volume is backed.
const volumeContextKind = "hostpath.csikit.dev/kind"

// ephemeralContextKey marks an inline ephemeral volume (set by kubelet); the library then lets
// NodePublishVolume through without a staging path.
const ephemeralContextKey = driver.EphemeralContextKey

// Config configures the driver.
type Config struct {
	// StateDir holds the state database, volumes and snapshots.
	StateDir string
	// NodeID identifies this node; required for the node service.
	NodeID string
	// Zone, when set, is reported as a second topology segment.
	Zone string
	// CapacityBytes is the pool size reported by GetCapacity and enforced by CreateVolume.
	CapacityBytes int64
	// MaxVolumeSize bounds one volume; 0 means the pool size.
	MaxVolumeSize int64
	// DefaultVolumeSize is used when CreateVolume gives no capacity; 0 means 1 GiB.
	DefaultVolumeSize int64
	// MaxVolumesPerNode is the attach limit (0 = none).
	MaxVolumesPerNode int64
	// MutableParameters is the allow-list of ControllerModifyVolume keys.
	MutableParameters []string
	// MaxGroupMembers is the most volumes one volume group may hold (0 = no limit).
	MaxGroupMembers int
	// Logger receives operational messages (reconciliation at start-up).
	Logger *zap.Logger
}

func (c *Config) defaults() error {
	if c.StateDir == "" {
		return errors.New("state directory is required")
	}
	// The state directory is made and then named by its canonical path: the kernel reports loop
	// backing files and mount roots by real paths, and the in-use checks compare with them. A
	// state directory reached through a symlink would otherwise look unused while it is mounted.
	if err := os.MkdirAll(c.StateDir, 0o750); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if c.StateDir, err = filepath.EvalSymlinks(abs); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if c.CapacityBytes <= 0 {
		c.CapacityBytes = 100 << 30
	}
	if c.MaxVolumeSize <= 0 || c.MaxVolumeSize > c.CapacityBytes {
		c.MaxVolumeSize = c.CapacityBytes
	}
	if c.DefaultVolumeSize <= 0 {
		c.DefaultVolumeSize = 1 << 30
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

// topology is where this node's volumes are accessible.
func (c *Config) topology() driver.Topology {
	t := driver.Topology{TopologyNodeKey: c.NodeID}
	if c.Zone != "" {
		t[TopologyZoneKey] = c.Zone
	}
	return t
}

// Features are the driver's non-derivable capabilities.
func Features() driver.Features {
	return driver.Features{
		CloneVolume:                    true,
		PublishReadonly:                true,
		ListVolumesPublishedNodes:      true,
		SingleNodeMultiWriter:          true,
		VolumeAccessibilityConstraints: true,
		// Snapshots live on this node's disk, so they are usable where its volumes are.
		SnapshotAccessibilityConstraints: true,
		Expansion:                        driver.ExpansionOnline,
	}
}

// volumeRecord is the controller's state of one volume.
type volumeRecord struct {
	ID          string               `json:"id"`
	Name        string               `json:"name"`
	Fingerprint string               `json:"fp"`
	Kind        string               `json:"kind"`
	FSType      string               `json:"fsType,omitempty"`
	Size        int64                `json:"size"`
	Mutable     map[string]string    `json:"mutable,omitempty"`
	Source      driver.ContentSource `json:"source,omitzero"` // most volumes have none: 42 bytes less each
	Published   map[string]pubRecord `json:"published,omitempty"`
	Created     time.Time            `json:"created"`
}

type pubRecord struct {
	Readonly bool              `json:"ro"`
	Mode     driver.AccessMode `json:"mode"`
	Block    bool              `json:"block"`
}

type snapshotRecord struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Fingerprint string    `json:"fp"`
	Source      string    `json:"source"`
	Kind        string    `json:"kind"`
	FSType      string    `json:"fsType,omitempty"`
	Size        int64     `json:"size"`
	Group       string    `json:"group,omitempty"`
	Created     time.Time `json:"created"`
}

type groupRecord struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Fingerprint string    `json:"fp"`
	Members     []string  `json:"members"`
	Created     time.Time `json:"created"`
}

// Controller buckets.
const (
	bVolumes       = "volumes"
	bVolumeNames   = "volume-names"
	bSnapshots     = "snapshots"
	bSnapshotNames = "snapshot-names"
	bSnapsByVolume = "snapshots-by-volume" // volumeID + "/" + snapshotID -> ""
	bGroups        = "groups"
	bGroupNames    = "group-names"
	bMeta          = "meta"
)

// meta keys
const (
	metaUsed           = "used-bytes"
	metaAttachedPrefix = "attached/" // + node ID: number of volumes published there
)

var controllerBuckets = []string{bVolumes, bVolumeNames, bSnapshots, bSnapshotNames, bSnapsByVolume, bGroups, bGroupNames, bMeta,
	bVolumeGroups, bVolumeGroupNames, bVolumeGroupMembers, bVolumeGroupOf}

// Open checks the configuration and opens the state. It does not start serving.
func open(cfg *Config) (layout, error) {
	if err := cfg.defaults(); err != nil {
		return layout{}, err
	}
	l := layout{root: cfg.StateDir}
	if err := (&l).prepare(); err != nil {
		return layout{}, err
	}
	return l, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
