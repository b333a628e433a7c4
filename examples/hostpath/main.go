// Command hostpath is a complete CSI driver on a local directory: filesystem volumes as
// directories, block volumes as loop devices, snapshots, clones, expansion, topology, capacity,
// attach limits, ephemeral inline volumes, volume modification, health, group snapshots and
// snapshot metadata. It starts with no arguments at all:
//
//	go run ./examples/hostpath
//
// and listens on unix:///tmp/csikit-hostpath/csi.sock. Its state (database, volumes, snapshots)
// lives elsewhere, because the CSI spec says a plugin SHALL NOT create files next to its socket:
// under /var/lib/csikit-hostpath as root, under the user's cache directory
// ($XDG_CACHE_HOME/csikit-hostpath, usually ~/.cache/csikit-hostpath) otherwise. Mounting needs
// root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"k8s.io/klog/v2"

	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/driver/endpoint"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hostpath:", err)
		os.Exit(1)
	}
}

// defaultEndpoint is where the driver listens with no arguments. Its directory holds the socket
// and nothing else.
const defaultEndpoint = "unix:///tmp/csikit-hostpath/csi.sock"

// rootStateDir is the default state directory when running as root, where the node service
// really mounts; it survives reboots, unlike /tmp, because volumes must.
const rootStateDir = "/var/lib/csikit-hostpath"

// geteuid and userCacheDir are variables so that tests can take the unprivileged path as root
// and point the cache directory into a temporary directory.
var (
	geteuid      = os.Geteuid
	userCacheDir = os.UserCacheDir
)

