package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"
	utilexec "k8s.io/utils/exec"

	"github.com/csikit/csikit/driver"
)

// Node buckets.
const (
	bStaged    = "staged"    // volume ID -> stagedRecord
	bPublished = "published" // volume ID + "\x00" + target -> publishedRecord
)

type stagedRecord struct {
	VolumeID string            `json:"volume"`
	Path     string            `json:"path"`
	Kind     string            `json:"kind"`
	Block    bool              `json:"block"`
	FSType   string            `json:"fsType,omitempty"`
	Device   string            `json:"device,omitempty"`
	Mode     driver.AccessMode `json:"mode"`
}

type publishedRecord struct {
	VolumeID  string            `json:"volume"`
	Target    string            `json:"target"`
	Staging   string            `json:"staging,omitempty"`
	Readonly  bool              `json:"ro"`
	Block     bool              `json:"block"`
	Mode      driver.AccessMode `json:"mode"`
	Ephemeral bool              `json:"ephemeral,omitempty"`
}

func pubKey(volumeID, target string) string { return volumeID + "\x00" + target }

// Node is the node side of the driver: it stages, publishes and expands volumes with real loop
// devices, mkfs, mounts and bind mounts, and keeps what it did in the node database.
type Node struct {
	cfg     Config
	l       layout
	st      *store
	log     *zap.Logger
	mounter *mount.SafeFormatAndMount
	resizer *mount.ResizeFs
	// mu serialises the node's mount operations on one volume with the reconciliation that
	// inspects them; calls on different volumes run in parallel.
	mu sync.Mutex
}

// NewNode opens (or creates) the node state and reconciles it with the kernel: records of mounts
// that are gone are dropped, loop devices of this driver that nothing uses are detached, and
// ephemeral volumes whose publish did not commit are removed.
func NewNode(cfg Config) (*Node, error) {
	l, err := open(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.NodeID == "" {
		return nil, errors.New("node ID is required")
	}
	st, err := openStore(filepath.Join(l.root, "node.db"), bStaged, bPublished)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, l: l, st: st, log: cfg.Logger, mounter: newMounter(), resizer: mount.NewResizeFs(utilexec.New())}
	if err := n.reconcile(); err != nil {
		st.close()
		return nil, fmt.Errorf("reconcile node state: %w", err)
	}
	return n, nil
}

// Close releases the node database.
func (n *Node) Close() error { return n.st.close() }

// NodeGetInfo reports this node, its attach limit and its topology.
func (n *Node) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	return &driver.NodeInfo{NodeID: n.cfg.NodeID, MaxVolumesPerNode: n.cfg.MaxVolumesPerNode, AccessibleTopology: n.cfg.topology()}, nil
}

// backingOf finds a volume's backing on disk: the node needs no controller state.
func (n *Node) backingOf(id string) (kind, path string, err error) {
	if validID(id) && (strings.HasPrefix(id, "vol-") || strings.HasPrefix(id, "eph-")) {
		if _, err := os.Stat(n.l.volumeImage(id)); err == nil {
			return kindFile, n.l.volumeImage(id), nil
		}
		if fi, err := os.Stat(n.l.volumeDir(id)); err == nil && fi.IsDir() {
			return kindDir, n.l.volumeDir(id), nil
		}
	}
	return "", "", fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
}

func (n *Node) staged(id string) (*stagedRecord, error) {
	var rec stagedRecord
	err := n.st.view(func(tx *bolt.Tx) error { return getJSON(tx, bStaged, id, &rec) })
	if errors.Is(err, errNoRecord) {
		return nil, nil
	}
	return &rec, err
}

func (n *Node) published(id, target string) (*publishedRecord, error) {
	var rec publishedRecord
	err := n.st.view(func(tx *bolt.Tx) error { return getJSON(tx, bPublished, pubKey(id, target), &rec) })
	if errors.Is(err, errNoRecord) {
		return nil, nil
	}
	return &rec, err
}

