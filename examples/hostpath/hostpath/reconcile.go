package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
)

// reconcile makes the controller state and the disk agree after a crash. Creates write the
// backing before the record, deletes remove the backing before the record, so:
//   - a backing without a record is a create that did not commit: it is removed;
//   - a record without a backing is a delete that did not commit: the record is dropped;
//   - the used-bytes and attachment counters are recomputed from the records.
func (c *Controller) reconcile() error {
	volumes := map[string]volumeRecord{}
	snapshots := map[string]snapshotRecord{}
	groups := map[string]groupRecord{}
	err := c.st.view(func(tx *bolt.Tx) error {
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
				c.log.Info("removing the backing of a create that did not commit", zap.String("id", id))
				if err := removeAll(filepath.Join(sd, e.Name())); err != nil {
					return err
				}
			}
		}
	}

	// Records without backings.
	var goneVolumes []volumeRecord
	for _, r := range volumes {
		if _, err := os.Stat(c.l.backing(r.Kind, r.ID)); errors.Is(err, os.ErrNotExist) {
			goneVolumes = append(goneVolumes, r)
		}
	}
	var goneSnapshots []snapshotRecord
	for _, r := range snapshots {
		if _, err := os.Stat(c.l.snapshotBacking(r.Kind, r.ID)); errors.Is(err, os.ErrNotExist) {
			goneSnapshots = append(goneSnapshots, r)
		}
	}
	return c.st.update(func(tx *bolt.Tx) error {
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
		}
		for _, r := range goneSnapshots {
			c.log.Info("dropping the record of a snapshot delete that did not commit", zap.String("snapshot", r.ID))
			if err := delSnapshot(tx, &r); err != nil {
				return err
			}
		}
		for _, g := range groups {
			alive := 0
			for _, m := range g.Members {
				if _, ok := snapshots[m]; ok && !contains(goneSnapshots, m) {
					alive++
				}
			}
			if alive == 0 {
				if err := del(tx, bGroups, g.ID); err != nil {
					return err
				}
				if err := del(tx, bGroupNames, g.Name); err != nil {
					return err
				}
			}
		}
		// Recompute the counters from the records.
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
}

func contains(rs []snapshotRecord, id string) bool {
	for _, r := range rs {
		if r.ID == id {
			return true
		}
	}
	return false
}
