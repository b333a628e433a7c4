package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"

	"github.com/csikit/csikit/driver"
)

// reconcile makes the controller state and the disk agree after a crash. Creates write the
// backing before the record; deletes move the backing into the trash and empty it before the
// record's delete commits, and remove it after (trash.go), so:
//   - a backing without a record is a create that did not commit: it is removed (unless it is in
//     use, which a create's leftover cannot be);
//   - a record without a backing is a delete that did not commit when the trash holds the
//     volume, its volume group is being deleted, or it was copied from a source (copies are
//     synced before their record commits): the record is dropped, and its volume group
//     membership with it;
//   - a record of a volume made empty whose backing is gone, with no delete under way, is a
//     create acknowledged just before the machine crashed, whose unsynced entry was lost: the
//     empty backing is made again;
//   - what is left in the trash is removed;
//   - a group snapshot with a member gone is a group delete that did not commit: it is finished;
//   - an image smaller than its record is an expansion that did not finish: it is grown;
//   - the used-bytes (volumes and snapshots) and attachment counters are recomputed from the
//     records.
func (c *Controller) reconcile() error {
	volumes := map[string]volumeRecord{}
	snapshots := map[string]snapshotRecord{}
	groups := map[string]groupRecord{}
	groupDeleting := map[string]bool{} // volume IDs whose volume group is being deleted
	err := c.st.view(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte(bVolumeGroupOf)).ForEach(func(k, v []byte) error {
			g, err := getVolumeGroup(tx, string(v))
			if err == nil && g.Deleting {
				groupDeleting[string(k)] = true
			}
			return err
		}); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(bVolumes)).ForEach(func(k, v []byte) error {
			var r volumeRecord
			if err := jsonDecode(v, &r); err != nil {
				return err
			}
			volumes[string(k)] = r
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(bSnapshots)).ForEach(func(k, v []byte) error {
			var r snapshotRecord
			if err := jsonDecode(v, &r); err != nil {
				return err
			}
			snapshots[string(k)] = r
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket([]byte(bGroups)).ForEach(func(k, v []byte) error {
			var r groupRecord
			if err := jsonDecode(v, &r); err != nil {
				return err
			}
			groups[string(k)] = r
			return nil
		})
	})
	if err != nil {
		return err
	}

	// Backings without records.
	for _, dir := range []struct {
		path   string
		prefix string
		known  func(id string) bool
	}{
		{c.l.volumesDir(), "vol-", func(id string) bool { _, ok := volumes[id]; return ok }},
		{c.l.snapshotsDir(), "snap-", func(id string) bool { _, ok := snapshots[id]; return ok }},
	} {
		shardDirs, err := shards(dir.path)
		if err != nil {
			return err
		}
		for _, sd := range shardDirs {
			entries, err := os.ReadDir(sd)
			if err != nil {
				return fmt.Errorf("read %s: %w", sd, err)
			}
			for _, e := range entries {
				id := strings.TrimSuffix(e.Name(), ".img")
				if !validID(id) || !strings.HasPrefix(id, dir.prefix) || dir.known(id) {
					continue
				}
				path := filepath.Join(sd, e.Name())
				kind := kindDir
				if e.Name() != id {
					kind = kindFile
				}
				if where, err := backingInUse(kind, path); err != nil || where != "" {
					// Not the leftover of a create after all: something uses it. Never deleted
					// from under a user; an operator has to look.
					c.log.Warn("keeping a backing without a record: it is in use", zap.String("id", id), zap.String("where", where), zap.Error(err))
					continue
				}
				c.log.Info("removing the backing of a create that did not commit", zap.String("id", id))
				if err := removeAll(path); err != nil {
					return err
				}
			}
		}
	}

	// Records without backings.
	trash, err := c.l.trashEntries()
	if err != nil {
		return err
	}
	inTrash := map[string]bool{}
	for _, name := range trash {
		inTrash[strings.TrimSuffix(name, ".img")] = true
	}
	var goneVolumes []volumeRecord
	for _, r := range volumes {
		backing := c.l.backing(r.Kind, r.ID)
		if _, err := os.Stat(backing); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if inTrash[r.ID] || groupDeleting[r.ID] || r.Source != (driver.ContentSource{}) {
			goneVolumes = append(goneVolumes, r)
			continue
		}
		c.log.Warn("making again the empty backing of a volume whose create committed but whose new entry did not survive a crash of the machine",
			zap.String("volume", r.ID))
		if err := makeBacking(r.Kind, backing, "", r.Size); err != nil {
			return err
		}
	}
	gone := map[string]bool{} // snapshot IDs whose records are dropped
	var goneSnapshots []snapshotRecord
	for _, r := range snapshots {
		if _, err := os.Stat(c.l.snapshotBacking(r.Kind, r.ID)); errors.Is(err, os.ErrNotExist) {
			goneSnapshots = append(goneSnapshots, r)
			gone[r.ID] = true
		}
	}
	// A group with a member gone is a group delete that did not commit (a create commits the
	// group and all its members at once): it is finished, the remaining members removed too.
	var goneGroups []groupRecord
	for _, g := range groups {
		if !slices.ContainsFunc(g.Members, func(m string) bool { _, ok := snapshots[m]; return !ok || gone[m] }) {
			continue
		}
		c.log.Info("finishing the delete of a group snapshot that did not commit", zap.String("group", g.ID))
		for _, m := range g.Members {
			r, ok := snapshots[m]
			if !ok || gone[m] {
				continue
			}
			if err := removeAll(c.l.snapshotBacking(r.Kind, r.ID)); err != nil {
				return err
			}
			goneSnapshots = append(goneSnapshots, r)
			gone[m] = true
		}
		goneGroups = append(goneGroups, g)
	}
	// Image files smaller than their record: an expansion that committed and was cut short
	// before it grew the file. Images only ever grow.
	for _, r := range volumes {
		if err := c.growImage(&r); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	err = c.st.update(func(tx *bolt.Tx) error {
		for _, r := range goneVolumes {
			c.log.Info("dropping the record of a delete that did not commit", zap.String("volume", r.ID))
			delete(volumes, r.ID)
			if err := del(tx, bVolumes, r.ID); err != nil {
				return err
			}
			if getString(tx, bVolumeNames, r.Name) == r.ID {
				if err := del(tx, bVolumeNames, r.Name); err != nil {
					return err
				}
			}
			// A volume group delete cut short: the member's record goes, and so does its
			// membership, so the retried delete finds only what is left.
			if g := getString(tx, bVolumeGroupOf, r.ID); g != "" {
				if err := leave(tx, g, r.ID); err != nil {
					return err
				}
			}
		}
		for _, r := range goneSnapshots {
			c.log.Info("dropping the record of a snapshot delete that did not commit", zap.String("snapshot", r.ID))
			delete(snapshots, r.ID)
			if err := delSnapshot(tx, &r); err != nil {
				return err
			}
		}
		for _, g := range goneGroups {
			if err := del(tx, bGroups, g.ID); err != nil {
				return err
			}
			if getString(tx, bGroupNames, g.Name) == g.ID {
				if err := del(tx, bGroupNames, g.Name); err != nil {
					return err
				}
			}
		}
		// Recompute the counters from the records: volumes and snapshots use pool space.
		meta := tx.Bucket([]byte(bMeta))
		var keys [][]byte
		_ = meta.ForEach(func(k, _ []byte) error { keys = append(keys, append([]byte(nil), k...)); return nil })
		for _, k := range keys {
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		var used int64
		attached := map[string]int64{}
		for _, r := range volumes {
			used += r.Size
			for node := range r.Published {
				attached[node]++
			}
		}
		for _, r := range snapshots {
			used += r.Size
		}
		if err := addCounter(tx, bMeta, metaUsed, used); err != nil {
			return err
		}
		for node, n := range attached {
			if err := addCounter(tx, bMeta, metaAttachedPrefix+node, n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Deletes that committed, or whose records were just dropped: finish them.
	for _, name := range trash {
		if err := removeAll(filepath.Join(c.l.trashDir(), name)); err != nil {
			// Something is mounted inside: never deleted from under a user.
			c.log.Warn("keeping a trash entry: it is in use", zap.String("entry", name), zap.Error(err))
		}
	}
	return nil
}
