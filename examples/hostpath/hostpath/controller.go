package hostpath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/csikit/csikit/driver"
)

// imageGranularity aligns image sizes to the block size filesystems and loop devices use.
const imageGranularity = 4096

// minFilesystemSize is the smallest image each file system is made on. mkfs.xfs refuses less
// than 300 MiB since xfsprogs 5.19 ("Filesystem must be larger than 300MB"); ext4 and ext3 fit
// in a few hundred KiB.
var minFilesystemSize = map[string]int64{"xfs": 300 << 20}

// failpoint lets tests inject a failure between the steps of an operation, to prove that a failed
// operation leaves nothing half-done. It is nil outside tests.
var failpoint func(name string) error

func fail(name string) error {
	if failpoint == nil {
		return nil
	}
	return failpoint(name)
}

// Controller is the controller side of the driver: it owns volumes, snapshots and group
// snapshots, and their records in the controller database.
type Controller struct {
	cfg Config
	l   layout
	st  *store
	log *zap.Logger
	// purges counts the trash entries of committed deletes still being removed.
	purges sync.WaitGroup
	// listed caches listing entries; listTopology is the topology every listed volume shares.
	listed       *listCache
	listTopology []driver.Topology
	// nodeInUse, when the node runs in the same process, names where the node's records have a
	// volume staged or published ("" if nowhere): a delete is refused even if the kernel's
	// tables were to miss the mount.
	nodeInUse func(id string) (string, error)
}

// NewController opens (or creates) the controller state under cfg.StateDir and reconciles it
// with what is on disk: backings without a record (a create cut short) are removed, records
// whose delete was cut short are dropped, and the empty backing of a volume whose create
// committed just before a crash of the machine is made again (see reconcile).
func NewController(cfg Config) (*Controller, error) {
	l, err := open(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.NodeID == "" {
		return nil, errors.New("node ID is required: volumes are local to one node")
	}
	st, err := openStore(filepath.Join(l.root, "controller.db"), controllerBuckets...)
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, l: l, st: st, log: cfg.Logger, listed: newListCache(), listTopology: []driver.Topology{cfg.topology()}}
	if err := c.reconcile(); err != nil {
		st.close()
		return nil, fmt.Errorf("reconcile state: %w", err)
	}
	return c, nil
}

// Close waits for the removal of deleted volumes' trash entries, then releases the state
// database.
func (c *Controller) Close() error {
	c.purges.Wait()
	return c.st.close()
}

// Probe reports ready once the state is open.
func (c *Controller) Probe(context.Context) (bool, error) { return true, nil }

