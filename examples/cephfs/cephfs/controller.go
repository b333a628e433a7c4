package cephfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ceph/go-ceph/cephfs/admin"
	"github.com/ceph/go-ceph/rados"

	"github.com/csikit/csikit/driver"
)

// The metadata the driver keeps on each subvolume and snapshot it creates (`ceph fs subvolume
// metadata`), one JSON record under one key so that finishing a create costs one mgr call. The
// record is written last: a subvolume without it is one whose CreateVolume has not answered yet
// (in progress, or interrupted by a crash), which listings leave out and the retried CreateVolume
// finishes.
const (
	metaVolume   = "csikit.volume"
	metaSnapshot = "csikit.snapshot"
)

// record is what the metadata key holds.
type record struct {
	// Name is the CSI name the subvolume or snapshot was created for.
	Name string `json:"name"`
	// Fingerprint is the request's Fingerprint(), for CheckExisting.
	Fingerprint string `json:"fingerprint"`
	// Size is, for a snapshot, the quota of its volume when it was cut.
	Size int64 `json:"size,omitempty"`
	// Created is, for a snapshot, when it was cut (RFC 3339, UTC).
	Created string `json:"created,omitempty"`
}

// readRecord returns the record under key in meta, or nil when there is none (or it is not one
// the driver wrote).
func readRecord(meta map[string]string, key string) *record {
	raw, ok := meta[key]
	if !ok {
		return nil
	}
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.Fingerprint == "" {
		return nil
	}
	return &r
}

func (r *record) encode() string {
	raw, _ := json.Marshal(r)
	return string(raw)
}

// The volume context CreateVolume returns, which the node reads at NodeStageVolume.
const (
	ContextFSName        = "fsName"
	ContextSubvolumePath = "subvolumePath"
)

// The parameter keys the Kubernetes external-provisioner adds with --extra-create-metadata; they
// are accepted and ignored. Any other parameter is refused, so that a typo is not ignored.
var provisionerKeys = []string{
	"csi.storage.k8s.io/pvc/name", "csi.storage.k8s.io/pvc/namespace", "csi.storage.k8s.io/pv/name",
	"csi.storage.k8s.io/volumesnapshot/name", "csi.storage.k8s.io/volumesnapshot/namespace",
	"csi.storage.k8s.io/volumesnapshotcontent/name",
}

// checkParameters refuses the parameters the driver does not know (snapshots take none; volumes
// take ParamMaxFiles) and a maxFiles it cannot parse.
func checkParameters(what string, params map[string]string) error {
	var known []string
	if what == "volume" {
		known = []string{ParamMaxFiles}
	}
	var unknown []string
	for k := range params {
		if !slices.Contains(provisionerKeys, k) && !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if len(known) == 0 {
			return fmt.Errorf("cephfs takes no %s parameters, got %s: %w", what, strings.Join(unknown, ", "), driver.ErrInvalidArgument)
		}
		return fmt.Errorf("cephfs does not know the %s parameter %s (it takes %s): %w", what, strings.Join(unknown, ", "),
			strings.Join(known, ", "), driver.ErrInvalidArgument)
	}
	_, _, err := maxFilesOf(params, nil)
	return err
}

func filesystemsOnly(caps []driver.VolumeCapability) error {
	for _, c := range caps {
		if c.Block {
			return fmt.Errorf("CephFS volumes are filesystems and cannot be block devices: %w", driver.ErrUnsupported)
		}
	}
	return nil
}

// admin returns the mgr volumes interface for the identity in secrets.
func (d *Driver) admin(ctx context.Context, secrets driver.Secrets) (*fsAdmin, error) {
	cr, err := credentialsFrom(secrets)
	if err != nil {
		return nil, err
	}
	conn, err := d.cl.connect(ctx, cr)
	if err != nil {
		return nil, err
	}
	return &fsAdmin{FSAdmin: admin.NewFromConn(conn), conn: conn}, nil
}

// subvolume is what the driver knows of one subvolume.
type subvolume struct {
	name string
	info *admin.SubVolumeInfo
	rec  *record // nil until CreateVolume has finished it
}

// finished reports whether the subvolume's CreateVolume has completed.
func (s *subvolume) finished() bool { return s.rec != nil }

func (s *subvolume) capacity() int64 {
	if q, ok := s.info.BytesQuota.(admin.ByteCount); ok && q <= math.MaxInt64 {
		return int64(q)
	}
	return 0
}

