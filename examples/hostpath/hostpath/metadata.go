package hostpath

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/csikit/csikit/driver"
)

// deltaChunk is the unit in which two snapshot images are compared.
const deltaChunk = 64 << 10

func (c *Controller) imageSnapshot(id string) (*snapshotRecord, error) {
	rec, err := c.snapshot(id)
	if err != nil {
		return nil, err
	}
	if rec.Kind != kindFile {
		return nil, fmt.Errorf("snapshot %q is of a directory volume; block metadata exists only for image (block) volumes: %w", id, driver.ErrFailedPrecondition)
	}
	return rec, nil
}

// GetMetadataAllocated streams the data extents of a snapshot image, found with
// SEEK_DATA/SEEK_HOLE: exactly what was ever written.
func (c *Controller) GetMetadataAllocated(ctx context.Context, req *driver.GetMetadataAllocatedRequest) (*driver.BlockMetadataStream, error) {
	rec, err := c.imageSnapshot(req.SnapshotID)
	if err != nil {
		return nil, err
	}
	path := c.l.snapshotImage(rec.ID)
	return &driver.BlockMetadataStream{
		Type:                driver.VariableLength,
		VolumeCapacityBytes: rec.Size,
		Blocks: func(yield func(driver.BlockRange, error) bool) {
			f, err := os.Open(path)
			if err != nil {
				yield(driver.BlockRange{}, fmt.Errorf("open snapshot image: %w", err))
				return
			}
			defer f.Close()
			extents, err := dataExtents(f, rec.Size)
			if err != nil {
				yield(driver.BlockRange{}, err)
				return
			}
			for _, e := range extents {
				if !yield(driver.BlockRange{Offset: e.Offset, Size: e.Size}, nil) {
					return
				}
			}
		},
	}, nil
}

// GetMetadataDelta streams the ranges whose content differs between two snapshots of one volume.
// Only the data extents of either image are read (a hole in both cannot differ), compared in 64
// KiB chunks, and adjacent changed chunks are merged.
func (c *Controller) GetMetadataDelta(ctx context.Context, req *driver.GetMetadataDeltaRequest) (*driver.BlockMetadataStream, error) {
	base, err := c.imageSnapshot(req.BaseSnapshotID)
	if err != nil {
		return nil, err
	}
	target, err := c.imageSnapshot(req.TargetSnapshotID)
	if err != nil {
		return nil, err
	}
	if base.Source != target.Source {
		return nil, fmt.Errorf("snapshots %q and %q are of different volumes: %w", base.ID, target.ID, driver.ErrInvalidArgument)
	}
	basePath, targetPath := c.l.snapshotImage(base.ID), c.l.snapshotImage(target.ID)
	return &driver.BlockMetadataStream{
		Type:                driver.VariableLength,
		VolumeCapacityBytes: target.Size,
		Blocks: func(yield func(driver.BlockRange, error) bool) {
			for r, err := range changedRanges(basePath, targetPath, target.Size) {
				if !yield(r, err) || err != nil {
					return
				}
			}
		},
	}, nil
}

// changedRanges yields the merged ranges where two images differ, within size bytes.
func changedRanges(basePath, targetPath string, size int64) iter.Seq2[driver.BlockRange, error] {
	return func(yield func(driver.BlockRange, error) bool) {
		fail := func(err error) { yield(driver.BlockRange{}, err) }
		bf, err := os.Open(basePath)
		if err != nil {
			fail(err)
			return
		}
		defer bf.Close()
		tf, err := os.Open(targetPath)
		if err != nil {
			fail(err)
			return
		}
		defer tf.Close()
		be, err := dataExtents(bf, size)
		if err != nil {
			fail(err)
			return
		}
		te, err := dataExtents(tf, size)
		if err != nil {
			fail(err)
			return
		}
		a, b := make([]byte, deltaChunk), make([]byte, deltaChunk)
		var pending driver.BlockRange
		for _, span := range unionChunks(be, te, size) {
			for off := span.Offset; off < span.Offset+span.Size; off += deltaChunk {
				n := min(deltaChunk, span.Offset+span.Size-off)
				if err := readAt(bf, a[:n], off); err != nil {
					fail(err)
					return
				}
				if err := readAt(tf, b[:n], off); err != nil {
					fail(err)
					return
				}
				if bytes.Equal(a[:n], b[:n]) {
					continue
				}
				if pending.Size > 0 && pending.End() == off {
					pending.Size += n
					continue
				}
				if pending.Size > 0 && !yield(pending, nil) {
					return
				}
				pending = driver.BlockRange{Offset: off, Size: n}
			}
		}
		if pending.Size > 0 {
			yield(pending, nil)
		}
	}
}

// unionChunks merges two extent lists into sorted, non-overlapping spans aligned to deltaChunk.
func unionChunks(a, b []extent, size int64) []extent {
	all := append(append([]extent{}, a...), b...)
	for i := range all {
		start := all[i].Offset / deltaChunk * deltaChunk
		end := min((all[i].Offset+all[i].Size+deltaChunk-1)/deltaChunk*deltaChunk, size)
		all[i] = extent{Offset: start, Size: end - start}
	}
	// insertion into a sorted result; extent lists are short
	var out []extent
	for _, e := range sortExtents(all) {
		if n := len(out); n > 0 && out[n-1].Offset+out[n-1].Size >= e.Offset {
			out[n-1].Size = max(out[n-1].Offset+out[n-1].Size, e.Offset+e.Size) - out[n-1].Offset
			continue
		}
		out = append(out, e)
	}
	return out
}

func sortExtents(es []extent) []extent {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Offset < es[j-1].Offset; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	return es
}

// readAt fills p from off; reading past the end of a shorter image yields zeros, as a hole would.
func readAt(f *os.File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if err == io.EOF {
		clear(p[n:])
		return nil
	}
	if err != nil {
		return fmt.Errorf("read image: %w", err)
	}
	return nil
}
