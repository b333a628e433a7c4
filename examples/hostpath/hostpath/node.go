package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/nodemount"
)

// Node buckets.
const (
	bStaged     = "staged"     // volume ID -> stagedRecord
	bPublished  = "published"  // volume ID + "\x00" + canonical target -> publishedRecord
	bFormatting = "formatting" // volume ID -> filesystem type: mkfs was started on the volume
)

type stagedRecord struct {
	VolumeID string `json:"volume"`
	// Path is the canonical staging path (see preparePath); Requested the path as the CO gave it.
	Path      string            `json:"path"`
	Requested string            `json:"requested,omitempty"`
	Kind      string            `json:"kind"`
	Block     bool              `json:"block"`
	FSType    string            `json:"fsType,omitempty"`
	Device    string            `json:"device,omitempty"`
	Mode      driver.AccessMode `json:"mode"`
}

type publishedRecord struct {
	VolumeID string `json:"volume"`
	// Target is the canonical target path (see preparePath); Requested the path as the CO gave it.
	Target    string            `json:"target"`
	Requested string            `json:"requested,omitempty"`
	Staging   string            `json:"staging,omitempty"`
	Readonly  bool              `json:"ro"`
	Block     bool              `json:"block"`
	Mode      driver.AccessMode `json:"mode"`
	Ephemeral bool              `json:"ephemeral,omitempty"`
}

// sameSettings compares two publications by what was asked, not by how the path was spelled.
func (p publishedRecord) sameSettings(o publishedRecord) bool {
	p.Requested, o.Requested = "", ""
	return p == o
}

// pathOr is where a staged volume is mounted, or else the publication's target.
func (s *stagedRecord) pathOr(p *publishedRecord) string {
	if s != nil {
		return s.Path
	}
	return p.Target
}

func pubKey(volumeID, target string) string { return volumeID + "\x00" + target }

// Node is the node side of the driver: it stages, publishes and expands volumes with real loop
// devices, mkfs, mounts and bind mounts, and keeps what it did in the node database.
//
// Calls on one volume never overlap here. The csikit library holds only the staging or target
// path a node call works on, so that two pods on one node publishing one volume are both
// accepted at once (no ABORTED retries); this driver's checks span the volume (its one staged
// record, the SINGLE_NODE_SINGLE_WRITER check against its other publications, an inline
// ephemeral volume's directory), so NodeStage, NodeUnstage, NodePublish, NodeUnpublish and
// NodeExpand hold the CO's volume ID in n.volumes for their whole run, and a second call on the
// volume waits for the first (a bind mount: milliseconds) instead of being refused. The
// reconciliation runs before serving. Calls on different volumes (mkfs, e2fsck, resize2fs
// included) run in parallel. A staging or target path is locked too, against two volumes sent to
// the same path; the volume is always taken first.
type Node struct {
	cfg     Config
	l       layout
	st      *store
	log     *zap.Logger
	mounts  *nodemount.Mounter
	volumes keyedLocks
	paths   keyedLocks
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
	st, err := openStore(filepath.Join(l.root, "node.db"), bStaged, bPublished, bFormatting)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, l: l, st: st, log: cfg.Logger, mounts: nodemount.New()}
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