func (d *Driver) volume(s *subvolume) *driver.Volume {
	return &driver.Volume{ID: s.name, CapacityBytes: s.capacity(), Context: map[string]string{
		ContextFSName: d.cfg.FSName, ContextSubvolumePath: s.info.Path,
	}}
}

// errNotReady wraps the EAGAIN the volumes module answers about a clone that is not complete.
var errNotReady = errors.New("subvolume not ready")

// finishedVolume is the subvolume of a volume that exists for the CO: a clone still in progress is
// not one yet (its CreateVolume has not answered), so both are NOT_FOUND.
func (d *Driver) finishedVolume(ctx context.Context, fsa *fsAdmin, name string) (*subvolume, error) {
	sv, err := d.lookup(ctx, fsa, name, true)
	if errors.Is(err, errNotReady) {
		return nil, fmt.Errorf("volume %q: %w", name, driver.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if !sv.finished() {
		return nil, fmt.Errorf("volume %q: %w", name, driver.ErrNotFound)
	}
	return sv, nil
}

// lookup reads a subvolume's info and, withRecord, the driver's record in its metadata. A
// missing one is ErrNotFound; a clone still in progress is errNotReady.
func (d *Driver) lookup(ctx context.Context, fsa *fsAdmin, name string, withRecord bool) (*subvolume, error) {
	info, err := call(ctx, d.cfg.Timeout, "subvolume info "+name, func() (*admin.SubVolumeInfo, error) {
		info, err := fsa.SubVolumeInfo(d.cfg.FSName, d.cfg.Group, name)
		if errno(err) == syscall.EAGAIN {
			return nil, fmt.Errorf("%w: %w", err, errNotReady)
		}
		return info, err
	})
	if err != nil {
		return nil, err
	}
	sv := &subvolume{name: name, info: info}
	if !withRecord {
		return sv, nil
	}
	meta, err := call(ctx, d.cfg.Timeout, "subvolume metadata ls "+name, func() (map[string]string, error) {
		return fsa.ListMetadata(d.cfg.FSName, d.cfg.Group, name)
	})
	if err != nil {
		return nil, err
	}
	sv.rec = readRecord(meta, metaVolume)
	return sv, nil
}

// CreateVolume creates a subvolume with the requested size as its quota, or clones one from a
// snapshot or another volume. A clone is asynchronous in Ceph: the first call starts it and waits
// up to Config.CloneWait for it; while it still runs, every call answers ErrPending (ABORTED),
// which the CO retries with the same name; the retry that finds the clone complete finishes the volume (quota, metadata) and returns
// it. The clone is never started twice, because its subvolume name is the request's name.
func (d *Driver) CreateVolume(ctx context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	if err := filesystemsOnly(req.Capabilities); err != nil {
		return nil, err
	}
	if err := checkParameters("volume", req.Parameters); err != nil {
		return nil, err
	}
	if err := checkMutable(req.MutableParameters); err != nil {
		return nil, err
	}
	maxFiles, _, err := maxFilesOf(req.Parameters, req.MutableParameters)
	if err != nil {
		return nil, err
	}
	size, err := req.Capacity.Resolve(d.cfg.DefaultSize, 1)
	if err != nil {
		return nil, err
	}
	fsa, err := d.admin(ctx, req.Secrets)
	if err != nil {
		return nil, err
	}
	name := CephName(req.Name)
	sv, err := d.lookup(ctx, fsa, name, true)
	switch {
	case errors.Is(err, errNotReady):
		if err := d.cloneProgress(ctx, fsa, name); err != nil {
			return nil, err
		}
		if sv, err = d.lookup(ctx, fsa, name, true); err != nil {
			return nil, err
		}
	case errors.Is(err, driver.ErrNotFound):
		if err := d.start(ctx, fsa, req, name, size); err != nil {
			return nil, err
		}
		if !req.Source.IsZero() {
			// A clone of an empty subvolume may be complete at once; ask before answering.
			if sv, err = d.lookup(ctx, fsa, name, true); err != nil {
				if !errors.Is(err, errNotReady) {
					return nil, err
				}
				if err := d.cloneProgress(ctx, fsa, name); err != nil {
					return nil, err
				}
				if sv, err = d.lookup(ctx, fsa, name, true); err != nil {
					return nil, err
				}
			}
		} else if sv, err = d.lookup(ctx, fsa, name, false); err != nil { // just made: no record yet
			return nil, err
		}
	case err != nil:
		return nil, err
	}
	if sv.finished() {
		if sv.rec.Name != req.Name {
			return nil, fmt.Errorf("subvolume %q belongs to another volume name: %w", name, driver.ErrAlreadyExists)
		}
		v := d.volume(sv)
		return v, req.CheckExisting(sv.rec.Fingerprint, v)
	}
	return d.finish(ctx, fsa, req, sv, size, maxFiles)
}

// start creates the subvolume or starts the clone.
func (d *Driver) start(ctx context.Context, fsa *fsAdmin, req *driver.CreateVolumeRequest, name string, size int64) error {
	switch {
	case req.Source.SnapshotID != "":
		sv, snap, err := parseSnapshotID(req.Source.SnapshotID)
		if err != nil {
			return err
		}
		meta, err := d.snapshotOf(ctx, fsa, sv, snap)
		if err != nil {
			return fmt.Errorf("source snapshot %q: %w", req.Source.SnapshotID, err)
		}
		rec := readRecord(meta, metaSnapshot)
		if rec == nil {
			return fmt.Errorf("source snapshot %q: %w", req.Source.SnapshotID, driver.ErrNotFound)
		}
		if snapSize := rec.Size; !fitsLimit(req.Capacity, snapSize) {
			return fmt.Errorf("snapshot %q holds %d bytes, more than the limit of %d bytes: %w",
				req.Source.SnapshotID, snapSize, req.Capacity.LimitBytes, driver.ErrOutOfRange)
		}
		return d.clone(ctx, fsa, sv, snap, name)
	case req.Source.VolumeID != "":
		src, err := parseVolumeID(req.Source.VolumeID)
		if err != nil {
			return err
		}
		s, err := d.lookup(ctx, fsa, src, true)
		if err != nil {
			return fmt.Errorf("source volume: %w", err)
		}
		if !s.finished() {
			return fmt.Errorf("source volume %q: %w", src, driver.ErrNotFound)
		}
		if c := s.capacity(); !fitsLimit(req.Capacity, c) {
			return fmt.Errorf("volume %q holds %d bytes, more than the limit of %d bytes: %w", src, c, req.Capacity.LimitBytes, driver.ErrOutOfRange)
		}
		// Ceph clones from snapshots only: the clone's own snapshot of the source, named after
		// the clone so that a retry finds it, removed once the clone is complete.
		snap := cloneSnapshotPrefix + name
		if _, err := call(ctx, d.cfg.Timeout, "snapshot for clone", func() (struct{}, error) {
			err := fsa.CreateSubVolumeSnapshot(d.cfg.FSName, d.cfg.Group, src, snap)
			if errno(err) == syscall.EEXIST {
				err = nil
			}
			return struct{}{}, err
		}); err != nil {
			return err
		}
		return d.clone(ctx, fsa, src, snap, name)
	}
	_, err := call(ctx, d.cfg.Timeout, "subvolume create "+name, func() (struct{}, error) {
		o := &admin.SubVolumeOptions{Size: admin.ByteCount(size), Mode: 0o777}
		err := fsa.CreateSubVolume(d.cfg.FSName, d.cfg.Group, name, o)
		if errno(err) == syscall.ENOENT { // the group is made on first use
			if err = fsa.CreateSubVolumeGroup(d.cfg.FSName, d.cfg.Group, nil); err == nil {
				err = fsa.CreateSubVolume(d.cfg.FSName, d.cfg.Group, name, o)
			}
		}
		return struct{}{}, err
	})
	return err
}

func (d *Driver) clone(ctx context.Context, fsa *fsAdmin, sv, snap, name string) error {
	_, err := call(ctx, d.cfg.Timeout, "subvolume snapshot clone", func() (struct{}, error) {
		err := fsa.CloneSubVolumeSnapshot(d.cfg.FSName, d.cfg.Group, sv, snap, name,
			&admin.CloneOptions{TargetGroup: d.cfg.Group})
		if errno(err) == syscall.EEXIST { // started by an earlier call that got no answer
			err = nil
		}
		return struct{}{}, err
	})
	return err
}

// cloneProgress answers a CreateVolume whose clone was not complete at the last look: nil once
// it is, ErrPending while it runs (after waiting up to Config.CloneWait); a clone that failed or was cancelled is removed, so that the
// retry starts it again.
func (d *Driver) cloneProgress(ctx context.Context, fsa *fsAdmin, name string) error {
	st, err := call(ctx, d.cfg.Timeout, "clone status "+name, func() (*admin.CloneStatus, error) {
		return fsa.CloneStatus(d.cfg.FSName, d.cfg.Group, name)
	})
	if err != nil {
		return err
	}
	// A small clone completes within seconds: wait for it, up to CloneWait and never past the
	// caller's deadline (keeping a second to answer), rather than make the CO come back.
	wait := d.cfg.CloneWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-time.Second)
	}
	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for st.State == admin.ClonePending || st.State == admin.CloneInProgress {
		select {
		case <-timer.C:
			return fmt.Errorf("volume %q is being cloned (%s): %w", name, st.State, driver.ErrPending)
		case <-ctx.Done():
			return fmt.Errorf("volume %q is being cloned (%s): %w", name, st.State, ctx.Err())
		case <-tick.C:
		}
		if st, err = call(ctx, d.cfg.Timeout, "clone status "+name, func() (*admin.CloneStatus, error) {
			return fsa.CloneStatus(d.cfg.FSName, d.cfg.Group, name)
		}); err != nil {
			return err
		}
	}
	if st.State == admin.CloneComplete {
		return nil
	}
	if err := d.remove(ctx, fsa, name, nil, false); err != nil {
		return err
	}
	return fmt.Errorf("the clone into %q ended %s; removed, the retry starts it again: %w", name, st.State, driver.ErrUnavailable)
}

