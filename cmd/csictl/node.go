package main

import (
	"fmt"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// newNodeCmd builds "csictl node": the Node service. These calls act on the machine the plugin
// runs on, so paths are paths on that machine.
func newNodeCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "node", Short: "Node service: stage, publish, expand, info"})
	c.AddCommand(
		&cobra.Command{
			Use:   "capabilities",
			Short: "List the node's capabilities (NodeGetCapabilities)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeGetCapabilities, &csi.NodeGetCapabilitiesRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					t.row("CAPABILITY")
					for _, c := range resp.GetCapabilities() {
						t.row(c.GetRpc().GetType().String())
					}
				})
			},
		},
		&cobra.Command{
			Use:   "info",
			Short: "Show the node ID, volume limit and topology (NodeGetInfo)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeGetInfo, &csi.NodeGetInfoRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					limit := ""
					if n := resp.GetMaxVolumesPerNode(); n > 0 {
						limit = strconv.FormatInt(n, 10)
					}
					t.row("NODE-ID", "MAX-VOLUMES", "TOPOLOGY")
					t.row(resp.GetNodeId(), limit, kv(resp.GetAccessibleTopology().GetSegments()))
				})
			},
		},
		newNodeStageCmd(a),
		newNodeUnstageCmd(a),
		newNodePublishCmd(a),
		newNodeUnpublishCmd(a),
		newNodeExpandCmd(a),
		newNodeHealthCmd(a),
		&cobra.Command{
			Use:   "storage-health",
			Short: "Show the health of the node's storage backends (NodeGetStorageHealth)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeGetStorageHealth, &csi.NodeGetStorageHealthRequest{})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					t.row("STATUS", "REASON", "MESSAGE", "CAPABILITY")
					if len(resp.GetBackendHealth()) == 0 {
						t.row("OK", "", "", "")
					}
					for _, h := range resp.GetBackendHealth() {
						t.row(h.GetStatus().String(), h.GetReason(), h.GetMessage(), capability(h.GetVolumeCapability()))
					}
				})
			},
		},
	)
	return c
}

// contextFlags are the maps a node call passes on from earlier calls: the publish context from
// volume publish and the volume context from volume create.
type contextFlags struct{ publish, volume []string }

func (f *contextFlags) register(c *cobra.Command) {
	c.Flags().StringArrayVar(&f.publish, "publish-context", nil, "publish context key=value from volume publish (repeatable)")
	c.Flags().StringArrayVar(&f.volume, "volume-context", nil, "volume context key=value from volume create (repeatable)")
}

func (f *contextFlags) parse() (publish, volume map[string]string, err error) {
	if publish, err = parseMap("publish-context", f.publish); err != nil {
		return nil, nil, err
	}
	if volume, err = parseMap("volume-context", f.volume); err != nil {
		return nil, nil, err
	}
	return publish, volume, nil
}

func newNodeStageCmd(a *app) *cobra.Command {
	var (
		staging, capFlag string
		ctxf             contextFlags
	)
	c := &cobra.Command{
		Use:               "stage VOLUME_ID --staging-path PATH --cap CAP",
		Short:             "Stage a volume on the node (NodeStageVolume)",
		Example:           `  csictl node stage vol-1 --staging-path /var/lib/kubelet/staging/vol-1 --cap mount,ext4,rwo --publish-context memdriver/node=node-1`,
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.NodeStageVolumeRequest{VolumeId: argv[0], StagingTargetPath: staging}
			var err error
			if req.VolumeCapability, err = parseCap(capFlag); err != nil {
				return fmt.Errorf("--cap: %w", err)
			}
			if req.PublishContext, req.VolumeContext, err = ctxf.parse(); err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeStageVolume, req)
			if err != nil {
				return err
			}
			return a.done(resp, "volume %q staged at %s", argv[0], staging)
		},
	}
	c.Flags().StringVar(&staging, "staging-path", "", "absolute staging path on the node")
	c.Flags().StringVar(&capFlag, "cap", "", capHelp)
	ctxf.register(c)
	_ = c.MarkFlagRequired("staging-path")
	_ = c.MarkFlagRequired("cap")
	registerCapCompletion(c)
	return c
}

func newNodeUnstageCmd(a *app) *cobra.Command {
	var staging string
	c := &cobra.Command{
		Use:               "unstage VOLUME_ID --staging-path PATH",
		Short:             "Unstage a volume from the node (NodeUnstageVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeUnstageVolume,
				&csi.NodeUnstageVolumeRequest{VolumeId: argv[0], StagingTargetPath: staging})
			if err != nil {
				return err
			}
			return a.done(resp, "volume %q unstaged from %s", argv[0], staging)
		},
	}
	c.Flags().StringVar(&staging, "staging-path", "", "absolute staging path on the node")
	_ = c.MarkFlagRequired("staging-path")
	return c
}

