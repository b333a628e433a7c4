package drivertest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"k8s.io/mount-utils"
)

// Every spec gets fresh directories, so a mount one spec leaves behind (or a target path a
// driver failed to remove) cannot fail the specs after it. csi-sanity publishes at
// <target dir>/target (and /other_target) and stages at <staging dir> itself.

func (r *run) configurePaths(cfg *sanity.TestConfig) {
	cfg.TargetPath = filepath.Join(r.root, "target")
	cfg.StagingPath = filepath.Join(r.root, "staging")
	cfg.CreateTargetDir = func(string) (string, error) { return r.makeDir("target-") }
	cfg.CreateStagingDir = func(string) (string, error) { return r.makeDir("staging-") }
	cfg.RemoveTargetPath = r.removeDir
	cfg.RemoveStagingPath = r.removeDir
	// With CreateTargetDir set, csi-sanity skips its target-path removal spec unless CheckPath is
	// set too.
	cfg.CheckPath = checkPath
}

func (r *run) makeDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp(r.root, prefix)
	if err != nil {
		return "", fmt.Errorf("make a spec directory: %w", err)
	}
	// A driver running as another user must be able to create its target inside.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("make a spec directory: %w", err)
	}
	return dir, nil
}

// removeDir removes a spec's directory. Anything still mounted below it is unmounted first in the
// privileged profile and reported as an error in the unprivileged one (where it is left alone:
// removing files through a mount would delete the volume's data). Errors are recorded and fail
// the spec, because csi-sanity ignores what this hook returns.
func (r *run) removeDir(dir string) error {
	if err := r.unmountBelow(dir); err != nil {
		r.addCleanupError(err)
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		err = fmt.Errorf("remove %s: %w", dir, err)
		r.addCleanupError(err)
		return err
	}
	return nil
}

// unmountBelow unmounts every mount point at or below dir, deepest first, and repeats while
// mounts remain (mounts can be stacked on one path: CleanupMountPoint takes one layer and then
// fails to remove the still-mounted path), a bounded number of times.
func (r *run) unmountBelow(dir string) error {
	mounter := mount.New("")
	var errs []error
	for attempt := 0; attempt < 8; attempt++ {
		points, err := mountsBelow(mounter, dir)
		if err != nil {
			if r.opts.Privileged {
				return fmt.Errorf("list mounts below %s: %w", dir, err)
			}
			// Without privilege nothing can have been mounted; a platform without a mount
			// table is no reason to fail.
			return nil
		}
		if len(points) == 0 {
			return nil
		}
		if !r.opts.Privileged {
			return fmt.Errorf("%s is still mounted after the spec, left in place: the unprivileged profile does not unmount", strings.Join(points, ", "))
		}
		if attempt == 0 {
			r.addLeftovers(points)
		}
		errs = errs[:0]
		for _, p := range points {
			if err := mount.CleanupMountPoint(p, mounter, true); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return fmt.Errorf("mounts below %s remain after repeated unmounting", dir)
}

// mountsBelow lists the mount points at or below dir, deepest first.
func mountsBelow(mounter mount.Interface, dir string) ([]string, error) {
	mps, err := mounter.List()
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, mp := range mps {
		p := filepath.Clean(mp.Path)
		if p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out), nil
}

// checkPath is csi-sanity's own check (os.Stat), needed because CreateTargetDir is set.
func checkPath(path string) (sanity.PathKind, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return sanity.PathIsNotFound, nil
	case err != nil:
		return "", err
	case fi.Mode().IsRegular():
		return sanity.PathIsFile, nil
	case fi.IsDir():
		return sanity.PathIsDir, nil
	}
	return sanity.PathIsOther, nil
}
