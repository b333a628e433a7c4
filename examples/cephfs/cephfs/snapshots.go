package cephfs

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/ceph/go-ceph/cephfs/admin"

	"github.com/csikit/csikit/driver"
)

// snapshotOf reads a subvolume snapshot's metadata; ErrNotFound when it, or its subvolume, does
// not exist. It does not ask for `snapshot info`, which waits for the MDS to settle the
// snapshot's recursive statistics (about 5 s after a snapshot is cut): the creation time is in
// the metadata.
func (d *Driver) snapshotOf(ctx context.Context, fsa *fsAdmin, sv, snap string) (map[string]string, error) {
	return call(ctx, d.cfg.Timeout, "snapshot metadata ls", func() (map[string]string, error) {
		return fsa.ListSnapshotMetadata(d.cfg.FSName, d.cfg.Group, sv, snap)
	})
}

func toSnapshot(sv, snap string, rec *record) *driver.Snapshot {
	created, _ := time.Parse(time.RFC3339Nano, rec.Created)
	return &driver.Snapshot{ID: snapshotID(sv, snap), SourceVolumeID: sv, SizeBytes: rec.Size,
		CreationTime: created, ReadyToUse: true}
}

// CreateSnapshot takes a subvolume snapshot, which is instantaneous in CephFS (ready at once).
// Snapshot names are unique across volumes in CSI, so a name new to the source volume is looked
// for on every other volume first: ALREADY_EXISTS if another volume has it. That costs a listing
// of every volume's snapshots; a driver for thousands of volumes would keep an index (ceph-csi
// keeps one in RADOS omaps).
func (d *Driver) CreateSnapshot(ctx context.Context, req *driver.CreateSnapshotRequest) (*driver.Snapshot, error) {
	if err := checkParameters("snapshot", req.Parameters); err != nil {
		return nil, err
	}
	src, err := parseVolumeID(req.SourceVolumeID)
	if err != nil {
		return nil, err
	}
	fsa, err := d.admin(ctx, req.Secrets)
	if err != nil {
		return nil, err
	}
	sv, err := d.lookup(ctx, fsa, src, true)
	if errors.Is(err, errNotReady) || err == nil && !sv.finished() {
		return nil, fmt.Errorf("source volume %q: %w", src, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("source volume: %w", err)
	}
	snap := CephName(req.Name)
	meta, err := d.snapshotOf(ctx, fsa, src, snap)
	switch {
	case err == nil && readRecord(meta, metaSnapshot) != nil:
		rec := readRecord(meta, metaSnapshot)
		if rec.Name != req.Name || rec.Fingerprint != req.Fingerprint() {
			return nil, fmt.Errorf("snapshot %q exists with another name or parameters: %w", req.Name, driver.ErrAlreadyExists)
		}
		return toSnapshot(src, snap, rec), nil
	case err == nil: // cut by a call that did not get to write its metadata: finish it
	case errors.Is(err, driver.ErrNotFound):
		if other, err := d.findSnapshot(ctx, fsa, snap, src); err != nil {
			return nil, err
		} else if other != "" {
			return nil, fmt.Errorf("snapshot %q exists on another volume (%s): %w", req.Name, other, driver.ErrAlreadyExists)
		}
		if _, err := call(ctx, d.cfg.Timeout, "snapshot create", func() (struct{}, error) {
			err := fsa.CreateSubVolumeSnapshot(d.cfg.FSName, d.cfg.Group, src, snap)
			if errno(err) == syscall.EEXIST {
				err = nil
			}
			return struct{}{}, err
		}); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	// The time of the call that writes the record: within a call of the cut, and the same in
	// every answer from now on.
	rec := &record{Name: req.Name, Fingerprint: req.Fingerprint(), Size: sv.capacity(), Created: time.Now().UTC().Format(time.RFC3339Nano)}
	if _, err := call(ctx, d.cfg.Timeout, "snapshot metadata set", func() (struct{}, error) {
		return struct{}{}, fsa.SetSnapshotMetadata(d.cfg.FSName, d.cfg.Group, src, snap, metaSnapshot, rec.encode())
	}); err != nil {
		return nil, err
	}
	return toSnapshot(src, snap, rec), nil
}

// findSnapshot returns the subvolume other than skip that has a snapshot named snap, or "".
func (d *Driver) findSnapshot(ctx context.Context, fsa *fsAdmin, snap, skip string) (string, error) {
	names, err := call(ctx, d.cfg.Timeout, "subvolume ls", func() ([]string, error) {
		return fsa.ListSubVolumes(d.cfg.FSName, d.cfg.Group)
	})
	if err != nil {
		return "", err
	}
	for _, n := range names {
		if n == skip || !issued(n) {
			continue
		}
		snaps, err := call(ctx, d.cfg.Timeout, "snapshot ls", func() ([]string, error) {
			return fsa.ListSubVolumeSnapshots(d.cfg.FSName, d.cfg.Group, n)
		})
		if errors.Is(err, driver.ErrNotFound) || errors.Is(err, driver.ErrUnavailable) && errno(err) == syscall.EAGAIN {
			continue // deleted meanwhile, or a clone in progress (which has no snapshots)
		}
		if err != nil {
			return "", err
		}
		for _, s := range snaps {
			if s == snap {
				return n, nil
			}
		}
	}
	return "", nil
}

// DeleteSnapshot removes a subvolume snapshot. One a clone is still copying from is in use.
func (d *Driver) DeleteSnapshot(ctx context.Context, req *driver.DeleteSnapshotRequest) error {
	sv, snap, err := parseSnapshotID(req.SnapshotID)
	if err != nil {
		return err
	}
	fsa, err := d.admin(ctx, req.Secrets)
	if err != nil {
		return err
	}
	_, err = call(ctx, d.cfg.Timeout, "snapshot rm", func() (struct{}, error) {
		return struct{}{}, fsa.RemoveSubVolumeSnapshot(d.cfg.FSName, d.cfg.Group, sv, snap)
	})
	if errors.Is(err, driver.ErrNotFound) {
		return nil
	}
	if errno(err) == syscall.EAGAIN {
		return fmt.Errorf("snapshot %q has clones in progress: %w", req.SnapshotID, driver.ErrInUse)
	}
	return err
}

// GetSnapshot returns one snapshot.
func (d *Driver) GetSnapshot(ctx context.Context, req *driver.GetSnapshotRequest) (*driver.Snapshot, error) {
	sv, snap, err := parseSnapshotID(req.SnapshotID)
	if err != nil {
		return nil, err
	}
	fsa, err := d.adminOrLast(ctx, req.Secrets)
	if err != nil {
		return nil, err
	}
	meta, err := d.snapshotOf(ctx, fsa, sv, snap)
	if err != nil {
		return nil, err
	}
	rec := readRecord(meta, metaSnapshot)
	if rec == nil {
		return nil, fmt.Errorf("snapshot %q: %w", req.SnapshotID, driver.ErrNotFound)
	}
	return toSnapshot(sv, snap, rec), nil
}

// ListSnapshots lists the finished snapshots of one volume, or of every volume.
func (d *Driver) ListSnapshots(ctx context.Context, req *driver.ListSnapshotsRequest) ([]driver.Snapshot, error) {
	if req.SnapshotID != "" {
		s, err := d.GetSnapshot(ctx, &driver.GetSnapshotRequest{SnapshotID: req.SnapshotID, Secrets: req.Secrets})
		if errors.Is(err, driver.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []driver.Snapshot{*s}, nil
	}
	fsa, err := d.adminOrLast(ctx, req.Secrets)
	if err != nil {
		return nil, err
	}
	var volumes []string
	if req.SourceVolumeID != "" {
		v, err := parseVolumeID(req.SourceVolumeID)
		if err != nil {
			return nil, nil
		}
		volumes = []string{v}
	} else {
		volumes, err = call(ctx, d.cfg.Timeout, "subvolume ls", func() ([]string, error) {
			return fsa.ListSubVolumes(d.cfg.FSName, d.cfg.Group)
		})
		if errors.Is(err, driver.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	var out []driver.Snapshot
	for _, v := range volumes {
		if !issued(v) {
			continue
		}
		snaps, err := call(ctx, d.cfg.Timeout, "snapshot ls", func() ([]string, error) {
			return fsa.ListSubVolumeSnapshots(d.cfg.FSName, d.cfg.Group, v)
		})
		if errors.Is(err, driver.ErrNotFound) || errno(err) == syscall.EAGAIN {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, s := range snaps {
			if !issued(s) {
				continue // a clone's own snapshot
			}
			meta, err := d.snapshotOf(ctx, fsa, v, s)
			if errors.Is(err, driver.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if rec := readRecord(meta, metaSnapshot); rec != nil {
				out = append(out, *toSnapshot(v, s, rec))
			}
		}
	}
	return out, nil
}

// adminOrLast is admin for a call whose secrets are optional in CSI (ListSnapshots,
// GetSnapshot, ValidateVolumeCapabilities): the identity in them, else (no Ceph identity among
// them) that of the last call that carried one.
func (d *Driver) adminOrLast(ctx context.Context, secrets driver.Secrets) (*fsAdmin, error) {
	if secrets[SecretUserID] != "" || secrets[SecretUserKey] != "" {
		return d.admin(ctx, secrets)
	}
	conn, err := d.cl.lastConn()
	if err != nil {
		return nil, err
	}
	return &fsAdmin{FSAdmin: admin.NewFromConn(conn), conn: conn}, nil
}
