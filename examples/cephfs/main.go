// Command cephfs is a CSI driver on CephFS built on csikit, in the spirit of ceph-csi's CephFS
// driver: volumes are subvolumes of the mgr volumes module (the quota is the size), snapshots are
// subvolume snapshots, clones and restores are the mgr's asynchronous clones, and the node mounts
// a subvolume with ceph-fuse at the staging path and bind-mounts it into each target.
//
// It holds no Ceph key: every call brings the identity it acts as in its CSI secrets, "userID"
// (without "client.") and "userKey" — the provisioner, snapshotter and expand secrets on the
// controller, the node-stage secret on the node. Point it at a cluster with --monitors:
//
//	cephfs --monitors 10.0.0.1,10.0.0.2 --fs-name cephfs --endpoint unix:///csi/csi.sock
//
// The tests give one user to both sides, with ceph-csi's node caps and the MDS flag 'p' that
// setting a file quota needs: mon "allow r", mgr "allow rw", mds "allow rwp", osd "allow rw tag
// cephfs *=*" (`ceph auth get-or-create-key client.NAME ...`). Without 'p' everything works but
// a nonzero maxFiles, which is PERMISSION_DENIED. Mounting needs root, /dev/fuse and ceph-fuse;
// each ceph-fuse runs in the driver's cgroup, so its mounts end with the driver's container, as
// ceph-csi's FUSE mounts do.
//
// StorageClass parameters: maxFiles, the most files and directories a volume may hold (decimal,
// 0 = no limit). It is also the one mutable parameter (a VolumeAttributesClass): the driver
// advertises MODIFY_VOLUME and ControllerModifyVolume changes it on a live volume.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/cmdline"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/examples/cephfs/cephfs"
)

// Name is the plugin name the driver registers under.
const Name = "cephfs.csikit.dev"

func main() {
	// plugin.Run stops gracefully on SIGTERM and SIGINT.
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cephfs:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cephfs", flag.ContinueOnError)
	settings := cmdline.Register(fs, cmdline.Defaults{Endpoint: "unix:///tmp/csikit-cephfs/csi.sock"})
	host, _ := os.Hostname()
	var (
		monitors = fs.String("monitors", os.Getenv("CEPH_MON_HOST"), "the cluster's monitors, in ceph.conf mon_host syntax (default $CEPH_MON_HOST)")
		fsName   = fs.String("fs-name", "cephfs", "the CephFS filesystem the volumes live in")
		group    = fs.String("subvolume-group", "csi", "the subvolume group that holds the volumes (made on first use)")
		nodeID   = fs.String("nodeid", envOr("NODE_ID", host), "this node's ID (default $NODE_ID or the host name)")
		mode     = fs.String("mode", "both", "services to serve: both, controller or node")
		size     = fs.Int64("default-size", 1<<30, "quota in bytes of a volume created without a capacity range")
		timeout  = fs.Duration("ceph-timeout", 10*time.Second, "how long one Ceph operation may take before the call answers UNAVAILABLE")
		wait     = fs.Duration("clone-wait", 5*time.Second, "how long CreateVolume waits for a clone to complete before answering ABORTED (never past the call's deadline)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger, err := settings.Logger()
	if err != nil {
		return err
	}
	defer logger.Sync() //nolint:errcheck // stderr
	cfg, d, err := config(cephfs.Config{Monitors: *monitors, FSName: *fsName, Group: *group, NodeID: *nodeID,
		DefaultSize: *size, Timeout: *timeout, CloneWait: *wait, Logger: logger.Named("cephfs")}, *mode)
	if err != nil {
		return err
	}
	defer d.Close()
	cfg.Logger = logger
	flush, err := settings.Apply(ctx, &cfg)
	if err != nil {
		return err
	}
	defer flush()
	p, err := plugin.New(cfg)
	if err != nil {
		return err
	}
	logger.Info("starting", zap.String("mode", *mode), zap.String("fs", *fsName), zap.String("node", *nodeID))
	return p.Run(ctx)
}

// config builds the backend and the plugin configuration for a mode.
func config(c cephfs.Config, mode string) (plugin.Config, *cephfs.Driver, error) {
	d, err := cephfs.New(c)
	if err != nil {
		return plugin.Config{}, nil, err
	}
	cfg := plugin.Config{Name: Name, VendorVersion: "0.1.0",
		Features:  driver.Features{CloneVolume: true, Expansion: driver.ExpansionOnline},
		Overrides: plugin.CapabilityOverrides{Plugin: pluginCapabilities}}
	switch mode {
	case "both":
		cfg.Controller, cfg.Node = d, d
	case "controller":
		cfg.Controller = d
	case "node":
		cfg.Node = d
		// A controller promise means nothing in a node-only process, and plugin.New refuses it.
		cfg.Features.CloneVolume = false
	default:
		d.Close()
		return plugin.Config{}, nil, fmt.Errorf("--mode %q: want both, controller or node", mode)
	}
	return cfg, d, nil
}

// pluginCapabilities are the plugin-level services cephfs declares in every mode: the spec wants
// the controller-only and the node-only process of one plugin (deploy/kubernetes/cephfs runs
// both) to report the same set.
var pluginCapabilities = []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
