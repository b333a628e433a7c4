package cephfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/nodemount"
)

// fuseType is the filesystem type ceph-fuse mounts show in the mount table.
const fuseType = "fuse.ceph-fuse"

func isCephFuse(m *nodemount.Info) bool { return m.FsType == fuseType }

// subvolumePathRE is what the volumes module's paths look like (/volumes/GROUP/NAME/UUID); the
// path comes from the volume context, which the CO stores and a user may have written, so it is
// checked before it reaches ceph-fuse's command line.
var subvolumePathRE = regexp.MustCompile(`^/volumes/[A-Za-z0-9_-]+/[A-Za-z0-9_-]+/[A-Za-z0-9_-]+$`)

// NodeStageVolume mounts the subvolume with ceph-fuse at the staging path, as the user in the
// node-stage secret. The key reaches ceph-fuse through a keyring file (mode 0600, in a directory
// of mode 0700) that is removed as soon as ceph-fuse has mounted or failed: never on a command
// line, where any process could read it.
func (d *Driver) NodeStageVolume(ctx context.Context, req *driver.NodeStageVolumeRequest) error {
	if err := filesystemsOnly([]driver.VolumeCapability{req.Capability}); err != nil {
		return err
	}
	name, err := parseVolumeID(req.VolumeID)
	if err != nil {
		return err
	}
	cr, err := credentialsFrom(req.Secrets)
	if err != nil {
		return err
	}
	if fs := req.VolumeContext[ContextFSName]; fs != "" && fs != d.cfg.FSName {
		return fmt.Errorf("volume %q lives in filesystem %q; this driver serves %q: %w", name, fs, d.cfg.FSName, driver.ErrNotFound)
	}
	path := req.VolumeContext[ContextSubvolumePath]
	if path == "" { // a volume provisioned by hand: ask the mgr where it is
		fsa, err := d.admin(ctx, req.Secrets)
		if err != nil {
			return err
		}
		if path, err = call(ctx, d.cfg.Timeout, "subvolume getpath", func() (string, error) {
			return fsa.SubVolumePath(d.cfg.FSName, d.cfg.Group, name)
		}); err != nil {
			return err
		}
	}
	if !subvolumePathRE.MatchString(path) {
		return fmt.Errorf("volume context %s=%q is not a subvolume path: %w", ContextSubvolumePath, path, driver.ErrInvalidArgument)
	}
	if pathVolume(path) != name {
		// The context belongs to another volume: this one is not where it says.
		return fmt.Errorf("volume %q: its context names subvolume %q: %w", name, pathVolume(path), driver.ErrNotFound)
	}
	staging := req.StagingTargetPath
	if m, err := nodemount.At(staging); err != nil {
		return err
	} else if m != nil {
		served := servedPaths(staging)
		switch {
		case isCephFuse(m) && slices.Contains(served, path):
			return nil // staged already, by an earlier call
		case isCephFuse(m) && len(served) == 0:
			// Its ceph-fuse is gone (it ran in the node plugin's container, which restarted,
			// or it died): the mount answers ENOTCONN to everything. Take it off and mount
			// afresh, or the volume could never be staged here again.
			if err := d.unmount(ctx, staging); err != nil {
				return fmt.Errorf("%s: a ceph-fuse mount whose daemon is gone: %w", staging, err)
			}
		default:
			return fmt.Errorf("%s already has another mount (%s): %w", staging, m.FsType, driver.ErrAlreadyExists)
		}
	}
	if err := d.cephFuse(ctx, cr, path, staging); err != nil {
		return err
	}
	m, err := nodemount.At(staging)
	if err != nil {
		return err
	}
	if m == nil || !isCephFuse(m) {
		return fmt.Errorf("ceph-fuse exited with success but %s is not a ceph-fuse mount", staging)
	}
	return nil
}

// cephFuseConf is the rest of ceph-fuse's configuration: no log file and no admin socket (the
// node has no place for them), and nothing written to the standard streams. The daemon
// ceph-fuse leaves behind closes stdin, stdout and stderr, and libfuse's splice pipes then take
// descriptors 0 to 2; Ceph's logger still wrote its errors to stderr, that is into a pipe that
// carries FUSE requests, and a request mixed with a log line was never answered: its caller
// (kubelet's stat, a pod's read) waited forever. In the node plugin's container that happened
// within minutes, as ceph-fuse logged an error on every request (it cannot look up the groups
// of callers outside its PID namespace). TestStagedVolumeServesCallersOutsideItsPIDNamespace.
const cephFuseConf = "\tlog_to_file = false\n\tadmin_socket =\n\tlog_to_stderr = false\n\terr_to_stderr = false\n"

// mountFailedRE finds the errno in ceph-fuse's "ceph mount failed with (110) Connection timed out".
var mountFailedRE = regexp.MustCompile(`failed with \((\d+)\)`)