// volumeOf finds a volume by the ID the CO uses for it: a volume's own ID, or the CO's ID of an
// inline ephemeral volume, whose directory has an ID derived from it (see ephemeralID).
func (n *Node) volumeOf(coID string) (id, kind, path string, err error) {
	if kind, path, err := n.backingOf(coID); err == nil {
		return coID, kind, path, nil
	}
	eph := ephemeralID(coID)
	if kind, path, err := n.backingOf(eph); err == nil {
		return eph, kind, path, nil
	}
	return "", "", "", fmt.Errorf("volume %q: %w", coID, driver.ErrNotFound)
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

// publicationAt finds the volume's publication at a path: canon as lookupPath returned it, given
// as the CO sent it.
func (n *Node) publicationAt(id, canon, given string) (*publishedRecord, error) {
	if rec, err := n.published(id, canon); err != nil || rec != nil {
		return rec, err
	}
	pubs, err := n.publications(id)
	if err != nil {
		return nil, err
	}
	for _, p := range pubs {
		if samePath(p.Target, p.Requested, canon, given) {
			return &p, nil
		}
	}
	return nil, nil
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

// inUse names where this node has the volume staged or published by its records, or "". The
// controller asks it before a delete when both run in one process.
func (n *Node) inUse(id string) (string, error) {
	st, err := n.staged(id)
	if err != nil {
		return "", err
	}
	if st != nil {
		return "staging path " + st.Path, nil
	}
	pubs, err := n.publications(id)
	if err != nil {
		return "", err
	}
	if len(pubs) > 0 {
		return "target path " + pubs[0].Target, nil
	}
	return "", nil
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

// isMounted reports whether path (canonical) is a mount point.
func (n *Node) isMounted(path string) (bool, error) {
	m, err := nodemount.At(path)
	return m != nil, err
}

// topMount returns the top mount at path (canonical) and whether it shows this volume's backing;
// nil when nothing is mounted there.
func topMount(path, kind, backing string) (*nodemount.Info, owner, error) {
	m, err := nodemount.At(path)
	if err != nil || m == nil {
		return nil, ownerOther, err
	}
	o, err := mountOwner(m, kind, backing)
	return m, o, err
}

// trust says which mounts at a recorded or given path the driver may take for this volume's.
type trust int

const (
	trustOurs       trust = iota // only a mount that shows this volume's backing
	trustRecord                  // also a detached loop device's node: a record says the driver mounted it
	trustDeviceNode              // also any loop device's node: a block publication's record says the driver bound one there
	trustAll                     // anything: a record says the driver mounted it, and the backing is gone
)

// takes says whether a mount with owner o is the volume's to unmount under trust t.
//
// trustDeviceNode takes the node of a loop device that now has another file attached: a bind
// mount of a device node does not hold the loop device, so after a detach (losetup -D) the next
// attach on the node may take the number, and the node the driver bound at this target then
// reaches another volume's data. Unmounting it removes one path to that device node and nothing
// else (the other volume's device, file and mounts are untouched), and leaving it would keep the
// other volume's data within the pod's reach and this volume forever published. Without the
// record the mount cannot be told from one someone else made, so it is left alone.
func (t trust) takes(o owner) bool {
	switch t {
	case trustAll:
		return true
	case trustDeviceNode:
		return o == ownerThis || o == ownerUnknown || o == ownerReused
	case trustRecord:
		return o == ownerThis || o == ownerUnknown
	}
	return o == ownerThis
}

// unmountOurs unmounts what this volume has mounted at path, the whole stack if a retry mounted it
// twice. Something else mounted there is left alone: FAILED_PRECONDITION.
func (n *Node) unmountOurs(field, path, kind, backing string, t trust) error {
	ours := func(m *nodemount.Info) (bool, error) {
		o, err := mountOwner(m, kind, backing)
		return t.takes(o), err
	}
	if err := n.mounts.Unmount(path, ours); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}

// trustFor is the trust a call has in the mounts at a path: more with a record, more still with
// the record of a block publication (see trust.takes), all when the record's volume has no backing
// left to compare with.
func trustFor(hasRecord, block bool, backingErr error) trust {
	switch {
	case !hasRecord:
		return trustOurs
	case backingErr != nil:
		return trustAll
	case block:
		return trustDeviceNode
	}
	return trustRecord
}

// NodeStageVolume makes the volume available at the staging path: a bind mount of a directory
// volume, or a loop device (formatted and mounted for filesystem access) of an image volume.
func (n *Node) NodeStageVolume(ctx context.Context, req *driver.NodeStageVolumeRequest) error {
	defer n.volumes.lock(req.VolumeID)()
	kind, backing, err := n.backingOf(req.VolumeID)
	if err != nil {
		return err
	}
	cp := req.Capability
	ctxFS := req.VolumeContext[ParamFSType]
	switch {
	case kind == kindFile && !cp.Block && ctxFS == "" && req.VolumeContext[volumeContextKind] == kindFile:
		// The controller says so: an image created for block access has no filesystem, and
		// mkfs would destroy what the workload wrote to it.
		return fmt.Errorf("volume %q is a raw block volume (created without a filesystem) and cannot be staged for filesystem access: %w",
			req.VolumeID, driver.ErrUnsupported)
	case kind == kindFile && !cp.Block && ctxFS == "":
		// No volume context: the device itself decides (see guardFormat).
	default:
		if err := capabilitiesFit(kind, ctxFS, []driver.VolumeCapability{cp}); err != nil {
			return err
		}
	}
	staging, err := preparePath("staging_target_path", req.StagingTargetPath)
	if err != nil {
		return err
	}
	want := stagedRecord{VolumeID: req.VolumeID, Path: staging, Requested: filepath.Clean(req.StagingTargetPath), Kind: kind, Block: cp.Block, Mode: cp.AccessMode}
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
	unlock := n.paths.lock(staging)
	defer unlock()
	if err := os.Mkdir(staging, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create staging path: %w", err)
	}
	if fi, err := os.Lstat(staging); err != nil {
		return fmt.Errorf("staging path: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("staging_target_path %q is not a directory: %w", req.StagingTargetPath, driver.ErrInvalidArgument)
	}
	top, o, err := topMount(staging, kind, backing)
	if err != nil {
		return err
	}
	if top != nil && (o != ownerThis || cp.Block) {
		// Another volume's mount, or anything else: never adopted, never mounted over.
		return fmt.Errorf("staging_target_path %q already has a mount that is not this volume staged for %s access: %w",
			req.StagingTargetPath, accessName(cp.Block), driver.ErrFailedPrecondition)
	}
	attached, err := nodemount.FindLoop(backing) // a device or mount left by a stage that did not commit is adopted
	if err != nil {
		return err
	}
	committed := false
	defer func() { // undo what this call did when it does not commit
		if !committed && top == nil {
			_ = n.mounts.Unmount(staging, nil)
		}
		if !committed && attached == "" && kind == kindFile {
			_ = nodemount.DetachLoop(backing)
		}
	}()
	if kind == kindFile {
		if want.Device, err = nodemount.AttachLoop(backing); err != nil {
			return err
		}
	}
	if top == nil && !cp.Block {
		if err := n.mountStaging(req.VolumeID, backing, staging, cp, &want); err != nil {
			return err
		}
	}
	if err := fail("node-stage:before-commit"); err != nil {
		return err
	}
	if err := n.st.update(func(tx *bolt.Tx) error {
		if err := putJSON(tx, bStaged, want.VolumeID, &want); err != nil {
			return err
		}
		return del(tx, bFormatting, want.VolumeID)
	}); err != nil {
		return err
	}
	committed = true
	return nil
}

// mountStaging mounts the volume at the staging path for filesystem access: a bind mount of a
// directory, or the image's loop device (want.Device), grown or formatted as needed.
func (n *Node) mountStaging(id, backing, staging string, cp driver.VolumeCapability, want *stagedRecord) error {
	if want.Kind == kindDir {
		return n.mounts.Bind(backing, staging, nodemount.Options{})
	}
	// A volume expanded while it could not be grown online gets its space here: nodemount grows
	// an unmounted ext filesystem offline (ext2, ext3, ext4); others grow only while mounted.
	if format, err := n.mounts.DiskFormat(want.Device); err == nil && strings.HasPrefix(format, "ext") {
		if err := n.mounts.Resize(want.Device, staging); err != nil {
			return err
		}
	}
	if err := n.guardFormat(id, want.Device, backing, want.FSType); err != nil {
		return err
	}
	// Mount flags may be sensitive (the spec says so): nodemount passes them only to the kernel.
	return n.mounts.FormatAndMount(want.Device, staging, want.FSType, nodemount.Options{MountFlags: stagingFlags(want.FSType, cp.MountFlags)})
}

// stagingFlags are the mount flags of an image volume's file system: the capability's, plus
// nouuid for xfs. A clone or a restored snapshot is a byte copy of its source, file-system UUID
// included, and XFS refuses to mount a second file system whose UUID is mounted already
// ("Filesystem has duplicate UUID"), so without it a volume and its copy could not be used on
// one node at once (the storage e2e suite's multiVolume specs do that).
func stagingFlags(fsType string, flags []string) []string {
	if fsType != "xfs" || slices.Contains(flags, "nouuid") {
		return flags
	}
	return append(slices.Clone(flags), "nouuid")
}

// guardFormat makes sure mount-utils will format dev only if it holds nothing. It refuses to
// format a device with an existing filesystem by itself; this also refuses a device with data but
// no filesystem signature (a raw block volume's content), unless this node started formatting it
// before (mkfs interrupted by a crash leaves data without a signature). It records that it is
// about to format before mkfs runs.
func (n *Node) guardFormat(id, dev, backing, fsType string) error {
	format, err := n.mounts.DiskFormat(dev)
	if err != nil {
		return err
	}
	if format != "" {
		return nil // mounted as it is, or refused by mount-utils if it is not fsType
	}
	var started bool
	if err := n.st.view(func(tx *bolt.Tx) error { started = getString(tx, bFormatting, id) != ""; return nil }); err != nil {
		return err
	}
	if started {
		return nil
	}
	empty, err := imageIsZero(backing)
	if err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("volume %q holds data but no filesystem (was it written as a raw block device?); it is not formatted, "+
			"to keep that data: %w", id, driver.ErrFailedPrecondition)
	}
	return n.st.update(func(tx *bolt.Tx) error { return putString(tx, bFormatting, id, fsType) })
}

// imageIsZero reports whether every byte of the image file is zero. Only its data extents are
// read: a fresh sparse image has none.
func imageIsZero(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	extents, err := dataExtents(f, fi.Size())
	if err != nil {
		return false, err
	}
	buf := make([]byte, 1<<20)
	for _, e := range extents {
		for off := e.Offset; off < e.Offset+e.Size; {
			n := min(int64(len(buf)), e.Offset+e.Size-off)
			if err := readAt(f, buf[:n], off); err != nil {
				return false, err
			}
			for _, b := range buf[:n] {
				if b != 0 {
					return false, nil
				}
			}
			off += n
		}
	}
	return true, nil
}

// NodeUnstageVolume undoes NodeStageVolume from the kernel's state, not only the record, so it also
// cleans up after a stage that crashed before it committed. It unmounts only this volume's mount
// at the staging path, and only at the path the volume was staged at.
func (n *Node) NodeUnstageVolume(ctx context.Context, req *driver.NodeUnstageVolumeRequest) error {
	defer n.volumes.lock(req.VolumeID)()
	kind, backing, backingErr := n.backingOf(req.VolumeID)
	rec, err := n.staged(req.VolumeID)
	if err != nil {
		return err
	}
	if backingErr != nil && rec == nil {
		return backingErr
	}
	if backingErr != nil {
		kind, backing = rec.Kind, n.l.backing(rec.Kind, req.VolumeID)
	}
	staging, err := lookupPath(req.StagingTargetPath)
	if err != nil {
		return fmt.Errorf("staging_target_path: %w", err)
	}
	if rec != nil && !samePath(rec.Path, rec.Requested, staging, req.StagingTargetPath) {
		return fmt.Errorf("volume %q is staged at %q, not at %q: %w", req.VolumeID, rec.Path, req.StagingTargetPath, driver.ErrFailedPrecondition)
	}
	if rec != nil {
		staging = rec.Path
	}
	pubs, err := n.publications(req.VolumeID)
	if err != nil {
		return err
	}
	if len(pubs) > 0 {
		return fmt.Errorf("volume %q is still published at %s: %w", req.VolumeID, pubs[0].Target, driver.ErrFailedPrecondition)
	}
	unlock := n.paths.lock(staging)
	defer unlock()
	if err := n.unmountOurs("staging_target_path", staging, kind, backing, trustFor(rec != nil, false, backingErr)); err != nil {
		return err
	}
	if kind == kindFile {
		if err := nodemount.DetachLoop(backing); err != nil {
			return err
		}
	}
	if rec == nil {
		return nil
	}
	return n.st.update(func(tx *bolt.Tx) error { return del(tx, bStaged, req.VolumeID) })
}

// NodePublishVolume bind-mounts the staged volume (or its loop device, for block access) at the
// target path; inline ephemeral volumes are created here and deleted at unpublish.
func (n *Node) NodePublishVolume(ctx context.Context, req *driver.NodePublishVolumeRequest) error {
	defer n.volumes.lock(req.VolumeID)()
	if req.VolumeContext[ephemeralContextKey] == "true" {
		return n.publishEphemeral(req)
	}
	kind, backing, err := n.backingOf(req.VolumeID)
	if err != nil {
		return err
	}
	st, err := n.staged(req.VolumeID)
	if err != nil {
		return err
	}
	staging, err := lookupPath(req.StagingTargetPath)
	if err != nil {
		return fmt.Errorf("staging_target_path: %w", err)
	}
	if st == nil || !samePath(st.Path, st.Requested, staging, req.StagingTargetPath) {
		return fmt.Errorf("volume %q is not staged at %q; call NodeStageVolume first: %w", req.VolumeID, req.StagingTargetPath, driver.ErrFailedPrecondition)
	}
	cp := req.Capability
	if cp.Block != st.Block {
		return fmt.Errorf("volume %q is staged for %s access: %w", req.VolumeID, accessName(st.Block), driver.ErrUnsupported)
	}
	source := st.Path
	if cp.Block {
		dev, err := nodemount.FindLoop(backing)
		if err != nil {
			return err
		}
		if dev == "" {
			return fmt.Errorf("volume %q has no loop device any more; stage it again: %w", req.VolumeID, driver.ErrFailedPrecondition)
		}
		source = dev
	}
	target, err := preparePath("target_path", req.TargetPath)
	if err != nil {
		return err
	}
	want := publishedRecord{VolumeID: req.VolumeID, Target: target, Requested: filepath.Clean(req.TargetPath), Staging: st.Path,
		Readonly: req.Readonly, Block: cp.Block, Mode: cp.AccessMode}
	return n.publish(want, kind, backing, source, cp.MountFlags)
}

func accessName(block bool) string {
	if block {
		return "block"
	}
	return "filesystem"
}

// publish mounts source at the target and commits the record, idempotently. backing is what the
// mount shows, to tell this volume's mount from another's.
func (n *Node) publish(want publishedRecord, kind, backing, source string, flags []string) error {
	cur, err := n.published(want.VolumeID, want.Target)
	if err != nil {
		return err
	}
	if cur != nil && !cur.sameSettings(want) {
		return fmt.Errorf("volume %q is published at %q with other settings: %w", want.VolumeID, want.Target, driver.ErrAlreadyExists)
	}
	if cur != nil && !cur.Block {
		// A filesystem mount holds what it shows (a loop device cannot be detached from under
		// it), so the recorded publication is still this volume's.
		return nil
	}
	if cur == nil {
		others, err := n.publications(want.VolumeID)
		if err != nil {
			return err
		}
		for _, o := range others {
			if want.Mode == driver.SingleNodeSingleWriter || o.Mode == driver.SingleNodeSingleWriter {
				return fmt.Errorf("volume %q is already published at %s and SINGLE_NODE_SINGLE_WRITER allows one publication: %w",
					want.VolumeID, o.Target, driver.ErrFailedPrecondition)
			}
		}
	}
	unlock := n.paths.lock(want.Target)
	defer unlock()
	top, o, err := topMount(want.Target, kind, backing)
	if err != nil {
		return err
	}
	switch {
	case top == nil || o == ownerThis:
		// Nothing there, or this volume's (left by a publish that did not commit: adopted).
	case cur != nil && trustDeviceNode.takes(o):
		// The record says the driver bound a device node here, and that node reaches another
		// file's data or none: its loop device was detached, perhaps reused. Answering OK would
		// hand the next container on this target what the node reaches now; the node is
		// replaced with the volume's current device instead (see trust.takes for why unmounting
		// it is safe).
		if err := n.unmountOurs("target_path", want.Target, kind, backing, trustDeviceNode); err != nil {
			return err
		}
		top = nil
	default:
		return fmt.Errorf("target_path %q already has a mount that is not this volume's: %w", want.Requested, driver.ErrFailedPrecondition)
	}
	if top == nil {
		if err := n.mounts.Bind(source, want.Target, nodemount.Options{ReadOnly: want.Readonly, MountFlags: flags}); err != nil {
			return fmt.Errorf("publish at the target: %w", err)
		}
	}
	if cur != nil {
		return nil // committed already
	}
	err = fail("node-publish:before-commit")
	if err == nil {
		err = n.st.update(func(tx *bolt.Tx) error { return putJSON(tx, bPublished, pubKey(want.VolumeID, want.Target), &want) })
	}
	if err != nil {
		_ = n.mounts.Unpublish(want.Target)
		return err
	}
	return nil
}

// publishEphemeral creates a directory volume for an inline ephemeral volume and publishes it.
// Such a volume is never staged: kubelet sends no staging path, and any it sends is ignored.
func (n *Node) publishEphemeral(req *driver.NodePublishVolumeRequest) error {
	if req.Capability.Block {
		return fmt.Errorf("inline ephemeral volumes are directories and cannot be block devices: %w", driver.ErrUnsupported)
	}
	target, err := preparePath("target_path", req.TargetPath)
	if err != nil {
		return err
	}
	id := ephemeralID(req.VolumeID)
	dir := n.l.volumeDir(id)
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create ephemeral volume: %w", err)
	}
	want := publishedRecord{VolumeID: id, Target: target, Requested: filepath.Clean(req.TargetPath), Readonly: req.Readonly,
		Mode: req.Capability.AccessMode, Ephemeral: true}
	err = n.publish(want, kindDir, dir, dir, req.Capability.MountFlags)
	if err != nil {
		n.removeEphemeralIfUnused(id)
	}
	return err
}

// removeEphemeralIfUnused deletes an ephemeral volume's directory once it has no publication and
// nothing mounts it.
func (n *Node) removeEphemeralIfUnused(id string) error {
	pubs, err := n.publications(id)
	if err != nil || len(pubs) > 0 {
		return err
	}
	points, err := mountsUsing(n.l.volumeDir(id))
	if err != nil || len(points) > 0 {
		return err
	}
	return removeAll(n.l.volumeDir(id))
}

// NodeUnpublishVolume unmounts the target and removes it. It works from the kernel's state, so it
// also cleans up after a publish that crashed before it committed (an inline ephemeral one too),
// and it succeeds when there is nothing left to do. It unmounts only this volume's mounts and
// removes only what the driver creates at a target: an empty directory or an empty file.
func (n *Node) NodeUnpublishVolume(ctx context.Context, req *driver.NodeUnpublishVolumeRequest) error {
	defer n.volumes.lock(req.VolumeID)()
	target, err := lookupPath(req.TargetPath)
	if err != nil {
		return fmt.Errorf("target_path: %w", err)
	}
	var rec *publishedRecord
	id := req.VolumeID
	for _, candidate := range []string{req.VolumeID, ephemeralID(req.VolumeID)} {
		if rec, err = n.publicationAt(candidate, target, req.TargetPath); err != nil {
			return err
		} else if rec != nil {
			id = candidate
			break
		}
	}
	var kind, backing string
	var backingErr error
	if rec != nil {
		target = rec.Target
		kind, backing, backingErr = n.backingOf(id)
	} else {
		id, kind, backing, err = n.volumeOf(req.VolumeID)
		if err != nil {
			if _, lerr := os.Lstat(target); errors.Is(lerr, os.ErrNotExist) {
				return nil // already unpublished
			}
			return err
		}
	}
	unlock := n.paths.lock(target)
	defer unlock()
	if err := n.unmountOurs("target_path", target, kind, backing, trustFor(rec != nil, rec != nil && rec.Block, backingErr)); err != nil {
		return err
	}
	if err := nodemount.RemoveTarget(target); err != nil {
		return err
	}
	if rec != nil {
		if err := n.st.update(func(tx *bolt.Tx) error { return del(tx, bPublished, pubKey(id, rec.Target)) }); err != nil {
			return err
		}
	}
	if strings.HasPrefix(id, "eph-") {
		return n.removeEphemeralIfUnused(id)
	}
	return nil
}

// pathOfVolume finds the volume's staging or publication at a path (canonical, and as given).
func (n *Node) pathOfVolume(id, canon, given string) (staged *stagedRecord, pub *publishedRecord, err error) {
	st, err := n.staged(id)
	if err != nil {
		return nil, nil, err
	}
	if st != nil && samePath(st.Path, st.Requested, canon, given) {
		return st, nil, nil
	}
	p, err := n.publicationAt(id, canon, given)
	return nil, p, err
}

// NodeGetVolumeStats reports bytes and inodes of a mounted volume (of a directory volume, the host
// file system's: see # Sizes in the package documentation), or the size of a block one.
func (n *Node) NodeGetVolumeStats(ctx context.Context, req *driver.NodeGetVolumeStatsRequest) ([]driver.VolumeUsage, error) {
	id, _, backing, err := n.volumeOf(req.VolumeID)
	if err != nil {
		return nil, err
	}
	path, err := lookupPath(req.VolumePath)
	if err != nil {
		return nil, fmt.Errorf("volume_path: %w", err)
	}
	st, pub, err := n.pathOfVolume(id, path, req.VolumePath)
	if err != nil {
		return nil, err
	}
	if st == nil && pub == nil {
		return nil, fmt.Errorf("volume %q is not staged or published at %q: %w", req.VolumeID, req.VolumePath, driver.ErrNotFound)
	}
	if pub != nil && pub.Block {
		// What the target reaches decides, not which device the volume has now: the node bound
		// there may be of a loop device detached since, and perhaps attached to another file.
		// The spec's NOT_FOUND is for a volume not accessible at volume_path; the other file's
		// size must never be reported as this volume's.
		if c, err := blockTargetCondition(pub.Target, backing); err != nil {
			return nil, err
		} else if c != nil {
			return nil, fmt.Errorf("volume %q is not accessible at %q: %s: %w", req.VolumeID, req.VolumePath, c.Message, driver.ErrNotFound)
		}
		size, err := nodemount.DeviceSize(pub.Target)
		if err != nil {
			return nil, err
		}
		return []driver.VolumeUsage{{Unit: driver.UsageBytes, Total: size}}, nil
	}
	if st != nil && st.Block {
		// The loop device is looked up, not taken from a record: after a restart it may have
		// another number, or be gone.
		dev, err := nodemount.FindLoop(backing)
		if err != nil {
			return nil, err
		}
		if dev == "" {
			return nil, fmt.Errorf("volume %q has no loop device attached any more, so nothing is at %q: %w", req.VolumeID, req.VolumePath, driver.ErrNotFound)
		}
		size, err := nodemount.DeviceSize(dev)
		if err != nil {
			return nil, err
		}
		return []driver.VolumeUsage{{Unit: driver.UsageBytes, Total: size}}, nil
	}
	mounted := st.pathOr(pub)
	var fs unix.Statfs_t
	if err := unix.Statfs(mounted, &fs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", mounted, err)
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
	defer n.volumes.lock(req.VolumeID)()
	kind, backing, err := n.backingOf(req.VolumeID)
	if err != nil {
		return 0, err
	}
	if kind == kindDir {
		return 0, nil
	}
	dev, err := nodemount.FindLoop(backing)
	if err != nil {
		return 0, err
	}
	if dev == "" {
		return 0, fmt.Errorf("volume %q is not staged on this node: %w", req.VolumeID, driver.ErrFailedPrecondition)
	}
	size, err := nodemount.RefreshLoopSize(dev)
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
		if err := n.mounts.Resize(dev, st.Path); err != nil {
			return 0, fmt.Errorf("%w (an ext filesystem grows when the volume is next staged)", err)
		}
	}
	return size, nil
}

// NodeGetVolumeHealth reports a volume whose backing or mounts are gone, and a block publication
// whose target no longer reaches the volume's loop device. The spec allows one condition per
// status and reason, so each is reported once, whatever number of targets has it.
func (n *Node) NodeGetVolumeHealth(ctx context.Context, req *driver.NodeGetVolumeHealthRequest) (*driver.VolumeHealth, error) {
	h := &driver.VolumeHealth{VolumeID: req.VolumeID}
	id, _, backing, err := n.volumeOf(req.VolumeID)
	if err != nil {
		return nil, err
	}
	pubs, err := n.publications(id)
	if err != nil {
		return nil, err
	}
	var canon string
	if req.VolumePublishPath != "" {
		if canon, err = lookupPath(req.VolumePublishPath); err != nil {
			return nil, fmt.Errorf("volume_path: %w", err)
		}
	}
	for _, p := range pubs {
		if req.VolumePublishPath != "" && !samePath(p.Target, p.Requested, canon, req.VolumePublishPath) {
			continue
		}
		var c *driver.HealthCondition
		if ok, err := n.isMounted(p.Target); err == nil && !ok {
			c = &driver.HealthCondition{Status: driver.HealthInaccessible, Reason: "MountMissing", Message: "the volume is no longer mounted at its target path"}
		} else if err == nil && p.Block {
			if c, err = blockTargetCondition(p.Target, backing); err != nil {
				return nil, err
			}
		}
		if c != nil && !slices.ContainsFunc(h.Conditions, func(o driver.HealthCondition) bool { return o.Status == c.Status && o.Reason == c.Reason }) {
			h.Conditions = append(h.Conditions, *c)
		}
	}
	return h, nil
}

// Reasons of the health conditions of a block publication whose target no longer reaches the
// volume.
const (
	reasonLoopDetached = "LoopDeviceDetached"
	reasonLoopReused   = "LoopDeviceReused"
)

// blockTargetCondition says why the block publication at target (canonical) does not reach the
// volume's image at backing, or nil when it does. The target is a bind mount of a loop device's
// node, which does not hold the device: it can be detached under the publication (losetup -D),
// and its number then taken by the next attach on the node, when the target reaches that file.
// The messages are kept within the spec's 128 bytes for a string.
func blockTargetCondition(target, backing string) (*driver.HealthCondition, error) {
	top, o, err := topMount(target, kindFile, backing)
	if err != nil {
		return nil, err
	}
	switch {
	case top == nil:
		return &driver.HealthCondition{Status: driver.HealthInaccessible, Reason: "MountMissing", Message: "the volume is no longer mounted at its target path"}, nil
	case o == ownerThis:
		return nil, nil
	case o == ownerUnknown:
		return &driver.HealthCondition{Status: driver.HealthInaccessible, Reason: reasonLoopDetached,
			Message: fmt.Sprintf("loop device %s at the target was detached from the volume; stage and publish again", deviceAt(target))}, nil
	case o == ownerReused:
		return &driver.HealthCondition{Status: driver.HealthInaccessible, Reason: reasonLoopReused,
			Message: fmt.Sprintf("loop device %s at the target now serves another file, not this volume; stage and publish again", deviceAt(target))}, nil
	}
	return &driver.HealthCondition{Status: driver.HealthInaccessible, Reason: "TargetMountReplaced",
		Message: "something other than the volume's loop device is mounted at the target path"}, nil
}

// deviceAt names the block device whose node is at path, for a message: "/dev/loop3" when sysfs
// knows it, else its numbers.
func deviceAt(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return path
	}
	nums := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	if link, err := os.Readlink("/sys/dev/block/" + nums); err == nil {
		return "/dev/" + filepath.Base(link)
	}
	return nums
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
