package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/csikit/csikit/driver"
)

// DeleteVolume moves the backing into the trash directory, empties it there, commits the
// record's delete, and only then removes the emptied entry. The trash entry is what lets the
// start-up tell apart the two ways a record can be found without its backing:
//
//   - A delete cut short by any crash before its commit: the trash holds the volume's entry. The
//     record is dropped, as the CO's retry of the delete would do.
//   - A create acknowledged just before the machine (not only the process) crashed, whose new
//     directory or image file had not reached the disk. The record's commit does not make the
//     new entry durable: bbolt syncs its file with fdatasync, which on ext4 commits the file
//     system's journal only when its own file's size or block map changed, not when it overwrites
//     pages it already has, as it mostly does. The entry held nothing anyone had synced (a sync
//     of anything inside it would have committed the entry too), so the start-up makes it again,
//     empty, and the acknowledged volume survives without a directory fsync on every create.
//
// A copy (a clone or a snapshot) cannot be made again, so its entries are synced before its
// record commits (persistCopy): a copied backing found missing is a delete cut short.

func (l layout) trashDir() string { return filepath.Join(l.root, "trash") }

// trashed is where the backing of volume id waits while it is deleted.
func (l layout) trashed(kind, id string) string {
	return filepath.Join(l.trashDir(), filepath.Base(l.backing(kind, id)))
}

// discard moves a volume's backing into the trash and empties it there, leaving the empty
// directory or the image file as the mark of a delete under way. A mount met inside stops it
// with ErrInUse and puts the backing back where it was. A backing already in the trash (a
// retried delete) is emptied there.
func (l layout) discard(kind, id string) error {
	backing, trash := l.backing(kind, id), l.trashed(kind, id)
	if err := os.Rename(backing, trash); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("move volume %q to the trash: %w", id, err)
	}
	if kind == kindFile {
		return nil // an image is removed whole once the delete has committed
	}
	err := emptyDir(trash)
	switch {
	case err == nil, errors.Is(err, os.ErrNotExist):
		return nil
	case errors.Is(err, driver.ErrInUse):
		if rerr := os.Rename(trash, backing); rerr != nil {
			return fmt.Errorf("%w (and putting volume %q back failed: %v)", err, id, rerr)
		}
	}
	return err
}

// purge removes a volume's trash entry once its delete has committed.
func (l layout) purge(kind, id string) error { return removeAll(l.trashed(kind, id)) }

// emptyDir deletes everything inside the directory path and keeps path. Like removeAll it never
// follows a symlink and never deletes through a mount: meeting one, it stops with ErrInUse.
func emptyDir(path string) error {
	parent, err := openDir(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer parent.Close()
	dev, err := devOf(parent)
	if err != nil {
		return err
	}
	d, err := openDirAt(parent, filepath.Base(path))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := removeContent(d, dev); err != nil {
		if errors.Is(err, errMountInside) {
			return fmt.Errorf("empty %s: %w: %w", path, err, driver.ErrInUse)
		}
		return fmt.Errorf("empty %s: %w", path, err)
	}
	return nil
}

// trashEntries lists the names in the trash (backing names: an ID, or an ID and ".img").
func (l layout) trashEntries() ([]string, error) {
	des, err := os.ReadDir(l.trashDir())
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.trashDir(), err)
	}
	names := make([]string, len(des))
	for i, de := range des {
		names[i] = de.Name()
	}
	return names, nil
}

// persistCopy makes a copied backing (a clone or a snapshot) durable before the record that
// names it commits: unlike an empty new volume, its content cannot be made again at start-up.
// The copied files were synced as they were written; this syncs the entries. On an ordered
// journal (ext4, xfs) one directory fsync commits every change made before it, the entries of the
// whole tree included; elsewhere the backing's own entries (a directory) and its entry in its
// parent are synced.
func (l layout) persistCopy(backing string) error {
	if !l.orderedJournal {
		if fi, err := os.Stat(backing); err == nil && fi.IsDir() {
			if err := syncDir(backing); err != nil {
				return err
			}
		}
	}
	return syncDir(filepath.Dir(backing))
}
