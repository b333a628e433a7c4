package cephfs

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ceph/go-ceph/cephfs"
	"github.com/ceph/go-ceph/rados"

	"github.com/csikit/csikit/driver"
)

// ParamMaxFiles is the volume parameter that limits how many files and directories a volume may
// hold: a decimal count, "0" for no limit (the default). It is accepted as a StorageClass
// parameter and as a mutable parameter (a Kubernetes VolumeAttributesClass), which
// ControllerModifyVolume changes on a live volume. CephFS enforces it as the subvolume's
// ceph.quota.max_files: a create beyond it fails with EDQUOT ("Disk quota exceeded") on every
// mount, like the byte quota, and as imprecisely: a client learns the count from the MDS
// within a few seconds, so a burst of creates may pass the limit by the files made meanwhile.
const ParamMaxFiles = "maxFiles"

// xattrMaxFiles is CephFS's file-count quota of a directory, counting the files and
// directories below it and the directory itself.
const xattrMaxFiles = "ceph.quota.max_files"

// maxFilesLimit is the largest maxFiles: the attribute holds one more (the subvolume's own
// directory counts), and Ceph keeps it in an int64.
const maxFilesLimit = math.MaxInt64 - 1

// mutableKeys are the keys ControllerModifyVolume and CreateVolume's mutable parameters take.
var mutableKeys = []string{ParamMaxFiles}

// parseMaxFiles reads a maxFiles value strictly: decimal digits only, no sign, space or leading
// zero, at most maxFilesLimit, so that two spellings never name one limit.
func parseMaxFiles(v string) (int64, error) {
	bad := func(why string) error {
		return fmt.Errorf("parameter %s=%.40q %s: want a decimal count of files and directories (0 for no limit): %w",
			ParamMaxFiles, v, why, driver.ErrInvalidArgument)
	}
	if v == "" {
		return 0, bad("is empty")
	}
	if strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, bad("is not a decimal number")
	}
	if len(v) > 1 && v[0] == '0' {
		return 0, bad("has a leading zero")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > maxFilesLimit {
		return 0, bad(fmt.Sprintf("is more than %d", int64(maxFilesLimit)))
	}
	return n, nil
}

// checkMutable refuses a mutable parameter the driver does not know and a value it cannot
// parse, before anything is asked of Ceph, so that a refused request changes nothing.
func checkMutable(mutable map[string]string) error {
	var unknown []string
	for k := range mutable {
		if !slices.Contains(mutableKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("mutable parameter %s is not supported (cephfs can change %s): %w",
			strings.Join(unknown, ", "), strings.Join(mutableKeys, ", "), driver.ErrInvalidArgument)
	}
	if v, ok := mutable[ParamMaxFiles]; ok {
		if _, err := parseMaxFiles(v); err != nil {
			return err
		}
	}
	return nil
}

// maxFilesOf returns the file limit a request asks for and whether it names one at all. A value
// in mutable takes precedence over one in params, as the CSI spec says; both must be valid.
func maxFilesOf(params, mutable map[string]string) (limit int64, named bool, err error) {
	for _, m := range []map[string]string{params, mutable} { // the later one wins
		v, ok := m[ParamMaxFiles]
		if !ok {
			continue
		}
		if limit, err = parseMaxFiles(v); err != nil {
			return 0, false, err
		}
		named = true
	}
	return limit, named, nil
}

// maxFilesValue is what ceph.quota.max_files holds for a limit of n files and directories: n+1,
// because Ceph counts the subvolume's own directory; "0" is no limit.
func maxFilesValue(n int64) string {
	if n == 0 {
		return "0"
	}
	return strconv.FormatInt(n+1, 10)
}

// applyMaxFiles gives the subvolume at path (its `subvolume getpath`) a limit of n files and
// directories (0: none). The volumes module of Pacific has no command for the file quota (its
// resize sets the byte quota only), so the controller mounts the subvolume with libcephfs as the
// connection's user, reads the attribute and writes it when it differs: a repeat, a retry and a
// clone that already has the right value need only read access, while a change needs the MDS
// cap flag 'p' (e.g. mds "allow rwp"). Bounded by Config.Timeout like every Ceph call. It takes
// about a second, nearly all of it libcephfs' unmount, which waits for the client's one-second
// tick (client_tick_interval, whole seconds) to close the MDS session.
func (d *Driver) applyMaxFiles(ctx context.Context, conn *rados.Conn, path string, n int64) error {
	want := maxFilesValue(n)
	_, err := call(ctx, d.cfg.Timeout, "set "+xattrMaxFiles+" of "+path, func() (struct{}, error) {
		m, err := cephfs.CreateFromRados(conn)
		if err != nil {
			return struct{}{}, fmt.Errorf("libcephfs: %w", err)
		}
		defer m.Release() //nolint:errcheck // after Unmount; nothing left to undo
		if err := m.SelectFilesystem(d.cfg.FSName); err != nil {
			return struct{}{}, fmt.Errorf("select filesystem %q: %w", d.cfg.FSName, err)
		}
		if err := m.MountWithRoot(path); err != nil {
			return struct{}{}, fmt.Errorf("mount: %w", err)
		}
		defer m.Unmount() //nolint:errcheck // the attribute is written or the error says why not
		cur, err := m.GetXattr("/", xattrMaxFiles)
		switch {
		case errno(err) == syscall.ENODATA: // never set
			cur = []byte("0")
		case err != nil:
			return struct{}{}, fmt.Errorf("read: %w", err)
		}
		if string(cur) == want {
			return struct{}{}, nil
		}
		if err := m.SetXattr("/", xattrMaxFiles, []byte(want), 0); err != nil {
			if e := errno(err); e == syscall.EACCES || e == syscall.EPERM {
				return struct{}{}, fmt.Errorf("the user of the secrets may not set quotas (its MDS caps need the flag 'p', e.g. \"allow rwp\"): %w", err)
			}
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	return err
}

// ControllerModifyVolume changes a volume's mutable parameters: maxFiles, the only one. The
// request is checked whole before Ceph is asked (an unknown key or a bad value is
// INVALID_ARGUMENT and changes nothing), then the subvolume's file quota is set; setting the
// value it has is success. Kubernetes' external-resizer sends no secrets with this call, so
// without them it acts as the identity of the last call that carried some, as ListVolumes does.
// The new limit holds on mounted volumes too: ceph-fuse learns it from the MDS.
func (d *Driver) ControllerModifyVolume(ctx context.Context, req *driver.ControllerModifyVolumeRequest) error {
	name, err := parseVolumeID(req.VolumeID)
	if err != nil {
		return err
	}
	if err := checkMutable(req.MutableParameters); err != nil {
		return err
	}
	limit, named, err := maxFilesOf(nil, req.MutableParameters)
	if err != nil {
		return err
	}
	if !named { // the plugin passes at least one key, and checkMutable knows only maxFiles
		return fmt.Errorf("no mutable parameter to change: %w", driver.ErrInvalidArgument)
	}
	fsa, err := d.adminOrLast(ctx, req.Secrets)
	if err != nil {
		return err
	}
	sv, err := d.finishedVolume(ctx, fsa, name)
	if err != nil {
		return err
	}
	return d.applyMaxFiles(ctx, fsa.conn, sv.info.Path, limit)
}