func (c *Controller) volume(id string) (*volumeRecord, error) {
	if !validID(id) || !strings.HasPrefix(id, "vol-") {
		return nil, fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
	}
	var rec volumeRecord
	err := c.st.view(func(tx *bolt.Tx) error { return getJSON(tx, bVolumes, id, &rec) })
	if errors.Is(err, errNoRecord) {
		return nil, fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

func (c *Controller) snapshot(id string) (*snapshotRecord, error) {
	if !validID(id) || !strings.HasPrefix(id, "snap-") {
		return nil, fmt.Errorf("snapshot %q: %w", id, driver.ErrNotFound)
	}
	var rec snapshotRecord
	err := c.st.view(func(tx *bolt.Tx) error { return getJSON(tx, bSnapshots, id, &rec) })
	if errors.Is(err, errNoRecord) {
		return nil, fmt.Errorf("snapshot %q: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

func (c *Controller) public(rec *volumeRecord) *driver.Volume {
	ctx := map[string]string{volumeContextKind: rec.Kind}
	if rec.FSType != "" {
		ctx[ParamFSType] = rec.FSType
	}
	return &driver.Volume{
		ID:                 rec.ID,
		CapacityBytes:      rec.Size,
		Context:            ctx,
		Source:             rec.Source,
		AccessibleTopology: []driver.Topology{c.cfg.topology()},
	}
}

// chooseKind picks the backing from the capabilities and parameters.
func chooseKind(caps []driver.VolumeCapability, params map[string]string) (kind, fsType string, err error) {
	block, fsRequested := false, ""
	for _, c := range caps {
		if c.Block {
			block = true
		} else if c.FSType != "" {
			if fsRequested != "" && fsRequested != c.FSType {
				return "", "", fmt.Errorf("capabilities ask for two filesystems, %q and %q: %w", fsRequested, c.FSType, driver.ErrUnsupported)
			}
			fsRequested = c.FSType
		}
	}
	if p := params[ParamFSType]; p != "" {
		fsRequested = p
	}
	hasMount := slices.ContainsFunc(caps, func(c driver.VolumeCapability) bool { return !c.Block })
	switch params[ParamKind] {
	case "":
		kind = kindDir
		if block || fsRequested != "" {
			kind = kindFile
		}
	case kindDir:
		if block {
			return "", "", fmt.Errorf("kind %q cannot serve block access: %w", kindDir, driver.ErrUnsupported)
		}
		kind = kindDir
	case kindFile:
		kind = kindFile
	default:
		return "", "", fmt.Errorf("parameter %s=%q: want %q or %q: %w", ParamKind, params[ParamKind], kindDir, kindFile, driver.ErrInvalidArgument)
	}
	if kind == kindFile && hasMount {
		fsType = fsRequested
		if fsType == "" {
			fsType = "ext4"
		}
		if fsType != "ext4" && fsType != "ext3" && fsType != "xfs" {
			return "", "", fmt.Errorf("filesystem %q is not supported (ext4, ext3, xfs): %w", fsType, driver.ErrUnsupported)
		}
	} else if kind == kindDir && fsRequested != "" {
		return "", "", fmt.Errorf("directory volumes have the host's filesystem, not %q: %w", fsRequested, driver.ErrUnsupported)
	}
	return kind, fsType, nil
}

// checkParameters refuses StorageClass parameters this driver does not know, so a typo is an error
// instead of a silently ignored setting. Keys the external-provisioner adds are accepted.
func checkParameters(params map[string]string) error {
	for _, k := range sortedKeys(params) {
		if k == ParamKind || k == ParamFSType || k == ParamVolumeGroup || k == ParamVolumeGroupOperator || strings.HasPrefix(k, "csi.storage.k8s.io/") {
			continue
		}
		return fmt.Errorf("parameter %q is not known to this driver (known: %s, %s, %s, %s): %w", k, ParamKind, ParamFSType, ParamVolumeGroup, ParamVolumeGroupOperator, driver.ErrInvalidArgument)
	}
	return nil
}

func (c *Controller) checkMutable(params map[string]string) error {
	for _, k := range sortedKeys(params) {
		if !slices.Contains(c.cfg.MutableParameters, k) {
			return fmt.Errorf("mutable parameter %q is not supported (allowed: %s): %w", k, strings.Join(c.cfg.MutableParameters, ", "), driver.ErrInvalidArgument)
		}
	}
	return nil
}

// topologyMatches reports whether t (from a requirement) selects this node.
func (c *Controller) topologyMatches(t driver.Topology) bool {
	ours := c.cfg.topology()
	for k, v := range t {
		if ours[k] != v {
			return false
		}
	}
	return true
}

func (c *Controller) checkTopology(req *driver.TopologyRequirement) error {
	if req == nil {
		return nil
	}
	for _, t := range append(slices.Clone(req.Requisite), req.Preferred...) {
		if c.topologyMatches(t) {
			return nil
		}
	}
	return fmt.Errorf("this driver provisions only on node %q, which the topology requirement excludes: %w", c.cfg.NodeID, driver.ErrResourceExhausted)
}

// CreateVolume creates a directory or image file, from a snapshot or volume when asked, and
// commits its record. A failure at any step removes what was made.
func (c *Controller) CreateVolume(ctx context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	fp := req.Fingerprint()
	existing, err := byName[volumeRecord](c.st, bVolumeNames, bVolumes, req.Name)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		vol := c.public(existing)
		if err := req.CheckExisting(existing.Fingerprint, vol); err != nil {
			return nil, err
		}
		return vol, nil
	}
	if err := checkParameters(req.Parameters); err != nil {
		return nil, err
	}
	if err := c.checkMutable(req.MutableParameters); err != nil {
		return nil, err
	}
	if err := c.checkTopology(req.Topology); err != nil {
		return nil, err
	}
	var groupID string
	ref, ok, err := joinParameter(req.Parameters)
	if err != nil {
		return nil, err
	}
	if ok {
		// Resolved before anything is made, so a wrong group costs no backing; the commit
		// checks it again.
		if groupID, err = c.resolveVolumeGroup(ref); err != nil {
			return nil, err
		}
	}
	kind, fsType, err := chooseKind(req.Capabilities, req.Parameters)
	if err != nil {
		return nil, err
	}
	granularity := int64(1)
	if kind == kindFile {
		granularity = imageGranularity
	}
	size, err := req.Capacity.Resolve(c.cfg.DefaultVolumeSize, granularity)
	if err != nil {
		return nil, err
	}
	if least := minFilesystemSize[fsType]; kind == kindFile && size < least {
		// CSI lets a plugin grant more than required; a volume too small to format would
		// only fail later, at NodeStageVolume, where nothing can be done about it.
		if req.Capacity.LimitBytes != 0 && req.Capacity.LimitBytes < least {
			return nil, fmt.Errorf("an %s file system needs at least %d bytes, more than the limit of %d: %w", fsType, least, req.Capacity.LimitBytes, driver.ErrOutOfRange)
		}
		size = least
	}

	// A source decides the backing: a restore or clone keeps the format of its origin.
	var srcPath string
	var srcSize int64
	switch {
	case req.Source.SnapshotID != "":
		snap, err := c.snapshot(req.Source.SnapshotID)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		srcPath, srcSize = c.l.snapshotBacking(snap.Kind, snap.ID), snap.Size
		if kind, fsType, err = compatibleSource(kind, fsType, snap.Kind, snap.FSType, req.Parameters, req.Capabilities); err != nil {
			return nil, err
		}
	case req.Source.VolumeID != "":
		src, err := c.volume(req.Source.VolumeID)
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		srcPath, srcSize = c.l.backing(src.Kind, src.ID), src.Size
		if kind, fsType, err = compatibleSource(kind, fsType, src.Kind, src.FSType, req.Parameters, req.Capabilities); err != nil {
			return nil, err
		}
	}
	if size < srcSize {
		if req.Capacity.LimitBytes != 0 && req.Capacity.LimitBytes < srcSize {
			return nil, fmt.Errorf("the source has %d bytes, more than the limit of %d: %w", srcSize, req.Capacity.LimitBytes, driver.ErrOutOfRange)
		}
		size = srcSize
	}
	if size > c.cfg.MaxVolumeSize {
		return nil, fmt.Errorf("%d bytes is more than the largest volume, %d bytes: %w", size, c.cfg.MaxVolumeSize, driver.ErrOutOfRange)
	}

	rec := &volumeRecord{
		ID: newID("vol"), Name: req.Name, Fingerprint: fp, Kind: kind, FSType: fsType, Size: size,
		Mutable: maps.Clone(req.MutableParameters), Source: req.Source, Created: time.Now().UTC(),
	}
	backing := c.l.backing(kind, rec.ID)
	if err := makeBacking(kind, backing, srcPath, size); err != nil {
		return nil, err
	}
	undo := func(err error) (*driver.Volume, error) {
		if rerr := removeAll(backing); rerr != nil {
			c.log.Error("cannot remove the backing of a failed create", zap.String("volume", rec.ID), zap.Error(rerr))
		}
		return nil, err
	}
	if err := fail("create-volume:after-backing"); err != nil {
		return undo(err)
	}
	// A copy is made durable before its record; an empty new backing is not synced: if a crash
	// of the machine takes it away after the commit, the start-up makes it again (trash.go).
	if srcPath != "" {
		if err := c.l.persistCopy(backing); err != nil {
			return undo(err)
		}
	}
	err = c.st.update(func(tx *bolt.Tx) error {
		if getString(tx, bVolumeNames, rec.Name) != "" {
			return fmt.Errorf("volume %q was created concurrently: %w", rec.Name, driver.ErrPending)
		}
		if used := counter(tx, bMeta, metaUsed); used+size > c.cfg.CapacityBytes {
			return fmt.Errorf("%d bytes requested, %d free: %w", size, c.cfg.CapacityBytes-used, driver.ErrResourceExhausted)
		}
		if groupID != "" {
			if err := c.checkJoin(tx, groupID, 1); err != nil {
				return err
			}
		}
		if err := putJSON(tx, bVolumes, rec.ID, rec); err != nil {
			return err
		}
		if err := putString(tx, bVolumeNames, rec.Name, rec.ID); err != nil {
			return err
		}
		if groupID != "" {
			if err := join(tx, groupID, rec.ID); err != nil {
				return err
			}
		}
		return addCounter(tx, bMeta, metaUsed, size)
	})
	if err != nil {
		return undo(err)
	}
	return c.public(rec), nil
}

// compatibleSource adopts the source's backing: data cannot move between a directory and a
// formatted image. What the request says explicitly (the kind or filesystem parameter, a
// capability's fs_type) must match the source; it is refused, not ignored, when it does not.
func compatibleSource(kind, fsType, srcKind, srcFSType string, params map[string]string, caps []driver.VolumeCapability) (string, string, error) {
	if p := params[ParamKind]; p != "" && p != srcKind {
		return "", "", fmt.Errorf("parameter %s=%q does not match the source, a %q volume: %w", ParamKind, p, srcKind, driver.ErrUnsupported)
	}
	hasMount := slices.ContainsFunc(caps, func(c driver.VolumeCapability) bool { return !c.Block })
	if p := params[ParamFSType]; p != "" && hasMount && p != srcFSType {
		if srcFSType == "" {
			return "", "", fmt.Errorf("parameter %s=%q does not match the source, which has no filesystem of its own: %w", ParamFSType, p, driver.ErrUnsupported)
		}
		return "", "", fmt.Errorf("parameter %s=%q does not match the source's filesystem %q: %w", ParamFSType, p, srcFSType, driver.ErrUnsupported)
	}
	if srcKind == kind && srcFSType == fsType {
		return kind, fsType, nil
	}
	for _, c := range caps {
		switch {
		case c.Block && srcKind != kindFile:
			return "", "", fmt.Errorf("the source is a directory volume and cannot be used for block access: %w", driver.ErrUnsupported)
		case !c.Block && srcKind == kindFile && srcFSType == "":
			return "", "", fmt.Errorf("the source is a raw block volume and cannot be mounted: %w", driver.ErrUnsupported)
		case !c.Block && c.FSType != "" && c.FSType != srcFSType:
			return "", "", fmt.Errorf("the source has filesystem %q, not %q: %w", srcFSType, c.FSType, driver.ErrUnsupported)
		}
	}
	return srcKind, srcFSType, nil
}

// makeBacking creates the directory or image file, copying src when given.
func makeBacking(kind, path, src string, size int64) error {
	switch {
	case kind == kindDir && src == "":
		if err := os.Mkdir(path, 0o750); err != nil {
			return fmt.Errorf("create volume directory: %w", err)
		}
	case kind == kindDir:
		if err := copyTree(src, path); err != nil {
			os.RemoveAll(path)
			return fmt.Errorf("copy source: %w", err)
		}
	case src == "":
		return createImage(path, size)
	default:
		return copyImage(src, path, size)
	}
	return nil
}

// DeleteVolume empties the backing in the trash, commits the record's delete, then removes what
// is left (trash.go says why in that order). A volume still published or in use on this host is
// refused with ErrInUse and left untouched.
func (c *Controller) DeleteVolume(ctx context.Context, req *driver.DeleteVolumeRequest) error {
	rec, err := c.volume(req.VolumeID)
	if err != nil {
		return err
	}
	// A member goes with its group (DeleteVolumeGroup) or leaves it first: deleting it alone
	// would change what the group keeps consistent behind the CO's back.
	var group string
	if err := c.st.view(func(tx *bolt.Tx) error { group = getString(tx, bVolumeGroupOf, rec.ID); return nil }); err != nil {
		return err
	}
	if group != "" {
		return fmt.Errorf("volume %q is a member of volume group %q; remove it from the group first: %w", rec.ID, group, driver.ErrInUse)
	}
	if err := c.checkUnused(rec); err != nil {
		return err
	}
	// discard never deletes through a mount: one made inside the volume since the check above
	// stops it with ErrInUse, and the volume is put back.
	if err := c.l.discard(rec.Kind, rec.ID); err != nil {
		return err
	}
	if err := fail("delete-volume:after-backing"); err != nil {
		return err
	}
	err = c.st.update(func(tx *bolt.Tx) error {
		var cur volumeRecord
		if err := getJSON(tx, bVolumes, rec.ID, &cur); errors.Is(err, errNoRecord) {
			return nil
		} else if err != nil {
			return err
		}
		if err := del(tx, bVolumes, cur.ID); err != nil {
			return err
		}
		if err := del(tx, bVolumeNames, cur.Name); err != nil {
			return err
		}
		return addCounter(tx, bMeta, metaUsed, -cur.Size)
	})
	if err != nil {
		return err
	}
	// The delete is durable: the emptied entry (an empty directory, or an image whose blocks
	// take time to free) is removed after the answer, and if a crash comes first, at the next
	// start. The rmdir here was about a sixth of a delete (0.3 of 1.8 ms).
	c.purges.Add(1)
	go func() {
		defer c.purges.Done()
		if err := c.l.purge(rec.Kind, rec.ID); err != nil {
			c.log.Warn("cannot remove a deleted volume's trash entry; the next start does", zap.String("volume", rec.ID), zap.Error(err))
		}
	}()
	return nil
}

// checkUnused returns ErrInUse when the volume is published, or staged or mounted on this host.
func (c *Controller) checkUnused(rec *volumeRecord) error {
	if len(rec.Published) > 0 {
		return fmt.Errorf("volume %q is published on node %s: %w", rec.ID, strings.Join(sortedKeys(rec.Published), ", "), driver.ErrInUse)
	}
	if c.nodeInUse != nil {
		if where, err := c.nodeInUse(rec.ID); err != nil {
			return err
		} else if where != "" {
			return fmt.Errorf("volume %q is in use on this node at its %s: %w", rec.ID, where, driver.ErrInUse)
		}
	}
	if where, err := backingInUse(rec.Kind, c.l.backing(rec.Kind, rec.ID)); err != nil {
		return err
	} else if where != "" {
		return fmt.Errorf("volume %q is in use at %s: %w", rec.ID, where, driver.ErrInUse)
	}
	return nil
}

// ValidateVolumeCapabilities confirms what the backing can serve.
func (c *Controller) ValidateVolumeCapabilities(ctx context.Context, req *driver.ValidateVolumeCapabilitiesRequest) error {
	rec, err := c.volume(req.VolumeID)
	if err != nil {
		return err
	}
	if err := checkParameters(req.Parameters); err != nil {
		return fmt.Errorf("%v: %w", err, driver.ErrUnsupported)
	}
	if len(req.VolumeContext) > 0 && !maps.Equal(req.VolumeContext, c.public(rec).Context) {
		return fmt.Errorf("volume_context does not match volume %q: %w", rec.ID, driver.ErrUnsupported)
	}
	return capabilitiesFit(rec.Kind, rec.FSType, req.Capabilities)
}

func capabilitiesFit(kind, fsType string, caps []driver.VolumeCapability) error {
	for _, cp := range caps {
		switch {
		case cp.Block && kind != kindFile:
			return fmt.Errorf("a directory volume cannot be used as a block device: %w", driver.ErrUnsupported)
		case !cp.Block && kind == kindFile && fsType == "":
			return fmt.Errorf("a raw block volume cannot be mounted: %w", driver.ErrUnsupported)
		case !cp.Block && cp.FSType != "" && kind == kindFile && cp.FSType != fsType:
			return fmt.Errorf("the volume has filesystem %q, not %q: %w", fsType, cp.FSType, driver.ErrUnsupported)
		case !cp.Block && cp.FSType != "" && kind == kindDir:
			return fmt.Errorf("a directory volume has the host's filesystem, not %q: %w", cp.FSType, driver.ErrUnsupported)
		}
	}
	return nil
}

// ControllerPublishVolume records the attachment to this driver's one node, enforcing the
// attach limit.
func (c *Controller) ControllerPublishVolume(ctx context.Context, req *driver.ControllerPublishVolumeRequest) (map[string]string, error) {
	rec, err := c.volume(req.VolumeID)
	if err != nil {
		return nil, err
	}
	if req.NodeID != c.cfg.NodeID {
		return nil, fmt.Errorf("node %q (this driver serves node %q): %w", req.NodeID, c.cfg.NodeID, driver.ErrNotFound)
	}
	if err := capabilitiesFit(rec.Kind, rec.FSType, []driver.VolumeCapability{req.Capability}); err != nil {
		return nil, err
	}
	want := pubRecord{Readonly: req.Readonly, Mode: req.Capability.AccessMode, Block: req.Capability.Block}
	publishContext := map[string]string{volumeContextKind: rec.Kind}
	err = c.st.update(func(tx *bolt.Tx) error {
		var cur volumeRecord
		if err := getJSON(tx, bVolumes, rec.ID, &cur); errors.Is(err, errNoRecord) {
			return fmt.Errorf("volume %q: %w", rec.ID, driver.ErrNotFound)
		} else if err != nil {
			return err
		}
		// A group delete has checked that no member is published and is removing them.
		if err := notBeingDeleted(tx, cur.ID); err != nil {
			return err
		}
		if p, ok := cur.Published[req.NodeID]; ok {
			if p != want {
				return fmt.Errorf("volume %q is published on node %q with other settings: %w", cur.ID, req.NodeID, driver.ErrAlreadyExists)
			}
			return nil
		}
		if len(cur.Published) > 0 && !req.Capability.AccessMode.MultiNode() {
			return fmt.Errorf("volume %q is published on node %s and its access mode allows one node: %w",
				cur.ID, strings.Join(sortedKeys(cur.Published), ", "), driver.ErrFailedPrecondition)
		}
		key := metaAttachedPrefix + req.NodeID
		if max := c.cfg.MaxVolumesPerNode; max > 0 && counter(tx, bMeta, key) >= max {
			return fmt.Errorf("node %q has %d volumes attached, its limit: %w", req.NodeID, max, driver.ErrResourceExhausted)
		}
		if cur.Published == nil {
			cur.Published = map[string]pubRecord{}
		}
		cur.Published[req.NodeID] = want
		if err := putJSON(tx, bVolumes, cur.ID, &cur); err != nil {
			return err
		}
		return addCounter(tx, bMeta, key, 1)
	})
	if err != nil {
		return nil, err
	}
	return publishContext, nil
}

// ControllerUnpublishVolume drops the attachment to one node, or to all.
func (c *Controller) ControllerUnpublishVolume(ctx context.Context, req *driver.ControllerUnpublishVolumeRequest) error {
	if _, err := c.volume(req.VolumeID); err != nil {
		return err
	}
	return c.st.update(func(tx *bolt.Tx) error {
		var cur volumeRecord
		if err := getJSON(tx, bVolumes, req.VolumeID, &cur); errors.Is(err, errNoRecord) {
			return nil
		} else if err != nil {
			return err
		}
		nodes := []string{req.NodeID}
		if req.NodeID == "" {
			nodes = sortedKeys(cur.Published)
		}
		changed := false
		for _, n := range nodes {
			if _, ok := cur.Published[n]; !ok {
				continue
			}
			delete(cur.Published, n)
			changed = true
			if err := addCounter(tx, bMeta, metaAttachedPrefix+n, -1); err != nil {
				return err
			}
		}
		if !changed {
			return nil
		}
		return putJSON(tx, bVolumes, cur.ID, &cur)
	})
}

func (c *Controller) entry(rec *volumeRecord) driver.VolumeEntry {
	return driver.VolumeEntry{Volume: *c.public(rec), PublishedNodeIDs: sortedKeys(rec.Published)}
}

// ListVolumesPage seeks to the cursor in the ID-ordered bucket: one page costs O(page). Entries
// come from the listing cache while their records are unchanged (see listCache).
func (c *Controller) ListVolumesPage(ctx context.Context, req *driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	var out []driver.VolumeEntry
	if req.Limit > 0 {
		out = make([]driver.VolumeEntry, 0, req.Limit)
	}
	end := false
	err := c.st.view(func(tx *bolt.Tx) error {
		cur := tx.Bucket([]byte(bVolumes)).Cursor()
		k, v := cur.Seek([]byte(req.After))
		if req.After != "" && bytes.Equal(k, []byte(req.After)) {
			k, v = cur.Next()
		}
		for ; k != nil && (req.Limit == 0 || len(out) < req.Limit); k, v = cur.Next() {
			sum := c.listed.sum(v)
			e := c.listed.get(k, sum)
			if e == nil {
				var rec volumeRecord
				if err := jsonDecode(v, &rec); err != nil {
					return err
				}
				e = c.listEntry(&rec)
				c.listed.put(sum, e)
			}
			out = append(out, *e)
		}
		end = k == nil
		return nil
	})
	if end {
		c.listed.endOfPass()
	}
	return out, err
}

// listEntry is the listing entry of a volume, to be cached and shared: it and its maps and slices
// are never modified. The volume context maps are shared by all volumes of one kind and file
// system, the topology by all volumes.
func (c *Controller) listEntry(rec *volumeRecord) *driver.VolumeEntry {
	vol := c.public(rec)
	vol.Context = c.listed.context(rec.Kind, rec.FSType, vol.Context)
	vol.AccessibleTopology = c.listTopology
	return &driver.VolumeEntry{Volume: *vol, PublishedNodeIDs: sortedKeys(rec.Published)}
}

// GetCapacity reports the pool's free bytes for this node's topology (0 for any other).
func (c *Controller) GetCapacity(ctx context.Context, req *driver.GetCapacityRequest) (*driver.Capacity, error) {
	if len(req.Topology) > 0 && !c.topologyMatches(req.Topology) {
		return &driver.Capacity{}, nil
	}
	var used int64
	if err := c.st.view(func(tx *bolt.Tx) error { used = counter(tx, bMeta, metaUsed); return nil }); err != nil {
		return nil, err
	}
	free := max(c.cfg.CapacityBytes-used, 0)
	return &driver.Capacity{AvailableBytes: free, MaximumVolumeSize: min(c.cfg.MaxVolumeSize, free)}, nil
}

// ControllerExpandVolume grows the record and, for image volumes, the file. Image volumes then
// need the node to refresh the loop device and grow the filesystem.
func (c *Controller) ControllerExpandVolume(ctx context.Context, req *driver.ControllerExpandVolumeRequest) (int64, bool, error) {
	rec, err := c.volume(req.VolumeID)
	if err != nil {
		return 0, false, err
	}
	if req.Capability != nil {
		if err := capabilitiesFit(rec.Kind, rec.FSType, []driver.VolumeCapability{*req.Capability}); err != nil {
			return 0, false, err
		}
	}
	granularity := int64(1)
	if rec.Kind == kindFile {
		granularity = imageGranularity
	}
	size, err := req.Capacity.Resolve(rec.Size, granularity)
	if err != nil {
		return 0, false, err
	}
	nodeExpansion := rec.Kind == kindFile
	if size <= rec.Size {
		if !req.Capacity.Contains(rec.Size) {
			return 0, false, fmt.Errorf("volume %q has %d bytes and cannot shrink to %d: %w", rec.ID, rec.Size, req.Capacity.LimitBytes, driver.ErrOutOfRange)
		}
		// A retry after a grow that committed but did not reach the image: finish it.
		if err := c.growImage(rec); err != nil {
			return 0, false, err
		}
		return rec.Size, nodeExpansion, nil
	}
	if size > c.cfg.MaxVolumeSize {
		return 0, false, fmt.Errorf("%d bytes is more than the largest volume, %d bytes: %w", size, c.cfg.MaxVolumeSize, driver.ErrOutOfRange)
	}
	// The space is reserved first and the image grown after, so a refused expansion leaves the
	// image as it was; a failed grow gives the reservation back, and one cut short by a crash is
	// finished by the reconciliation at start-up (images never shrink to a smaller record).
	oldSize := rec.Size
	err = c.st.update(func(tx *bolt.Tx) error {
		var cur volumeRecord
		if err := getJSON(tx, bVolumes, rec.ID, &cur); err != nil {
			return err
		}
		delta := size - cur.Size
		if delta <= 0 {
			return nil
		}
		if used := counter(tx, bMeta, metaUsed); used+delta > c.cfg.CapacityBytes {
			return fmt.Errorf("growing by %d bytes needs more than the %d free: %w", delta, c.cfg.CapacityBytes-used, driver.ErrResourceExhausted)
		}
		oldSize = cur.Size
		cur.Size = size
		if err := putJSON(tx, bVolumes, cur.ID, &cur); err != nil {
			return err
		}
		return addCounter(tx, bMeta, metaUsed, delta)
	})
	if err != nil {
		return 0, false, err
	}
	grown := *rec
	grown.Size = size
	if err := c.growImage(&grown); err != nil {
		if rerr := c.releaseGrowth(rec.ID, oldSize, size); rerr != nil {
			c.log.Error("cannot give back the space of a failed expansion; the next start recomputes it",
				zap.String("volume", rec.ID), zap.Error(rerr))
		}
		return 0, false, err
	}
	return size, nodeExpansion, nil
}

// growImage makes an image volume's file as large as its record says, never smaller.
func (c *Controller) growImage(rec *volumeRecord) error {
	if rec.Kind != kindFile {
		return nil
	}
	path := c.l.volumeImage(rec.ID)
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("grow image: %w", err)
	}
	if fi.Size() >= rec.Size {
		return nil
	}
	if err := os.Truncate(path, rec.Size); err != nil {
		return fmt.Errorf("grow image: %w", err)
	}
	return nil
}

// releaseGrowth undoes a committed expansion from oldSize to newSize whose image could not grow.
func (c *Controller) releaseGrowth(id string, oldSize, newSize int64) error {
	return c.st.update(func(tx *bolt.Tx) error {
		var cur volumeRecord
		if err := getJSON(tx, bVolumes, id, &cur); err != nil {
			return err
		}
		if cur.Size != newSize {
			return nil
		}
		cur.Size = oldSize
		if err := putJSON(tx, bVolumes, cur.ID, &cur); err != nil {
			return err
		}
		return addCounter(tx, bMeta, metaUsed, oldSize-newSize)
	})
}

// ControllerGetVolume returns one volume with its published nodes.
func (c *Controller) ControllerGetVolume(ctx context.Context, req *driver.ControllerGetVolumeRequest) (*driver.VolumeEntry, error) {
	rec, err := c.volume(req.VolumeID)
	if err != nil {
		return nil, err
	}
	e := c.entry(rec)
	return &e, nil
}

// ControllerModifyVolume applies allowed mutable parameters, all or none.
func (c *Controller) ControllerModifyVolume(ctx context.Context, req *driver.ControllerModifyVolumeRequest) error {
	if _, err := c.volume(req.VolumeID); err != nil {
		return err
	}
	if err := c.checkMutable(req.MutableParameters); err != nil {
		return err
	}
	return c.st.update(func(tx *bolt.Tx) error {
		var cur volumeRecord
		if err := getJSON(tx, bVolumes, req.VolumeID, &cur); errors.Is(err, errNoRecord) {
			return fmt.Errorf("volume %q: %w", req.VolumeID, driver.ErrNotFound)
		} else if err != nil {
			return err
		}
		if cur.Mutable == nil {
			cur.Mutable = map[string]string{}
		}
		maps.Copy(cur.Mutable, req.MutableParameters)
		return putJSON(tx, bVolumes, cur.ID, &cur)
	})
}

// health checks that the backing is still there.
func (c *Controller) health(rec *volumeRecord) driver.VolumeHealth {
	h := driver.VolumeHealth{VolumeID: rec.ID}
	if _, err := os.Stat(c.l.backing(rec.Kind, rec.ID)); err != nil {
		h.Conditions = append(h.Conditions, driver.HealthCondition{Status: driver.HealthInaccessible, Reason: "BackingMissing",
			Message: "the volume's directory or image file is gone"})
	}
	return h
}

// ControllerGetVolumeHealth reports one volume's health.
func (c *Controller) ControllerGetVolumeHealth(ctx context.Context, req *driver.ControllerGetVolumeHealthRequest) (*driver.VolumeHealth, error) {
	rec, err := c.volume(req.VolumeID)
	if err != nil {
		return nil, err
	}
	h := c.health(rec)
	return &h, nil
}

// ControllerListVolumeHealth reports every volume with an adverse condition.
func (c *Controller) ControllerListVolumeHealth(ctx context.Context, _ *driver.ControllerListVolumeHealthRequest) ([]driver.VolumeHealth, error) {
	var out []driver.VolumeHealth
	err := c.st.view(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bVolumes)).ForEach(func(_, v []byte) error {
			var rec volumeRecord
			if err := jsonDecode(v, &rec); err != nil {
				return err
			}
			if h := c.health(&rec); len(h.Conditions) > 0 {
				out = append(out, h)
			}
			return nil
		})
	})
	return out, err
}
