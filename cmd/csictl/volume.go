package main

import (
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// newVolumeCmd builds "csictl volume": Controller calls on volumes, plus NodeGetVolumeStats,
// which users look for next to the volume rather than under the node.
func newVolumeCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "volume", Aliases: []string{"volumes", "vol"}, Short: "Create, list, publish and inspect volumes"})
	c.AddCommand(
		newVolumeCreateCmd(a),
		newVolumeDeleteCmd(a),
		newVolumeListCmd(a),
		newVolumeGetCmd(a),
		newVolumeExpandCmd(a),
		newVolumeModifyCmd(a),
		newVolumeValidateCmd(a),
		newVolumePublishCmd(a),
		newVolumeUnpublishCmd(a),
		newVolumeHealthCmd(a),
		newVolumeStatsCmd(a),
	)
	return c
}

func newVolumeCreateCmd(a *app) *cobra.Command {
	var (
		caps, params, mutable, requisite, preferred []string
		size, limit, fromSnapshot, fromVolume       string
	)
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a volume (CreateVolume)",
		Example: `  csictl volume create pvc-1 --cap mount,ext4,single-node-writer --size 1Gi
  csictl volume create pvc-2 --cap block,rwo --size 10Gi --limit 20Gi --param tier=fast --requisite zone=a
  csictl volume create pvc-3 --cap mount,rwo --from-snapshot snap-1`,
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.CreateVolumeRequest{Name: argv[0]}
			var err error
			if req.VolumeCapabilities, err = parseCaps(caps, true); err != nil {
				return err
			}
			if req.CapacityRange, err = capacityRange(size, limit); err != nil {
				return err
			}
			if req.Parameters, err = parseMap("param", params); err != nil {
				return err
			}
			if req.MutableParameters, err = parseMap("mutable", mutable); err != nil {
				return err
			}
			switch {
			case fromSnapshot != "":
				req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
					Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: fromSnapshot}}}
			case fromVolume != "":
				req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
					Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: fromVolume}}}
			}
			if req.AccessibilityRequirements, err = topologyRequirement(requisite, preferred); err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.CreateVolume, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				volumeHeader(t)
				volumeRow(t, resp.GetVolume())
			})
		},
	}
	f := c.Flags()
	f.StringArrayVar(&caps, "cap", nil, capHelp+" (repeatable, at least one)")
	f.StringVar(&size, "size", "", "required capacity, e.g. 1Gi, 512Mi, 1G or bytes")
	f.StringVar(&limit, "limit", "", "capacity limit, same units as --size")
	f.StringArrayVar(&params, "param", nil, "creation parameter key=value (repeatable)")
	f.StringArrayVar(&mutable, "mutable", nil, "mutable parameter key=value (repeatable)")
	f.StringVar(&fromSnapshot, "from-snapshot", "", "create from this snapshot ID")
	f.StringVar(&fromVolume, "from-volume", "", "clone this volume ID")
	f.StringArrayVar(&requisite, "requisite", nil, "requisite topology, e.g. zone=a or zone=a,rack=r1 (repeatable)")
	f.StringArrayVar(&preferred, "preferred", nil, "preferred topology, most preferred first (repeatable)")
	c.MarkFlagsMutuallyExclusive("from-snapshot", "from-volume")
	registerCapCompletion(c)
	return c
}

// topologyRequirement builds the accessibility requirement from --requisite and --preferred;
// nil when neither is given, so the plugin chooses.
func topologyRequirement(requisite, preferred []string) (*csi.TopologyRequirement, error) {
	if len(requisite) == 0 && len(preferred) == 0 {
		return nil, nil
	}
	req, err := parseTopologies("requisite", requisite)
	if err != nil {
		return nil, err
	}
	pref, err := parseTopologies("preferred", preferred)
	if err != nil {
		return nil, err
	}
	return &csi.TopologyRequirement{Requisite: req, Preferred: pref}, nil
}

func newVolumeDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "delete VOLUME_ID",
		Short:             "Delete a volume (DeleteVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.DeleteVolume, &csi.DeleteVolumeRequest{VolumeId: argv[0]})
			if err != nil {
				return err
			}
			return a.done(resp, "volume %q deleted", argv[0])
		},
	}
}

