package hostpath

import (
	"fmt"
	"os"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver/nodemount"
)

// reconcile makes the node's records and the kernel agree after a restart: records of mounts
// that are gone are dropped, loop devices nothing explains are detached, ephemeral volumes whose
// publish did not commit are removed, and format intents of deleted volumes are forgotten.
func (n *Node) reconcile() error {
	keep, err := n.dropGoneRecords()
	if err != nil {
		return err
	}
	if err := n.detachUnexplainedLoops(keep); err != nil {
		return err
	}
	if err := n.removeUnpublishedEphemerals(); err != nil {
		return err
	}
	return n.dropFormatIntentsOfGoneVolumes()
}

// dropGoneRecords drops the stage and publish records whose mount (or, for a block stage, loop
// device) is gone, and returns the images of the stages that remain.
func (n *Node) dropGoneRecords() (map[string]bool, error) {
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
		return nil, err
	}
	var dropStaged, dropPublished []string
	for _, p := range published {
		if ok, err := n.isMounted(p.Target); err != nil {
			return nil, err
		} else if !ok {
			dropPublished = append(dropPublished, pubKey(p.VolumeID, p.Target))
		}
	}
	for _, s := range staged {
		if s.Block {
			if dev, err := nodemount.FindLoop(n.l.volumeImage(s.VolumeID)); err != nil {
				return nil, err
			} else if dev == "" {
				dropStaged = append(dropStaged, s.VolumeID)
			}
			continue
		}
		if ok, err := n.isMounted(s.Path); err != nil {
			return nil, err
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
			return nil, err
		}
	}
	keep := map[string]bool{}
	for _, s := range staged {
		if !slices.Contains(dropStaged, s.VolumeID) {
			keep[n.l.volumeImage(s.VolumeID)] = true
		}
	}
	return keep, nil
}

// detachUnexplainedLoops detaches loop devices on this driver's images that no staged record
// (keep) explains and no mount uses: left by a stage that crashed before it committed.
func (n *Node) detachUnexplainedLoops(keep map[string]bool) error {
	loops, err := nodemount.Loops()
	if err != nil {
		return err
	}
	infos, err := nodemount.Mounts()
	if err != nil {
		return err
	}
	for _, l := range loops {
		if !within(l.BackingFile, n.l.volumesDir()) || keep[l.BackingFile] {
			continue
		}
		if deviceMounted(infos, l.Device) {
			continue // a stage interrupted after mounting: its retry or unstage will adopt it
		}
		n.log.Info("detaching an unused loop device", zap.String("device", l.Device), zap.String("backing", l.BackingFile))
		if err := nodemount.DetachLoopDevice(l.Device); err != nil {
			return err
		}
	}
	return nil
}

// removeUnpublishedEphemerals removes ephemeral volumes without a publication: a publish that
// crashed before it committed.
func (n *Node) removeUnpublishedEphemerals() error {
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
		if err := n.removeEphemeralIfUnused(id); err != nil {
			// In use or not removable now: its unpublish, or the next start, tries again.
			n.log.Warn("cannot remove an unpublished ephemeral volume", zap.String("volume", id), zap.Error(err))
		}
	}
	return nil
}

// dropFormatIntentsOfGoneVolumes forgets that mkfs was started on volumes that no longer exist.
func (n *Node) dropFormatIntentsOfGoneVolumes() error {
	var intents []string
	if err := n.st.view(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bFormatting)).ForEach(func(k, _ []byte) error {
			if _, _, err := n.backingOf(string(k)); err != nil {
				intents = append(intents, string(k))
			}
			return nil
		})
	}); err != nil {
		return err
	}
	if len(intents) == 0 {
		return nil
	}
	return n.st.update(func(tx *bolt.Tx) error {
		for _, k := range intents {
			if err := del(tx, bFormatting, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// deviceMounted says whether a filesystem on the loop device dev is mounted: the mount table names
// it by its device path or, when the device was attached again, by its major:minor.
func deviceMounted(infos []nodemount.Info, dev string) bool {
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
