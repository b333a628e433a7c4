package main

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// newControllerCmd builds "csictl controller": the Controller service calls that are about the
// service rather than one volume or snapshot.
func newControllerCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "controller", Short: "Controller service: capabilities and capacity"})
	c.AddCommand(
		&cobra.Command{
			Use:   "capabilities",
			Short: "List the controller's capabilities (ControllerGetCapabilities)",
			Args:  args(),
			RunE: func(cmd *cobra.Command, _ []string) error {
				resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ControllerGetCapabilities, &csi.ControllerGetCapabilitiesRequest{})
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
		newCapacityCmd(a),
	)
	return c
}

func newCapacityCmd(a *app) *cobra.Command {
	var caps, params []string
	var topology string
	c := &cobra.Command{
		Use:   "capacity",
		Short: "Show the capacity available for new volumes (GetCapacity)",
		Example: `  csictl controller capacity
  csictl controller capacity --cap mount,single-node-writer --topology zone=a --param tier=fast`,
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &csi.GetCapacityRequest{}
			var err error
			if req.VolumeCapabilities, err = parseCaps(caps, false); err != nil {
				return err
			}
			if req.Parameters, err = parseMap("param", params); err != nil {
				return err
			}
			if topology != "" {
				if req.AccessibleTopology, err = parseTopology("topology", topology); err != nil {
					return err
				}
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.GetCapacity, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				t.row("AVAILABLE", "MAXIMUM-VOLUME-SIZE", "MINIMUM-VOLUME-SIZE")
				max, min := "", ""
				if v := resp.GetMaximumVolumeSize(); v != nil {
					max = formatSize(v.GetValue())
				}
				if v := resp.GetMinimumVolumeSize(); v != nil {
					min = formatSize(v.GetValue())
				}
				t.row(formatSize(resp.GetAvailableCapacity()), max, min)
			})
		},
	}
	f := c.Flags()
	f.StringArrayVar(&caps, "cap", nil, capHelp+" (repeatable)")
	f.StringArrayVar(&params, "param", nil, "creation parameter key=value (repeatable)")
	f.StringVar(&topology, "topology", "", "topology segments, e.g. zone=a,rack=r1")
	registerCapCompletion(c)
	return c
}

// newGroupControllerCmd builds "csictl group-controller", the GroupController service's
// capability call; its snapshot calls live under "group-snapshot".
func newGroupControllerCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "group-controller", Short: "GroupController service: capabilities"})
	c.AddCommand(&cobra.Command{
		Use:   "capabilities",
		Short: "List the group controller's capabilities (GroupControllerGetCapabilities)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			resp, err := unary(a, cmd, csi.NewGroupControllerClient, csi.GroupControllerClient.GroupControllerGetCapabilities, &csi.GroupControllerGetCapabilitiesRequest{})
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
	})
	return c
}