// publications lists the targets where a volume is published.
func (n *Node) publications(id string) ([]publishedRecord, error) {
	var out []publishedRecord
	err := n.st.view(func(tx *bolt.Tx) error {
		prefix := []byte(id + "\x00")
		cur := tx.Bucket([]byte(bPublished)).Cursor()
		for k, v := cur.Seek(prefix); k != nil && strings.HasPrefix(string(k), string(prefix)); k, v = cur.Next() {
			var r publishedRecord
			if err := jsonDecode(v, &r); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

func fsTypeFor(cp driver.VolumeCapability, volumeContext map[string]string) string {
	switch {
	case cp.FSType != "":
		return cp.FSType
	case volumeContext[ParamFSType] != "":
		return volumeContext[ParamFSType]
	}
	return "ext4"
}

// isMounted reports whether path is a mount point.
func (n *Node) isMounted(path string) (bool, error) {
	m, err := mountAt(path)
	return m != nil, err
}

// NodeStageVolume makes the volume available at the staging path: a bind mount of a directory
// volume, or a loop device (formatted and mounted for filesystem access) of an image volume.
func (n *Node) NodeStageVolume(ctx context.Context, req *driver.NodeStageRequest) error {
	kind, backing, err := n.backingOf(req.VolumeID)
	if err != nil {
		return err
	}
	cp := req.Capability
	if err := capabilitiesFit(kind, req.VolumeContext[ParamFSType], []driver.VolumeCapability{cp}); err != nil && !(kind == kindFile && !cp.Block) {
		return err
	}
	want := stagedRecord{VolumeID: req.VolumeID, Path: req.StagingTargetPath, Kind: kind, Block: cp.Block, Mode: cp.AccessMode}
	if kind == kindFile && !cp.Block {
		want.FSType = fsTypeFor(cp, req.VolumeContext)
	}
	if cur, err := n.staged(req.VolumeID); err != nil {
		return err
	} else if cur != nil {
		if cur.Path != want.Path || cur.Block != want.Block || cur.FSType != want.FSType {
			return fmt.Errorf("volume %q is staged at %q with other settings: %w", req.VolumeID, cur.Path, driver.ErrAlreadyExists)
		}
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var undo []func()
	rollback := func(err error) error {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return err
	}
	if err := os.MkdirAll(req.StagingTargetPath, 0o750); err != nil {
		return fmt.Errorf("create staging path: %w", err)
	}
	mounted, err := n.isMounted(req.StagingTargetPath)
	if err != nil {
		return err
	}
	switch {
	case kind == kindDir:
		if !mounted {
			if err := n.mounter.Mount(backing, req.StagingTargetPath, "", []string{"bind"}); err != nil {
				return fmt.Errorf("bind-mount the volume at the staging path: %w", err)
			}
			undo = append(undo, func() { _ = n.mounter.Unmount(req.StagingTargetPath) })
		}
	default:
		existing, err := loopFor(backing)
		if err != nil {
			return err
		}
		dev, err := attachLoop(backing)
		if err != nil {
			return err
		}
		if existing == "" {
			undo = append(undo, func() { _ = detachLoops(backing) })
		}
		want.Device = dev
		if !cp.Block && !mounted {
			if err := n.growExtOffline(dev, req.StagingTargetPath); err != nil {
				return rollback(err)
			}
			// Mount flags may be sensitive (the spec says so): they go only to the kernel.
			if err := n.mounter.FormatAndMountSensitive(dev, req.StagingTargetPath, want.FSType, nil, cp.MountFlags); err != nil {
				return rollback(fmt.Errorf("format and mount %s as %s: %w", dev, want.FSType, err))
			}
			undo = append(undo, func() { _ = n.mounter.Unmount(req.StagingTargetPath) })
		}
	}
	if err := fail("node-stage:before-commit"); err != nil {
		return rollback(err)
	}
	if err := n.st.update(func(tx *bolt.Tx) error { return putJSON(tx, bStaged, want.VolumeID, &want) }); err != nil {
		return rollback(err)
	}
	return nil
}

// NodeUnstageVolume undoes NodeStageVolume from the kernel's state, not only the record, so it also
// cleans up after a stage that crashed before it committed.
func (n *Node) NodeUnstageVolume(ctx context.Context, req *driver.NodeUnstageRequest) error {
	kind, backing, err := n.backingOf(req.VolumeID)
	rec, rerr := n.staged(req.VolumeID)
	if rerr != nil {
		return rerr
	}
	if err != nil && rec == nil {
		return err
	}
	pubs, err := n.publications(req.VolumeID)
	if err != nil {
		return err
	}
	if len(pubs) > 0 {
		return fmt.Errorf("volume %q is still published at %s: %w", req.VolumeID, pubs[0].Target, driver.ErrFailedPrecondition)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if mounted, err := n.isMounted(req.StagingTargetPath); err != nil {
		return err
	} else if mounted {
		if err := n.mounter.Unmount(req.StagingTargetPath); err != nil {
			return fmt.Errorf("unmount staging path: %w", err)
		}
	}
	if kind == kindFile {
		if err := detachLoops(backing); err != nil {
			return err
		}
	}
	return n.st.update(func(tx *bolt.Tx) error { return del(tx, bStaged, req.VolumeID) })
}

// NodePublishVolume bind-mounts the staged volume (or its loop device, for block access) at the
// target path; inline ephemeral volumes are created here and deleted at unpublish.
func (n *Node) NodePublishVolume(ctx context.Context, req *driver.NodePublishRequest) error {
	if req.VolumeContext[ephemeralContextKey] == "true" {
		return n.publishEphemeral(req)
	}
	kind, _, err := n.backingOf(req.VolumeID)
	if err != nil {
		return err
	}
	st, err := n.staged(req.VolumeID)
	if err != nil {
		return err
	}
	if st == nil || st.Path != req.StagingTargetPath {
		return fmt.Errorf("volume %q is not staged at %q; call NodeStageVolume first: %w", req.VolumeID, req.StagingTargetPath, driver.ErrFailedPrecondition)
	}
	cp := req.Capability
	if cp.Block != st.Block {
		return fmt.Errorf("volume %q is staged for %s access: %w", req.VolumeID, accessName(st.Block), driver.ErrUnsupported)
	}
	want := publishedRecord{VolumeID: req.VolumeID, Target: req.TargetPath, Staging: req.StagingTargetPath,
		Readonly: req.Readonly, Block: cp.Block, Mode: cp.AccessMode}
	return n.publish(want, kind, st.Device, req.StagingTargetPath, cp.MountFlags)
}

func accessName(block bool) string {
	if block {
		return "block"
	}
	return "filesystem"
}

// publish mounts source at the target and commits the record, idempotently.
func (n *Node) publish(want publishedRecord, kind, device, staging string, flags []string) error {
	if cur, err := n.published(want.VolumeID, want.Target); err != nil {
		return err
	} else if cur != nil {
		if *cur != want {
			return fmt.Errorf("volume %q is published at %q with other settings: %w", want.VolumeID, want.Target, driver.ErrAlreadyExists)
		}
		return nil
	}
	others, err := n.publications(want.VolumeID)
	if err != nil {
		return err
	}
	if want.Mode == driver.SingleNodeSingleWriter && len(others) > 0 {
		return fmt.Errorf("volume %q is SINGLE_NODE_SINGLE_WRITER and already published at %s: %w", want.VolumeID, others[0].Target, driver.ErrFailedPrecondition)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	source := staging
	options := []string{"bind"}
	if want.Readonly {
		options = append(options, "ro")
	}
	created := false
	if want.Block {
		source = device
		if _, err := os.Stat(want.Target); errors.Is(err, os.ErrNotExist) {
			f, err := os.OpenFile(want.Target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("create block target: %w", err)
			}
			f.Close()
			created = true
		}
	} else {
		if _, err := os.Stat(want.Target); errors.Is(err, os.ErrNotExist) {
			created = true
		}
		if err := os.MkdirAll(want.Target, 0o750); err != nil {
			return fmt.Errorf("create target: %w", err)
		}
	}
	cleanup := func() {
		if created {
			os.Remove(want.Target)
		}
	}
	mounted, err := n.isMounted(want.Target)
	if err != nil {
		cleanup()
		return err
	}
	if !mounted {
		if err := n.mounter.MountSensitive(source, want.Target, "", options, flags); err != nil {
			cleanup()
			return fmt.Errorf("bind-mount at the target: %w", err)
		}
	}
	rollback := func(err error) error {
		_ = n.mounter.Unmount(want.Target)
		cleanup()
		return err
	}
	if err := fail("node-publish:before-commit"); err != nil {
		return rollback(err)
	}
	if err := n.st.update(func(tx *bolt.Tx) error { return putJSON(tx, bPublished, pubKey(want.VolumeID, want.Target), &want) }); err != nil {
		return rollback(err)
	}
	_ = kind
	return nil
}

// publishEphemeral creates a directory volume for an inline ephemeral volume and publishes it.
func (n *Node) publishEphemeral(req *driver.NodePublishRequest) error {
	if req.Capability.Block {
		return fmt.Errorf("inline ephemeral volumes are directories and cannot be block devices: %w", driver.ErrUnsupported)
	}
	id := ephemeralID(req.VolumeID)
	dir := n.l.volumeDir(id)
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create ephemeral volume: %w", err)
	}
	want := publishedRecord{VolumeID: id, Target: req.TargetPath, Readonly: req.Readonly, Mode: req.Capability.AccessMode, Ephemeral: true}
	err := n.publish(want, kindDir, "", dir, req.Capability.MountFlags)
	if err != nil {
		if pubs, perr := n.publications(id); perr == nil && len(pubs) == 0 {
			os.RemoveAll(dir)
		}
	}
	return err
}

// NodeUnpublishVolume unmounts the target and removes it. It works from the kernel's state, so it
// also cleans up after a publish that crashed before it committed, and it succeeds when there is
// nothing left to do.
func (n *Node) NodeUnpublishVolume(ctx context.Context, req *driver.NodeUnpublishRequest) error {
	id := req.VolumeID
	rec, err := n.published(id, req.TargetPath)
	if err != nil {
		return err
	}
	if rec == nil {
		if eph := ephemeralID(id); func() bool { r, _ := n.published(eph, req.TargetPath); return r != nil }() {
			id = eph
			rec, _ = n.published(eph, req.TargetPath)
		}
	}
	_, _, backErr := n.backingOf(id)
	if rec == nil && backErr != nil {
		if _, err := os.Lstat(req.TargetPath); errors.Is(err, os.ErrNotExist) {
			return nil // already unpublished
		}
		return backErr
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if mounted, err := n.isMounted(req.TargetPath); err != nil {
		return err
	} else if mounted {
		if err := n.mounter.Unmount(req.TargetPath); err != nil {
			return fmt.Errorf("unmount target: %w", err)
		}
	}
	if err := os.Remove(req.TargetPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove target: %w", err)
	}
	if err := n.st.update(func(tx *bolt.Tx) error { return del(tx, bPublished, pubKey(id, req.TargetPath)) }); err != nil {
		return err
	}
	if rec != nil && rec.Ephemeral {
		if pubs, err := n.publications(id); err == nil && len(pubs) == 0 {
			return removeAll(n.l.volumeDir(id))
		}
	}
	return nil
}

// pathOfVolume says whether path is where this volume is staged or published.
func (n *Node) pathOfVolume(id, path string) (staged *stagedRecord, pub *publishedRecord, err error) {
	st, err := n.staged(id)
	if err != nil {
		return nil, nil, err
	}
	if st != nil && filepath.Clean(st.Path) == filepath.Clean(path) {
		return st, nil, nil
	}
	p, err := n.published(id, path)
	if err != nil {
		return nil, nil, err
	}
	if p == nil {
		p, err = n.published(id, filepath.Clean(path))
	}
	return st, p, err
}

// NodeGetVolumeStats reports bytes and inodes of a mounted volume, or the size of a block one.
func (n *Node) NodeGetVolumeStats(ctx context.Context, req *driver.NodeGetVolumeStatsRequest) ([]driver.VolumeUsage, error) {
	if _, _, err := n.backingOf(req.VolumeID); err != nil {
		return nil, err
	}
	st, pub, err := n.pathOfVolume(req.VolumeID, req.VolumePath)
	if err != nil {
		return nil, err
	}
	onPath := pub != nil || (st != nil && filepath.Clean(st.Path) == filepath.Clean(req.VolumePath))
	if !onPath {
		return nil, fmt.Errorf("volume %q is not staged or published at %q: %w", req.VolumeID, req.VolumePath, driver.ErrNotFound)
	}
	if (pub != nil && pub.Block) || (pub == nil && st != nil && st.Block) {
		size, err := deviceSize(st.Device)
		if err != nil {
			return nil, err
		}
		return []driver.VolumeUsage{{Unit: driver.UsageBytes, Total: size}}, nil
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(req.VolumePath, &fs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", req.VolumePath, err)
	}
	bs := fs.Bsize
	return []driver.VolumeUsage{
		{Unit: driver.UsageBytes, Total: int64(fs.Blocks) * bs, Available: int64(fs.Bavail) * bs, Used: int64(fs.Blocks-fs.Bfree) * bs},
		{Unit: driver.UsageInodes, Total: int64(fs.Files), Available: int64(fs.Ffree), Used: int64(fs.Files - fs.Ffree)},
	}, nil
}

// NodeExpandVolume refreshes the loop device of an image volume and grows its filesystem.
// Directory volumes have nothing to grow on the node.
func (n *Node) NodeExpandVolume(ctx context.Context, req *driver.NodeExpandVolumeRequest) (int64, error) {
	kind, backing, err := n.backingOf(req.VolumeID)
	if err != nil {
		return 0, err
	}
	if kind == kindDir {
		return 0, nil
	}
	dev, err := loopFor(backing)
	if err != nil {
		return 0, err
	}
	if dev == "" {
		return 0, fmt.Errorf("volume %q is not staged on this node: %w", req.VolumeID, driver.ErrFailedPrecondition)
	}
	if err := refreshLoopCapacity(dev); err != nil {
		return 0, err
	}
	size, err := deviceSize(dev)
	if err != nil {
		return 0, err
	}
	if req.Capacity.RequiredBytes > size {
		return 0, fmt.Errorf("volume %q has %d bytes, less than the %d asked for; expand it on the controller first: %w", req.VolumeID, size, req.Capacity.RequiredBytes, driver.ErrOutOfRange)
	}
	st, err := n.staged(req.VolumeID)
	if err != nil {
		return 0, err
	}
	if st != nil && !st.Block {
		if isExt(st.FSType) && !hasCapability(capSysResource) {
			return 0, fmt.Errorf("growing a mounted %s file system needs CAP_SYS_RESOURCE, which this plugin lacks; "+
				"it grows when the volume is next staged: %w", st.FSType, driver.ErrFailedPrecondition)
		}
		if _, err := n.resizer.Resize(dev, st.Path); err != nil {
			return 0, fmt.Errorf("grow the %s filesystem: %w", st.FSType, err)
		}
	}
	return size, nil
}

// NodeGetVolumeHealth reports a volume whose backing or mounts are gone.
func (n *Node) NodeGetVolumeHealth(ctx context.Context, req *driver.NodeGetVolumeHealthRequest) (*driver.VolumeHealth, error) {
	h := &driver.VolumeHealth{VolumeID: req.VolumeID}
	if _, _, err := n.backingOf(req.VolumeID); err != nil {
		return nil, err
	}
	pubs, err := n.publications(req.VolumeID)
	if err != nil {
		return nil, err
	}
	for _, p := range pubs {
		if req.VolumePublishPath != "" && filepath.Clean(req.VolumePublishPath) != p.Target {
			continue
		}
		if ok, err := n.isMounted(p.Target); err == nil && !ok {
			h.Conditions = append(h.Conditions, driver.HealthCondition{Status: driver.HealthInaccessible, Reason: "MountMissing",
				Message: "the volume is no longer mounted at its target path"})
			break
		}
	}
	return h, nil
}

// NodeGetStorageHealth reports the state directory's file system degraded above 90% use.
func (n *Node) NodeGetStorageHealth(ctx context.Context, _ *driver.NodeGetStorageHealthRequest) ([]driver.StorageHealth, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(n.l.root, &fs); err != nil {
		return []driver.StorageHealth{{Status: driver.StorageUnreachable, Reason: "StateDirUnreachable", Message: err.Error()}}, nil
	}
	if fs.Blocks > 0 && (fs.Blocks-fs.Bavail)*10 > fs.Blocks*9 {
		return []driver.StorageHealth{{Status: driver.StorageDegraded, Reason: "StateDirAlmostFull", Message: "more than 90% of the state directory's file system is used"}}, nil
	}
	return nil, nil
}

// reconcile drops records of mounts that are gone and detaches this driver's unused loop devices.
func (n *Node) reconcile() error {
	var staged []stagedRecord
	var published []publishedRecord
	err := n.st.view(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte(bStaged)).ForEach(func(_, v []byte) error {
			var r stagedRecord
			if err := jsonDecode(v, &r); err != nil {
				return err
			}
			staged = append(staged, r)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket([]byte(bPublished)).ForEach(func(_, v []byte) error {
			var r publishedRecord
			if err := jsonDecode(v, &r); err != nil {
				return err
			}
			published = append(published, r)
			return nil
		})
	})
	if err != nil {
		return err
	}
	var dropStaged, dropPublished []string
	for _, p := range published {
		if ok, err := n.isMounted(p.Target); err != nil {
			return err
		} else if !ok {
			dropPublished = append(dropPublished, pubKey(p.VolumeID, p.Target))
		}
	}
	for _, s := range staged {
		if s.Block {
			if dev, err := loopFor(n.l.volumeImage(s.VolumeID)); err != nil {
				return err
			} else if dev == "" {
				dropStaged = append(dropStaged, s.VolumeID)
			}
			continue
		}
		if ok, err := n.isMounted(s.Path); err != nil {
			return err
		} else if !ok {
			dropStaged = append(dropStaged, s.VolumeID)
		}
	}
	if len(dropStaged)+len(dropPublished) > 0 {
		n.log.Info("dropping records of mounts that are gone", zap.Strings("staged", dropStaged), zap.Int("published", len(dropPublished)))
		err := n.st.update(func(tx *bolt.Tx) error {
			for _, k := range dropStaged {
				if err := del(tx, bStaged, k); err != nil {
					return err
				}
			}
			for _, k := range dropPublished {
				if err := del(tx, bPublished, k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	keep := map[string]bool{}
	for _, s := range staged {
		if !slices.Contains(dropStaged, s.VolumeID) {
			keep[n.l.volumeImage(s.VolumeID)] = true
		}
	}
	// Loop devices on this driver's images that no staged record explains and no mount uses:
	// left by a stage that crashed before it committed.
	devices, err := loopDevices()
	if err != nil {
		return err
	}
	infos, err := mountInfos()
	if err != nil {
		return err
	}
	for backing, devs := range devices {
		if !within(backing, n.l.volumesDir()) || keep[backing] {
			continue
		}
		for _, dev := range devs {
			if deviceMounted(infos, dev) {
				continue // a stage interrupted after mounting: its retry or unstage will adopt it
			}
			n.log.Info("detaching an unused loop device", zap.String("device", dev), zap.String("backing", backing))
			if err := detachLoop(dev); err != nil {
				return err
			}
		}
	}
	// Ephemeral volumes without a publication: a publish that crashed before it committed.
	shardDirs, err := shards(n.l.volumesDir())
	if err != nil {
		return err
	}
	var ephemeral []string
	for _, sd := range shardDirs {
		entries, err := os.ReadDir(sd)
		if err != nil {
			return fmt.Errorf("read %s: %w", sd, err)
		}
		for _, e := range entries {
			if validID(e.Name()) && strings.HasPrefix(e.Name(), "eph-") {
				ephemeral = append(ephemeral, e.Name())
			}
		}
	}
	for _, id := range ephemeral {
		pubs, err := n.publications(id)
		if err != nil {
			return err
		}
		if len(pubs) == 0 {
			if points, err := bindMountsOf(n.l.volumeDir(id)); err == nil && len(points) == 0 {
				if err := removeAll(n.l.volumeDir(id)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func deviceMounted(infos []mount.MountInfo, dev string) bool {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return false
	}
	major, minor := int(unix.Major(st.Rdev)), int(unix.Minor(st.Rdev))
	for _, m := range infos {
		if m.Source == dev || (m.Major == major && m.Minor == minor) {
			return true
		}
	}
	return false
}