// finish completes a volume whose subvolume exists: the clone's temporary snapshot goes, the
// quota is set to the size asked for, the file quota to maxFiles, and the metadata is written,
// the fingerprint last.
func (d *Driver) finish(ctx context.Context, fsa *fsAdmin, req *driver.CreateVolumeRequest, sv *subvolume, size, maxFiles int64) (*driver.Volume, error) {
	if req.Source.VolumeID != "" {
		if src, err := parseVolumeID(req.Source.VolumeID); err == nil {
			if _, err := call(ctx, d.cfg.Timeout, "remove clone snapshot", func() (struct{}, error) {
				err := fsa.RemoveSubVolumeSnapshot(d.cfg.FSName, d.cfg.Group, src, cloneSnapshotPrefix+sv.name)
				if errno(err) == syscall.ENOENT {
					err = nil
				}
				return struct{}{}, err
			}); err != nil {
				return nil, err
			}
		}
	}
	// A clone inherits its source's quota; a larger one than asked for stays, within the limit,
	// so that the data fits (the required size is a minimum).
	if cur := sv.capacity(); cur > size && fitsLimit(req.Capacity, cur) {
		size = cur
	}
	if sv.capacity() != size {
		if _, err := call(ctx, d.cfg.Timeout, "subvolume resize", func() (*admin.SubVolumeResizeResult, error) {
			return fsa.ResizeSubVolume(d.cfg.FSName, d.cfg.Group, sv.name, admin.ByteCount(size), false)
		}); err != nil {
			return nil, err
		}
		sv.info.BytesQuota = admin.ByteCount(size)
	}
	// A new subvolume has no file quota; a clone has its source's (the volumes module copies
	// it), which the request's own maxFiles, or none, replaces.
	if maxFiles != 0 || !req.Source.IsZero() {
		if err := d.applyMaxFiles(ctx, fsa.conn, sv.info.Path, maxFiles); err != nil {
			return nil, err
		}
	}
	rec := &record{Name: req.Name, Fingerprint: req.Fingerprint()}
	if _, err := call(ctx, d.cfg.Timeout, "subvolume metadata set", func() (struct{}, error) {
		return struct{}{}, fsa.SetMetadata(d.cfg.FSName, d.cfg.Group, sv.name, metaVolume, rec.encode())
	}); err != nil {
		return nil, err
	}
	return d.volume(sv), nil
}