// cephFuse runs ceph-fuse, which daemonises once the mount is made (or exits non-zero).
func (d *Driver) cephFuse(ctx context.Context, cr credentials, path, staging string) error {
	dir, err := os.MkdirTemp("", "csikit-cephfs-")
	if err != nil {
		return fmt.Errorf("ceph-fuse: %w", err)
	}
	defer os.RemoveAll(dir)
	keyring := filepath.Join(dir, "keyring")
	if err := os.WriteFile(keyring, []byte("[client."+cr.id+"]\n\tkey = "+cr.key+"\n"), 0o600); err != nil {
		return fmt.Errorf("ceph-fuse: write keyring: %w", err)
	}
	conf := filepath.Join(dir, "ceph.conf")
	secs := int(d.cfg.Timeout / time.Second)
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[global]\n\tmon_host = %s\n\tclient_mount_timeout = %d\n%s",
		strings.ReplaceAll(d.cfg.Monitors, "\n", " "), secs, cephFuseConf)), 0o600); err != nil {
		return fmt.Errorf("ceph-fuse: write ceph.conf: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		return fmt.Errorf("ceph-fuse: %w", err)
	}
	defer out.Close()
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return fmt.Errorf("create staging path: %w", err)
	}
	cmd := exec.CommandContext(ctx, d.cfg.CephFuse, "--conf", conf, "--name", "client."+cr.id, "--keyring", keyring,
		"--client_mountpoint="+path, "--client_fs="+d.cfg.FSName, staging)
	// A file, not a pipe: the daemon ceph-fuse leaves behind would hold a pipe open.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if runErr == nil {
		return nil
	}
	if ctx.Err() != nil {
		// ceph-fuse was killed mid-mount: take off whatever it may have mounted.
		_ = d.unmount(context.WithoutCancel(ctx), staging)
		return fmt.Errorf("ceph-fuse %s: %w", staging, ctx.Err())
	}
	msg, _ := os.ReadFile(out.Name())
	msg = bytes.TrimSpace(msg)
	if len(msg) > 512 {
		msg = msg[len(msg)-512:]
	}
	err = fmt.Errorf("ceph-fuse %s: %w: %s", staging, runErr, msg)
	if m := mountFailedRE.FindSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(string(m[1]))
		switch syscall.Errno(n) {
		case syscall.ENOENT:
			return fmt.Errorf("%w: %w", err, driver.ErrNotFound)
		case syscall.EPERM, syscall.EACCES:
			return fmt.Errorf("%w: %w", err, driver.ErrUnauthenticated)
		}
		return classify(&errnoError{err, n})
	}
	if bytes.Contains(msg, []byte("failed to fetch mon config")) {
		// No monitor answered within client_mount_timeout: the cluster is unreachable.
		return fmt.Errorf("%w: %w", err, driver.ErrUnavailable)
	}
	return err
}

// errnoError gives classify the errno ceph-fuse reported.
type errnoError struct {
	error
	n int
}

func (e *errnoError) ErrorCode() int { return e.n }
func (e *errnoError) Unwrap() error  { return e.error }

// pathVolume returns the subvolume name in a subvolume path (/volumes/GROUP/NAME/UUID).
func pathVolume(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) != 5 {
		return ""
	}
	return parts[3]
}

// servedPaths returns the subvolume paths of the ceph-fuse processes serving mountpoint, read
// from their command lines (the daemon keeps the one it was started with).
func servedPaths(mountpoint string) []string {
	var out []string
	for _, p := range cephFuseProcs(mountpoint) {
		out = append(out, p.path)
	}
	return out
}

type fuseProc struct {
	pid  int
	path string
}

// cephFuseProcs lists the live ceph-fuse processes whose mountpoint argument is mountpoint.
func cephFuseProcs(mountpoint string) []fuseProc {
	entries, _ := os.ReadDir("/proc")
	var out []fuseProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != "ceph-fuse" || args[len(args)-1] != mountpoint || exited(pid) {
			continue
		}
		p := fuseProc{pid: pid}
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--client_mountpoint="); ok {
				p.path = v
			}
		}
		out = append(out, p)
	}
	return out
}

// exited reports whether pid is gone or a zombie (a daemon whose reaper has not waited for it).
func exited(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(raw, ')'); i >= 0 && i+2 < len(raw) {
		return raw[i+2] == 'Z' || raw[i+2] == 'X'
	}
	return false
}

// NodeUnstageVolume unmounts the staging path and waits for its ceph-fuse to exit, so nothing of
// the volume is left on the node when it answers.
func (d *Driver) NodeUnstageVolume(ctx context.Context, req *driver.NodeUnstageVolumeRequest) error {
	if _, err := parseVolumeID(req.VolumeID); err != nil {
		return err
	}
	return d.unmount(ctx, req.StagingTargetPath)
}