// defaultStateDir picks the state directory used when --state-dir is not given.
func defaultStateDir() (string, error) {
	if geteuid() == 0 {
		return rootStateDir, nil
	}
	// An unprivileged run is for trying the controller out; a per-user directory needs no
	// permission and is not shared with other users, as a fixed /tmp path would be.
	cache, err := userCacheDir()
	if err != nil {
		return "", fmt.Errorf("no default state directory: %w; pass --state-dir", err)
	}
	return filepath.Join(cache, "csikit-hostpath"), nil
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hostpath", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: defaultEndpoint})
	host, _ := os.Hostname()
	// A failure to find a default matters only if --state-dir is not given; report it then.
	defState, defStateErr := defaultStateDir()
	var (
		nodeID     = fs.String("nodeid", envOr("NODE_ID", host), "this node's ID (default $NODE_ID or the host name)")
		stateDir   = fs.String("state-dir", defState, "directory for the state database, volumes and snapshots; never the socket's directory")
		mode       = fs.String("mode", hostpath.ModeBoth, "services to serve: both, controller or node")
		zone       = fs.String("zone", "", "optional zone reported as topology "+hostpath.TopologyZoneKey)
		capacity   = fs.String("capacity", "1Ti", "pool size reported by GetCapacity (bytes, or with Ki/Mi/Gi/Ti)")
		maxVolume  = fs.String("max-volume-size", "", "largest volume (default: the pool size)")
		maxPerNode = fs.Int64("max-volumes-per-node", 0, "attach limit per node (0 = none)")
		maxMembers = fs.Int("max-group-members", 0, "most volumes one volume group may hold (0 = no limit)")
		mutable    = fs.String("mutable-parameters", "iops,throughput", "comma-separated keys ControllerModifyVolume may change")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stateDir == "" {
		if defStateErr != nil {
			return defStateErr
		}
		return errors.New("--state-dir is empty: name a directory for the state database, volumes and snapshots")
	}
	logger, err := settings.Logger()
	if err != nil {
		return err
	}
	defer logger.Sync() //nolint:errcheck // stderr
	routeKlog(logger)
	if err := checkStateBesideSocket(logger, settings.Endpoint, *stateDir); err != nil {
		return err
	}
	capBytes, err := parseSize(*capacity)
	if err != nil {
		return fmt.Errorf("--capacity: %w", err)
	}
	var maxBytes int64
	if *maxVolume != "" {
		if maxBytes, err = parseSize(*maxVolume); err != nil {
			return fmt.Errorf("--max-volume-size: %w", err)
		}
	}
	var mutableKeys []string
	for _, k := range strings.Split(*mutable, ",") {
		if k = strings.TrimSpace(k); k != "" {
			mutableKeys = append(mutableKeys, k)
		}
	}
	hp, err := hostpath.Open(hostpath.Config{
		StateDir: *stateDir, NodeID: *nodeID, Zone: *zone, CapacityBytes: capBytes, MaxVolumeSize: maxBytes,
		MaxVolumesPerNode: *maxPerNode, MutableParameters: mutableKeys, MaxGroupMembers: *maxMembers, Logger: logger,
	}, *mode)
	if err != nil {
		return err
	}
	defer hp.Close()
	cfg := hp.Config()
	cfg.Logger = logger // the one the backend logs to; Apply keeps it
	// The rest of the flags and variables: --endpoint, --http-endpoint, the OTEL_* tracing.
	flush, err := settings.Apply(ctx, &cfg)
	if err != nil {
		return err
	}
	defer flush() // after Run: the spans of the last calls
	d, err := plugin.New(cfg)
	if err != nil {
		return err
	}
	logger.Info("starting", zap.String("mode", *mode), zap.String("node", *nodeID), zap.String("state", *stateDir))
	return d.Run(ctx)
}

// checkStateBesideSocket refuses a state directory that is the socket's directory or lies inside
// it (the CSI spec: plugins SHALL NOT create additional files or directories adjacent to the
// socket, a directory the CO manages), and warns when the socket's directory holds the state of
// an earlier version, whose default put it there, so that the operator knows where the old
// volumes are instead of finding them gone.
func checkStateBesideSocket(logger *zap.Logger, rawEndpoint, stateDir string) error {
	if rawEndpoint == "" {
		rawEndpoint = os.Getenv("CSI_ENDPOINT")
	}
	// Errors are the driver's to report, with its own wording, when it listens.
	ep, err := endpoint.Parse(rawEndpoint, endpoint.ParseOptions{AllowTCP: true})
	if err != nil || ep.Network != endpoint.NetworkUnix {
		return nil
	}
	socketDir := filepath.Dir(ep.Address)
	realState, realSocketDir := realPath(stateDir), realPath(socketDir)
	if realState == realSocketDir {
		return fmt.Errorf("--state-dir %s is the socket's directory; the CSI spec says a plugin SHALL NOT create files next to its socket: use a directory elsewhere (as root the default is %s)", stateDir, rootStateDir)
	}
	if inside(realState, realSocketDir) {
		// Only the directory on the way to the state sits next to the socket, and an operator
		// may have made it on purpose; say so rather than refuse.
		logger.Warn("the state directory is inside the socket's directory; the CSI spec says a plugin SHALL NOT create files or directories next to its socket: use a directory elsewhere",
			zap.String("state_dir", stateDir), zap.String("socket_dir", socketDir))
	}
	for _, db := range []string{"controller.db", "node.db"} {
		old := filepath.Join(socketDir, db)
		if _, err := os.Stat(old); err == nil {
			logger.Warn("found the state of an earlier hostpath next to the socket, where it no longer lives; move it to the state directory to keep those volumes",
				zap.String("found", old), zap.String("state_dir", stateDir))
		}
	}
	return nil
}

// realPath resolves the longest existing prefix of p through symlinks, so that a directory not
// made yet still compares correctly with one reached through a link.
func realPath(p string) string {
	p, _ = filepath.Abs(p)
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// inside reports whether p is dir or below it; both are clean absolute paths.
func inside(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// routeKlog sends the lines k8s.io/mount-utils logs through klog (format and mount decisions) to
// the driver's logger, so the operator reads one structured log. mount-utils masks sensitive
// mount options itself.
func routeKlog(logger *zap.Logger) {
	klog.LogToStderr(false)
	klog.SetOutput(klogWriter{logger.Named("mount")})
}

type klogWriter struct{ logger *zap.Logger }

func (w klogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	// klog's header ("I1122 08:58:42.149300 15015 mount_linux.go:607] ") carries what zap adds.
	if i := strings.Index(line, "] "); i > 0 && i < 60 {
		line = line[i+2:]
	}
	switch {
	case len(p) > 0 && p[0] == 'E':
		w.logger.Error(line)
	case len(p) > 0 && p[0] == 'W':
		w.logger.Warn(line)
	default:
		w.logger.Info(line)
	}
	return len(p), nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parseSize reads "1073741824", "512Mi", "10Gi", "1Ti".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a positive size", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}