// pageFlags are the paging flags of every list command.
type pageFlags struct {
	max   int32
	all   bool
	token string
}

func (p *pageFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.Int32Var(&p.max, "max", 0, "at most this many entries per call (0: as many as the plugin returns)")
	f.BoolVar(&p.all, "all", false, "follow next_token until the listing ends")
	f.StringVar(&p.token, "starting-token", "", "continue a listing from a next_token")
	c.MarkFlagsMutuallyExclusive("all", "starting-token")
}

func (p *pageFlags) check() error {
	if p.max < 0 {
		return fmt.Errorf("--max %d: must not be negative", p.max)
	}
	return nil
}

// follow calls fetch from the --starting-token on and, with --all, again with each next_token
// until the listing ends, returning every entry and the last next_token. With --all the pages are
// merged into one response, so json and yaml print one document whatever the page size.
func follow[E any](p *pageFlags, fetch func(token string) (entries []E, next string, err error)) ([]E, string, error) {
	var all []E
	token := p.token
	for {
		entries, next, err := fetch(token)
		if err != nil {
			return nil, "", err
		}
		all = append(all, entries...)
		if !p.all || next == "" {
			return all, next, nil
		}
		token = next
	}
}

// more tells a table reader that the listing continues; on stderr, so stdout stays the table.
func (a *app) more(next string) {
	if next != "" && a.output == outputTable {
		fmt.Fprintf(a.stderr, "More entries: use --starting-token %s, or --all\n", next)
	}
}

func newVolumeListCmd(a *app) *cobra.Command {
	var p pageFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "List volumes (ListVolumes)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.check(); err != nil {
				return err
			}
			out := &csi.ListVolumesResponse{}
			var err error
			out.Entries, out.NextToken, err = follow(&p, func(token string) ([]*csi.ListVolumesResponse_Entry, string, error) {
				resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ListVolumes,
					&csi.ListVolumesRequest{MaxEntries: p.max, StartingToken: token})
				return resp.GetEntries(), resp.GetNextToken(), err
			})
			if err != nil {
				return err
			}
			err = a.print(out, func(t *table) {
				t.row("ID", "CAPACITY", "SOURCE", "TOPOLOGY", "NODES")
				for _, e := range out.GetEntries() {
					v := e.GetVolume()
					t.row(v.GetVolumeId(), formatSize(v.GetCapacityBytes()), source(v.GetContentSource()),
						topologies(v.GetAccessibleTopology()), strings.Join(e.GetStatus().GetPublishedNodeIds(), ","))
				}
			})
			a.more(out.NextToken)
			return err
		},
	}
	p.register(c)
	return c
}

func newVolumeGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "get VOLUME_ID",
		Short:             "Show one volume (ControllerGetVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerGetVolume, &csi.ControllerGetVolumeRequest{VolumeId: argv[0]})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				v := resp.GetVolume()
				t.row("ID", "CAPACITY", "SOURCE", "TOPOLOGY", "CONTEXT", "NODES")
				t.row(v.GetVolumeId(), formatSize(v.GetCapacityBytes()), source(v.GetContentSource()), topologies(v.GetAccessibleTopology()),
					kv(v.GetVolumeContext()), strings.Join(resp.GetStatus().GetPublishedNodeIds(), ","))
			})
		},
	}
}

func newVolumeExpandCmd(a *app) *cobra.Command {
	var size, limit, capFlag string
	c := &cobra.Command{
		Use:               "expand VOLUME_ID --size SIZE",
		Short:             "Grow a volume (ControllerExpandVolume)",
		Example:           `  csictl volume expand vol-1 --size 2Gi`,
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.ControllerExpandVolumeRequest{VolumeId: argv[0]}
			var err error
			if req.CapacityRange, err = capacityRange(size, limit); err != nil {
				return err
			}
			if capFlag != "" {
				if req.VolumeCapability, err = parseCap(capFlag); err != nil {
					return fmt.Errorf("--cap: %w", err)
				}
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerExpandVolume, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				t.row("VOLUME", "CAPACITY", "NODE-EXPANSION-REQUIRED")
				t.row(argv[0], formatSize(resp.GetCapacityBytes()), yesNo(resp.GetNodeExpansionRequired()))
			})
		},
	}
	f := c.Flags()
	f.StringVar(&size, "size", "", "new required capacity, e.g. 2Gi")
	f.StringVar(&limit, "limit", "", "capacity limit, same units as --size")
	f.StringVar(&capFlag, "cap", "", "the volume's capability, for plugins that need it ("+capHelp+")")
	_ = c.MarkFlagRequired("size")
	registerCapCompletion(c)
	return c
}