func newNodePublishCmd(a *app) *cobra.Command {
	var (
		target, staging, capFlag string
		readonly                 bool
		ctxf                     contextFlags
	)
	c := &cobra.Command{
		Use:               "publish VOLUME_ID --target PATH --cap CAP [--staging-path PATH]",
		Short:             "Publish a volume at a target path on the node (NodePublishVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.NodePublishVolumeRequest{VolumeId: argv[0], TargetPath: target, StagingTargetPath: staging, Readonly: readonly}
			var err error
			if req.VolumeCapability, err = parseCap(capFlag); err != nil {
				return fmt.Errorf("--cap: %w", err)
			}
			if req.PublishContext, req.VolumeContext, err = ctxf.parse(); err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodePublishVolume, req)
			if err != nil {
				return err
			}
			return a.done(resp, "volume %q published at %s", argv[0], target)
		},
	}
	c.Flags().StringVar(&target, "target", "", "absolute target path on the node")
	c.Flags().StringVar(&staging, "staging-path", "", "staging path, when the plugin stages volumes")
	c.Flags().StringVar(&capFlag, "cap", "", capHelp)
	c.Flags().BoolVar(&readonly, "readonly", false, "publish read-only")
	ctxf.register(c)
	_ = c.MarkFlagRequired("target")
	_ = c.MarkFlagRequired("cap")
	registerCapCompletion(c)
	return c
}

func newNodeUnpublishCmd(a *app) *cobra.Command {
	var target string
	c := &cobra.Command{
		Use:               "unpublish VOLUME_ID --target PATH",
		Short:             "Unpublish a volume from a target path (NodeUnpublishVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeUnpublishVolume,
				&csi.NodeUnpublishVolumeRequest{VolumeId: argv[0], TargetPath: target})
			if err != nil {
				return err
			}
			return a.done(resp, "volume %q unpublished from %s", argv[0], target)
		},
	}
	c.Flags().StringVar(&target, "target", "", "absolute target path on the node")
	_ = c.MarkFlagRequired("target")
	return c
}

func newNodeExpandCmd(a *app) *cobra.Command {
	var path, staging, size, limit, capFlag string
	c := &cobra.Command{
		Use:               "expand VOLUME_ID --path PATH --size SIZE",
		Short:             "Grow the filesystem of a published volume (NodeExpandVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.NodeExpandVolumeRequest{VolumeId: argv[0], VolumePath: path, StagingTargetPath: staging}
			var err error
			if req.CapacityRange, err = capacityRange(size, limit); err != nil {
				return err
			}
			if capFlag != "" {
				if req.VolumeCapability, err = parseCap(capFlag); err != nil {
					return fmt.Errorf("--cap: %w", err)
				}
			}
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeExpandVolume, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				t.row("VOLUME", "CAPACITY")
				t.row(argv[0], formatSize(resp.GetCapacityBytes()))
			})
		},
	}
	c.Flags().StringVar(&path, "path", "", "a path where the volume is published (volume_path)")
	c.Flags().StringVar(&staging, "staging-path", "", "where the volume is staged, if it is")
	c.Flags().StringVar(&size, "size", "", "new required capacity, e.g. 2Gi")
	c.Flags().StringVar(&limit, "limit", "", "capacity limit, same units as --size")
	c.Flags().StringVar(&capFlag, "cap", "", "the volume's capability, for plugins that need it ("+capHelp+")")
	_ = c.MarkFlagRequired("path")
	registerCapCompletion(c)
	return c
}

func newNodeHealthCmd(a *app) *cobra.Command {
	var path, staging string
	c := &cobra.Command{
		Use:               "health VOLUME_ID --path PATH",
		Short:             "Show a published volume's health as the node sees it (NodeGetVolumeHealth)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeGetVolumeHealth,
				&csi.NodeGetVolumeHealthRequest{VolumeId: argv[0], VolumePublishPath: path, StagingTargetPath: staging})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				healthHeader(t)
				h := resp.GetVolumeHealth()
				if h.GetVolumeId() == "" {
					h = &csi.VolumeHealth{VolumeId: argv[0], HealthStatuses: h.GetHealthStatuses()}
				}
				healthRows(t, h)
			})
		},
	}
	c.Flags().StringVar(&path, "path", "", "a path where the volume is published")
	c.Flags().StringVar(&staging, "staging-path", "", "where the volume is staged, if it is")
	_ = c.MarkFlagRequired("path")
	return c
}
