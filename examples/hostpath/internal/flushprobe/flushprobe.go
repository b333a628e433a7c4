// Package flushprobe times the disk's flush the way a durable commit pays it, so benchmarks can
// report an operation's latency as a multiple of one flush measured in the same run.
package flushprobe

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Probe overwrites one 4 KiB block of a file that already has it and then calls fdatasync, the
// call bbolt makes on commit: no size or block-map change, so no more journal work than a
// commit's own.
type Probe struct {
	f   *os.File
	buf []byte
}

// New creates the probe's file in dir, on the file system whose flush is to be measured, with
// its block already written and synced. Close removes nothing: the file lives in dir.
func New(dir string) (*Probe, error) {
	f, err := os.OpenFile(filepath.Join(dir, "flush-probe"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("flush probe: %w", err)
	}
	p := &Probe{f: f, buf: make([]byte, 4096)}
	if _, err := f.WriteAt(p.buf, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("flush probe: first write: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("flush probe: first sync: %w", err)
	}
	return p, nil
}

// Once rewrites the block, flushes it, and returns how long both took.
func (p *Probe) Once() (time.Duration, error) {
	p.buf[0]++
	start := time.Now()
	if _, err := p.f.WriteAt(p.buf, 0); err != nil {
		return 0, fmt.Errorf("flush probe: write: %w", err)
	}
	if err := unix.Fdatasync(int(p.f.Fd())); err != nil {
		return 0, fmt.Errorf("flush probe: fdatasync: %w", err)
	}
	return time.Since(start), nil
}

// Close closes the probe's file.
func (p *Probe) Close() error { return p.f.Close() }