func (d *Driver) unmount(ctx context.Context, staging string) error {
	m, err := nodemount.At(staging)
	if err != nil || m == nil {
		return err // nothing staged there: done already
	}
	// A bind mount of the staging path keeps ceph-fuse serving after the staging mount is gone,
	// and then it never exits: refuse rather than leave a daemon behind. The CO unpublishes
	// every target before it unstages, so this only meets a CO that did not.
	if isCephFuse(m) {
		others, err := nodemount.MountsOf(staging)
		if errors.Is(err, syscall.ENOTCONN) {
			// The daemon is gone (MountsOf cannot even resolve the path): no bind of the
			// staging path can keep it serving, and unmounting is all that is left to do.
			others, err = nil, nil
		}
		if err != nil {
			return err
		}
		if others = slices.DeleteFunc(others, func(p string) bool { return p == staging }); len(others) > 0 {
			return fmt.Errorf("%s is still published at %s: unpublish first: %w", staging, strings.Join(others, ", "), driver.ErrFailedPrecondition)
		}
	}
	procs := cephFuseProcs(staging)
	owned := func(m *nodemount.Info) (bool, error) { return isCephFuse(m), nil }
	if err := d.mounts.Unmount(staging, owned); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, p := range procs {
		for !exited(p.pid) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("unmounted %s, but its ceph-fuse (pid %d) has not exited: %w", staging, p.pid, driver.ErrUnavailable)
			case <-tick.C:
			}
		}
		reap(p.pid)
	}
	return nil
}

// reap collects the exit status of a ceph-fuse daemon that has exited, if this process is its
// parent. The launcher ceph-fuse exits once the mount is made, so the daemon is adopted by the
// nearest child subreaper or PID 1 of its PID namespace: in a container, that is the driver, and
// a daemon nobody reaps stays a zombie, one per unstage, until the container runs out of PIDs.
// pid is a daemon found by its mountpoint, never a child os/exec waits for (the launcher, which
// cephFuse's cmd.Run reaps; calls on one staging path never overlap). ECHILD (not ours: the
// host's init reaps it) is fine.
func reap(pid int) {
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
}

// NodePublishVolume bind-mounts the staged subvolume at the target path.
func (d *Driver) NodePublishVolume(_ context.Context, req *driver.NodePublishVolumeRequest) error {
	if err := filesystemsOnly([]driver.VolumeCapability{req.Capability}); err != nil {
		return err
	}
	if _, err := parseVolumeID(req.VolumeID); err != nil {
		return err
	}
	if req.StagingTargetPath == "" {
		return fmt.Errorf("volume %q: inline ephemeral volumes are not supported: %w", req.VolumeID, driver.ErrUnsupported)
	}
	m, err := nodemount.At(req.StagingTargetPath)
	if err != nil {
		return err
	}
	if m == nil || !isCephFuse(m) {
		return fmt.Errorf("volume %q is not staged at %s: %w", req.VolumeID, req.StagingTargetPath, driver.ErrFailedPrecondition)
	}
	served := servedPaths(req.StagingTargetPath)
	if !slices.ContainsFunc(served, func(p string) bool { return pathVolume(p) == req.VolumeID }) {
		return fmt.Errorf("volume %q is not the one staged at %s: %w", req.VolumeID, req.StagingTargetPath, driver.ErrNotFound)
	}
	ro := req.Readonly || req.Capability.AccessMode.ReadOnly()
	return d.mounts.Bind(req.StagingTargetPath, req.TargetPath, nodemount.Options{ReadOnly: ro, MountFlags: req.Capability.MountFlags})
}

// NodeUnpublishVolume takes the bind mount off the target and removes the target.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *driver.NodeUnpublishVolumeRequest) error {
	if _, err := parseVolumeID(req.VolumeID); err != nil {
		return err
	}
	owned := func(m *nodemount.Info) (bool, error) { return isCephFuse(m), nil }
	if err := d.mounts.Unmount(req.TargetPath, owned); err != nil {
		return err
	}
	return nodemount.RemoveTarget(req.TargetPath)
}

// NodeGetVolumeStats reports the mount's statfs: ceph-fuse shows the subvolume's quota as the
// filesystem's size (client_quota_df), so Total is the volume's capacity.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *driver.NodeGetVolumeStatsRequest) ([]driver.VolumeUsage, error) {
	m, err := nodemount.At(req.VolumePath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", req.VolumePath, driver.ErrNotFound)
		}
		return nil, err
	}
	if m == nil || !isCephFuse(m) {
		return nil, fmt.Errorf("volume %q is not mounted at %s: %w", req.VolumeID, req.VolumePath, driver.ErrNotFound)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(req.VolumePath, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", req.VolumePath, classify(&errnoError{err, int(errnoOf(err))}))
	}
	bs := uint64(st.Bsize)
	clamp := func(n uint64) int64 {
		if n > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(n)
	}
	return []driver.VolumeUsage{
		{Unit: driver.UsageBytes, Total: clamp(st.Blocks * bs), Used: clamp((st.Blocks - st.Bfree) * bs), Available: clamp(st.Bavail * bs)},
		{Unit: driver.UsageInodes, Total: clamp(st.Files), Used: clamp(st.Files - st.Ffree), Available: clamp(st.Ffree)},
	}, nil
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}