func newVolumeModifyCmd(a *app) *cobra.Command {
	var mutable []string
	c := &cobra.Command{
		Use:               "modify VOLUME_ID --mutable KEY=VALUE...",
		Short:             "Change a volume's mutable parameters (ControllerModifyVolume)",
		Example:           `  csictl volume modify vol-1 --mutable iops=3000`,
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			m, err := parseMap("mutable", mutable)
			if err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerModifyVolume,
				&csi.ControllerModifyVolumeRequest{VolumeId: argv[0], MutableParameters: m})
			if err != nil {
				return err
			}
			return a.done(resp, "volume %q modified", argv[0])
		},
	}
	c.Flags().StringArrayVar(&mutable, "mutable", nil, "mutable parameter key=value (repeatable, at least one)")
	_ = c.MarkFlagRequired("mutable")
	return c
}

func newVolumeValidateCmd(a *app) *cobra.Command {
	var caps, params, mutable, volCtx []string
	c := &cobra.Command{
		Use:               "validate VOLUME_ID --cap CAP...",
		Short:             "Check that a volume supports capabilities (ValidateVolumeCapabilities)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.ValidateVolumeCapabilitiesRequest{VolumeId: argv[0]}
			var err error
			if req.VolumeCapabilities, err = parseCaps(caps, true); err != nil {
				return err
			}
			if req.Parameters, err = parseMap("param", params); err != nil {
				return err
			}
			if req.MutableParameters, err = parseMap("mutable", mutable); err != nil {
				return err
			}
			if req.VolumeContext, err = parseMap("volume-context", volCtx); err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ValidateVolumeCapabilities, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				t.row("VOLUME", "CONFIRMED", "CAPABILITIES", "MESSAGE")
				confirmed := resp.GetConfirmed() != nil
				t.row(argv[0], yesNo(confirmed), capabilities(resp.GetConfirmed().GetVolumeCapabilities()), resp.GetMessage())
			})
		},
	}
	f := c.Flags()
	f.StringArrayVar(&caps, "cap", nil, capHelp+" (repeatable, at least one)")
	f.StringArrayVar(&params, "param", nil, "creation parameter key=value (repeatable)")
	f.StringArrayVar(&mutable, "mutable", nil, "mutable parameter key=value (repeatable)")
	f.StringArrayVar(&volCtx, "volume-context", nil, "volume context key=value from create (repeatable)")
	registerCapCompletion(c)
	return c
}

func newVolumePublishCmd(a *app) *cobra.Command {
	var (
		node, capFlag string
		readonly      bool
		volCtx        []string
	)
	c := &cobra.Command{
		Use:               "publish VOLUME_ID --node NODE_ID --cap CAP",
		Short:             "Attach a volume to a node (ControllerPublishVolume)",
		Example:           `  csictl volume publish vol-1 --node node-1 --cap mount,ext4,single-node-writer`,
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.ControllerPublishVolumeRequest{VolumeId: argv[0], NodeId: node, Readonly: readonly}
			var err error
			if req.VolumeCapability, err = parseCap(capFlag); err != nil {
				return fmt.Errorf("--cap: %w", err)
			}
			if req.VolumeContext, err = parseMap("volume-context", volCtx); err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerPublishVolume, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				t.row("VOLUME", "NODE", "PUBLISH-CONTEXT")
				t.row(argv[0], node, kv(resp.GetPublishContext()))
			})
		},
	}
	f := c.Flags()
	f.StringVar(&node, "node", "", "node ID, as node info reports it")
	f.StringVar(&capFlag, "cap", "", capHelp)
	f.BoolVar(&readonly, "readonly", false, "publish read-only")
	f.StringArrayVar(&volCtx, "volume-context", nil, "volume context key=value from create (repeatable)")
	_ = c.MarkFlagRequired("node")
	_ = c.MarkFlagRequired("cap")
	registerCapCompletion(c)
	return c
}

