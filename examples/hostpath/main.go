// Command hostpath is a complete CSI driver on a local directory: filesystem volumes as
// directories, block volumes as loop devices, snapshots, clones, expansion, topology, capacity,
// attach limits, ephemeral inline volumes, volume modification, health, group snapshots and
// snapshot metadata. It starts with no arguments at all:
//
//	go run ./examples/hostpath
//
// and listens on unix:///tmp/csikit-hostpath/csi.sock with its state under /tmp/csikit-hostpath.
// Mounting needs root.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"k8s.io/klog/v2"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/examples/hostpath/hostpath"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "hostpath:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hostpath", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: "unix:///tmp/csikit-hostpath/csi.sock"})
	host, _ := os.Hostname()
	var (
		nodeID     = fs.String("nodeid", envOr("NODE_ID", host), "this node's ID (default $NODE_ID or the host name)")
		stateDir   = fs.String("state-dir", "/tmp/csikit-hostpath", "directory for the state database, volumes and snapshots")
		mode       = fs.String("mode", hostpath.ModeBoth, "services to serve: both, controller or node")
		zone       = fs.String("zone", "", "optional zone reported as topology "+hostpath.TopologyZoneKey)
		capacity   = fs.String("capacity", "1Ti", "pool size reported by GetCapacity (bytes, or with Ki/Mi/Gi/Ti)")
		maxVolume  = fs.String("max-volume-size", "", "largest volume (default: the pool size)")
		maxPerNode = fs.Int64("max-volumes-per-node", 0, "attach limit per node (0 = none)")
		mutable    = fs.String("mutable-parameters", "iops,throughput", "comma-separated keys ControllerModifyVolume may change")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := settings.Logger()
	if err != nil {
		return err
	}
	defer logger.Sync() //nolint:errcheck // stderr
	routeKlog(logger)
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
	plugin, err := hostpath.Open(hostpath.Config{
		StateDir: *stateDir, NodeID: *nodeID, Zone: *zone, CapacityBytes: capBytes, MaxVolumeSize: maxBytes,
		MaxVolumesPerNode: *maxPerNode, MutableParameters: mutableKeys, Logger: logger,
	}, *mode)
	if err != nil {
		return err
	}
	defer plugin.Close()
	cfg := plugin.Config()
	cfg.Logger = logger
	cfg.Endpoint = settings.Endpoint
	d, err := driver.New(cfg)
	if err != nil {
		return err
	}
	logger.Info("starting", zap.String("mode", *mode), zap.String("node", *nodeID), zap.String("state", *stateDir))
	return d.Run(ctx)
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
