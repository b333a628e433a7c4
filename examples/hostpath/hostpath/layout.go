package hostpath

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

// Every path the driver creates or deletes is built here from an ID that matched idPattern, under
// the state directory. Names from the CO never become paths, and an ID that does not match is a
// volume that cannot exist (NOT_FOUND), so "../", "/", NUL or very long IDs never reach the file
// system.

// idPattern is the shape of every ID this driver issues.
var idPattern = regexp.MustCompile(`^(vol|snap|group|vg|eph)-[0-9a-f]{32}$`)

func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // the kernel's RNG does not fail on Linux
	}
	return prefix + "-" + hex.EncodeToString(b[:])
}

// ephemeralID derives the backing ID of an inline ephemeral volume from the CO's volume ID, so a
// retried NodePublishVolume finds the same backing.
func ephemeralID(coVolumeID string) string {
	sum := sha256.Sum256([]byte(coVolumeID))
	return "eph-" + hex.EncodeToString(sum[:16])
}

func validID(id string) bool { return idPattern.MatchString(id) }

// layout names the directories under the state directory.
type layout struct {
	root string
	// orderedJournal is true when the state directory's file system commits metadata in one
	// ordered journal (ext4, xfs): then one directory fsync persists every entry made before it
	// (see persistCopy).
	orderedJournal bool
}

func (l layout) volumesDir() string   { return filepath.Join(l.root, "volumes") }
func (l layout) snapshotsDir() string { return filepath.Join(l.root, "snapshots") }

// shard is the subdirectory an ID lives in: the first two hex digits of its random part. Small
// directories keep creating and removing entries cheap (a create in one directory of 10,000
// entries cost 3.5 times as much here) and their changes small in the journal.
func shard(id string) string {
	i := strings.IndexByte(id, '-')
	return id[i+1 : i+3]
}

// shards lists the shard directories under dir (for scans at start-up).
func shards(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var out []string
	for _, d := range des {
		if d.IsDir() && len(d.Name()) == 2 {
			out = append(out, filepath.Join(dir, d.Name()))
		}
	}
	return out, nil
}

// volumeDir is the backing of a filesystem (directory) volume.
func (l layout) volumeDir(id string) string { return filepath.Join(l.volumesDir(), shard(id), id) }

// volumeImage is the backing of a block (image file) volume.
func (l layout) volumeImage(id string) string {
	return filepath.Join(l.volumesDir(), shard(id), id+".img")
}

func (l layout) snapshotDir(id string) string { return filepath.Join(l.snapshotsDir(), shard(id), id) }
func (l layout) snapshotImage(id string) string {
	return filepath.Join(l.snapshotsDir(), shard(id), id+".img")
}

func (l layout) backing(kind, id string) string {
	if kind == kindFile {
		return l.volumeImage(id)
	}
	return l.volumeDir(id)
}

func (l layout) snapshotBacking(kind, id string) string {
	if kind == kindFile {
		return l.snapshotImage(id)
	}
	return l.snapshotDir(id)
}

func (l *layout) prepare() error {
	dirs := []string{l.root, l.volumesDir(), l.snapshotsDir(), l.trashDir()}
	for i := range 256 {
		dirs = append(dirs, filepath.Join(l.volumesDir(), fmt.Sprintf("%02x", i)), filepath.Join(l.snapshotsDir(), fmt.Sprintf("%02x", i)))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(l.root, &fs); err != nil {
		return fmt.Errorf("statfs %s: %w", l.root, err)
	}
	l.orderedJournal = fs.Type == unix.EXT4_SUPER_MAGIC || fs.Type == unix.XFS_SUPER_MAGIC
	return nil
}

// syncDir makes a directory's entries durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// createImage makes a sparse image file of size bytes.
func createImage(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("create image: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("size image: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return fmt.Errorf("close image: %w", err)
	}
	return nil
}

// copyImage copies src to a new dst of size bytes (>= src's size), keeping holes: only the data
// extents of src are read and written.
func copyImage(src, dst string, size int64) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open source image: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("create image: %w", err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close image: %w", cerr)
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if size < st.Size() {
		size = st.Size()
	}
	if err := out.Truncate(size); err != nil {
		return fmt.Errorf("size image: %w", err)
	}
	extents, err := dataExtents(in, st.Size())
	if err != nil {
		return err
	}
	for _, e := range extents {
		if _, err := in.Seek(e.Offset, io.SeekStart); err != nil {
			return err
		}
		if _, err := out.Seek(e.Offset, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(out, in, e.Size); err != nil {
			return fmt.Errorf("copy image data: %w", err)
		}
	}
	// The data must be on disk before the record that names the copy commits: with delayed
	// allocation a journal commit alone does not write it.
	if err := out.Sync(); err != nil {
		return fmt.Errorf("sync image: %w", err)
	}
	return nil
}

// extent is a data range of a sparse file.
type extent struct{ Offset, Size int64 }

// dataExtents lists the data ranges of f with SEEK_DATA/SEEK_HOLE: what is allocated.
func dataExtents(f *os.File, size int64) ([]extent, error) {
	var out []extent
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data after off
		}
		if err != nil {
			return nil, fmt.Errorf("seek data: %w", err)
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil, fmt.Errorf("seek hole: %w", err)
		}
		if end > size {
			end = size
		}
		if end > start {
			out = append(out, extent{Offset: start, Size: end - start})
		}
		off = end
	}
	return out, nil
}