func newVolumeUnpublishCmd(a *app) *cobra.Command {
	var node string
	c := &cobra.Command{
		Use:               "unpublish VOLUME_ID [--node NODE_ID]",
		Short:             "Detach a volume from a node, or from all nodes (ControllerUnpublishVolume)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerUnpublishVolume,
				&csi.ControllerUnpublishVolumeRequest{VolumeId: argv[0], NodeId: node})
			if err != nil {
				return err
			}
			if node == "" {
				return a.done(resp, "volume %q unpublished from all nodes", argv[0])
			}
			return a.done(resp, "volume %q unpublished from node %q", argv[0], node)
		},
	}
	c.Flags().StringVar(&node, "node", "", "node ID; empty means every node")
	return c
}

func newVolumeHealthCmd(a *app) *cobra.Command {
	var p pageFlags
	c := &cobra.Command{
		Use:   "health [VOLUME_ID]",
		Short: "Show a volume's health (ControllerGetVolumeHealth), or list unhealthy volumes (ControllerListVolumeHealth)",
		Args: func(c *cobra.Command, argv []string) error {
			if len(argv) > 1 {
				return fmt.Errorf("%s takes at most one argument (VOLUME_ID), got %d", c.CommandPath(), len(argv))
			}
			return nil
		},
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(argv) == 1 {
				resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerGetVolumeHealth,
					&csi.ControllerGetVolumeHealthRequest{VolumeId: argv[0]})
				if err != nil {
					return err
				}
				return a.print(resp, func(t *table) {
					healthHeader(t)
					h := resp.GetVolumeHealth()
					if h.GetVolumeId() == "" {
						// Keep the row tied to the volume asked about even if the plugin left
						// the ID out of its answer.
						h = &csi.VolumeHealth{VolumeId: argv[0], HealthStatuses: h.GetHealthStatuses()}
					}
					healthRows(t, h)
				})
			}
			if err := p.check(); err != nil {
				return err
			}
			out := &csi.ControllerListVolumeHealthResponse{}
			var err error
			out.Entries, out.NextToken, err = follow(&p, func(token string) ([]*csi.VolumeHealth, string, error) {
				resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerListVolumeHealth,
					&csi.ControllerListVolumeHealthRequest{MaxEntries: p.max, StartingToken: token})
				return resp.GetEntries(), resp.GetNextToken(), err
			})
			if err != nil {
				return err
			}
			err = a.print(out, func(t *table) {
				healthHeader(t)
				for _, h := range out.GetEntries() {
					healthRows(t, h)
				}
			})
			a.more(out.NextToken)
			return err
		},
	}
	p.register(c)
	return c
}

func newVolumeStatsCmd(a *app) *cobra.Command {
	var path, staging string
	c := &cobra.Command{
		Use:               "stats VOLUME_ID --path PATH",
		Short:             "Show a published volume's usage, asked of the node (NodeGetVolumeStats)",
		Args:              args("VOLUME_ID"),
		ValidArgsFunction: completeVolumeIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewNodeClient, csi.NodeClient.NodeGetVolumeStats,
				&csi.NodeGetVolumeStatsRequest{VolumeId: argv[0], VolumePath: path, StagingTargetPath: staging})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				t.row("VOLUME", "UNIT", "TOTAL", "USED", "AVAILABLE")
				for _, u := range resp.GetUsage() {
					total, used, avail := fmt.Sprint(u.GetTotal()), fmt.Sprint(u.GetUsed()), fmt.Sprint(u.GetAvailable())
					if u.GetUnit() == csi.VolumeUsage_BYTES {
						total, used, avail = formatSize(u.GetTotal()), formatSize(u.GetUsed()), formatSize(u.GetAvailable())
					}
					t.row(argv[0], u.GetUnit().String(), total, used, avail)
				}
			})
		},
	}
	c.Flags().StringVar(&path, "path", "", "a path where the volume is published (volume_path)")
	c.Flags().StringVar(&staging, "staging-path", "", "where the volume is staged, if it is")
	_ = c.MarkFlagRequired("path")
	return c
}