// DeleteVolume removes the subvolume. One with snapshots is in use (FAILED_PRECONDITION, as
// ceph-csi answers): the CO deletes the snapshots first. A clone still in progress is cancelled.
func (d *Driver) DeleteVolume(ctx context.Context, req *driver.DeleteVolumeRequest) error {
	name, err := parseVolumeID(req.VolumeID)
	if err != nil {
		return err
	}
	fsa, err := d.admin(ctx, req.Secrets)
	if err != nil {
		return err
	}
	_, err = d.lookup(ctx, fsa, name, false)
	if errors.Is(err, errNotReady) {
		if _, err := call(ctx, d.cfg.Timeout, "clone cancel", func() (struct{}, error) {
			err := fsa.CancelClone(d.cfg.FSName, d.cfg.Group, name)
			if e := errno(err); e == syscall.EINVAL || e == syscall.ENOENT { // completed or gone meanwhile
				err = nil
			}
			return struct{}{}, err
		}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	snaps, err := call(ctx, d.cfg.Timeout, "subvolume snapshot ls", func() ([]string, error) {
		return fsa.ListSubVolumeSnapshots(d.cfg.FSName, d.cfg.Group, name)
	})
	if err != nil && !errors.Is(err, driver.ErrNotFound) && !errors.Is(err, driver.ErrUnavailable) {
		return err
	}
	var kept []string
	for _, s := range snaps {
		if strings.HasPrefix(s, cloneSnapshotPrefix) {
			continue // a clone's own snapshot: rm refuses while the clone runs
		}
		kept = append(kept, snapshotID(name, s))
	}
	if len(kept) > 0 {
		return fmt.Errorf("volume %q has snapshots (%s): delete them first: %w", name, strings.Join(kept, ", "), driver.ErrInUse)
	}
	return d.remove(ctx, fsa, name, snaps, true)
}

// remove deletes a subvolume with its clone snapshots (snaps: its snapshots when listed, else
// remove lists them); a missing one is deleted already.
func (d *Driver) remove(ctx context.Context, fsa *fsAdmin, name string, snaps []string, listed bool) error {
	if !listed { // an empty listing is nil too: the flag, not the slice, says whether to ask
		snaps, _ = call(ctx, d.cfg.Timeout, "subvolume snapshot ls", func() ([]string, error) {
			return fsa.ListSubVolumeSnapshots(d.cfg.FSName, d.cfg.Group, name)
		})
	}
	for _, s := range snaps {
		if !strings.HasPrefix(s, cloneSnapshotPrefix) {
			continue
		}
		if _, err := call(ctx, d.cfg.Timeout, "remove clone snapshot", func() (struct{}, error) {
			err := fsa.RemoveSubVolumeSnapshot(d.cfg.FSName, d.cfg.Group, name, s)
			if errno(err) == syscall.ENOENT {
				err = nil
			}
			return struct{}{}, err
		}); err != nil {
			return fmt.Errorf("volume %q is the source of a clone still running: %w", name, driver.ErrInUse)
		}
	}
	_, err := call(ctx, d.cfg.Timeout, "subvolume rm "+name, func() (struct{}, error) {
		err := fsa.RemoveSubVolumeWithFlags(d.cfg.FSName, d.cfg.Group, name, admin.SubVolRmFlags{Force: true})
		return struct{}{}, err
	})
	if errors.Is(err, driver.ErrNotFound) {
		return nil
	}
	return err
}

// ValidateVolumeCapabilities confirms filesystem capabilities of any access mode: CephFS is a
// shared filesystem.
func (d *Driver) ValidateVolumeCapabilities(ctx context.Context, req *driver.ValidateVolumeCapabilitiesRequest) error {
	name, err := parseVolumeID(req.VolumeID)
	if err != nil {
		return err
	}
	fsa, err := d.adminOrLast(ctx, req.Secrets) // the secrets are optional here
	if err != nil {
		return err
	}
	if _, err := d.finishedVolume(ctx, fsa, name); err != nil {
		return err
	}
	if err := checkParameters("volume", req.Parameters); err != nil {
		return fmt.Errorf("%w: %w", err, driver.ErrUnsupported)
	}
	if err := checkMutable(req.MutableParameters); err != nil {
		return fmt.Errorf("%w: %w", err, driver.ErrUnsupported)
	}
	return filesystemsOnly(req.Capabilities)
}

// ControllerExpandVolume sets the subvolume's quota to the new size. ceph-fuse reads the quota
// from the MDS, so a mounted volume grows at once and no node step follows.
func (d *Driver) ControllerExpandVolume(ctx context.Context, req *driver.ControllerExpandVolumeRequest) (int64, bool, error) {
	name, err := parseVolumeID(req.VolumeID)
	if err != nil {
		return 0, false, err
	}
	if req.Capability != nil {
		if err := filesystemsOnly([]driver.VolumeCapability{*req.Capability}); err != nil {
			return 0, false, err
		}
	}
	fsa, err := d.admin(ctx, req.Secrets)
	if err != nil {
		return 0, false, err
	}
	sv, err := d.finishedVolume(ctx, fsa, name)
	if err != nil {
		return 0, false, err
	}
	if cur := sv.capacity(); cur != 0 && req.Capacity.Contains(cur) {
		return cur, false, nil
	}
	size, err := req.Capacity.Resolve(d.cfg.DefaultSize, 1)
	if err != nil {
		return 0, false, err
	}
	if cur := sv.capacity(); size < cur {
		return 0, false, fmt.Errorf("volume %q has %d bytes; shrinking to %d is not supported: %w", name, cur, size, driver.ErrOutOfRange)
	}
	if _, err := call(ctx, d.cfg.Timeout, "subvolume resize", func() (*admin.SubVolumeResizeResult, error) {
		return fsa.ResizeSubVolume(d.cfg.FSName, d.cfg.Group, name, admin.ByteCount(size), true)
	}); err != nil {
		return 0, false, err
	}
	return size, false, nil
}

// ListVolumes lists the finished subvolumes of the group. ListVolumes carries no secrets: it uses
// the identity of the last call that did.
func (d *Driver) ListVolumes(ctx context.Context, _ *driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	conn, err := d.cl.lastConn()
	if err != nil {
		return nil, err
	}
	fsa := &fsAdmin{FSAdmin: admin.NewFromConn(conn), conn: conn}
	names, err := call(ctx, d.cfg.Timeout, "subvolume ls", func() ([]string, error) {
		return fsa.ListSubVolumes(d.cfg.FSName, d.cfg.Group)
	})
	if errors.Is(err, driver.ErrNotFound) { // no group yet: no volume yet
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []driver.VolumeEntry
	for _, n := range names {
		if !issued(n) {
			continue
		}
		sv, err := d.lookup(ctx, fsa, n, true)
		if errors.Is(err, errNotReady) || errors.Is(err, driver.ErrNotFound) {
			continue // a clone in progress, or deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		if sv.finished() {
			out = append(out, driver.VolumeEntry{Volume: *d.volume(sv)})
		}
	}
	return out, nil
}

// GetCapacity reports the space left in the filesystem's first data pool (`ceph df`'s
// max_avail), which every subvolume shares: quotas do not reserve space. It carries no secrets
// and uses the identity of the last call that did.
func (d *Driver) GetCapacity(ctx context.Context, req *driver.GetCapacityRequest) (*driver.Capacity, error) {
	if err := checkParameters("volume", req.Parameters); err != nil {
		return nil, err
	}
	conn, err := d.cl.lastConn()
	if err != nil {
		return nil, err
	}
	fsa := admin.NewFromConn(conn)
	avail, err := call(ctx, d.cfg.Timeout, "df", func() (int64, error) {
		fss, err := fsa.ListFileSystems()
		if err != nil {
			return 0, err
		}
		var pool string
		for _, f := range fss {
			if f.Name == d.cfg.FSName && len(f.DataPools) > 0 {
				pool = f.DataPools[0]
			}
		}
		if pool == "" {
			return 0, fmt.Errorf("filesystem %q not found: %w", d.cfg.FSName, driver.ErrNotFound)
		}
		return poolAvail(conn, pool)
	})
	if err != nil {
		return nil, err
	}
	return &driver.Capacity{AvailableBytes: avail}, nil
}

func poolAvail(conn *rados.Conn, pool string) (int64, error) {
	cmd, _ := json.Marshal(map[string]string{"prefix": "df", "format": "json"})
	out, _, err := conn.MonCommand(cmd)
	if err != nil {
		return 0, err
	}
	var df struct {
		Pools []struct {
			Name  string `json:"name"`
			Stats struct {
				MaxAvail int64 `json:"max_avail"`
			} `json:"stats"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(out, &df); err != nil {
		return 0, fmt.Errorf("read ceph df: %w", err)
	}
	for _, p := range df.Pools {
		if p.Name == pool {
			return p.Stats.MaxAvail, nil
		}
	}
	return 0, fmt.Errorf("pool %q not in ceph df: %w", pool, driver.ErrNotFound)
}

// fitsLimit reports whether size is within the range's limit (none means any size fits).
func fitsLimit(r driver.CapacityRange, size int64) bool {
	return r.LimitBytes == 0 || size <= r.LimitBytes
}
