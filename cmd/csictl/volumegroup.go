package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/spf13/cobra"
)

// newVolumeGroupCmd builds "csictl volume-group": the volume-group service
// (volumegroup.Controller of github.com/IBM/csi-volume-group), which keeps several volumes
// consistent together. It is not part of CSI, but a plugin serves it on the same socket, so it
// uses the same endpoint.
func newVolumeGroupCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "volume-group", Aliases: []string{"volume-groups", "vg"}, Short: "Create, list, change and delete volume groups"})
	c.AddCommand(
		newVolumeGroupCreateCmd(a),
		newVolumeGroupDeleteCmd(a),
		newVolumeGroupModifyCmd(a),
		newVolumeGroupGetCmd(a),
		newVolumeGroupListCmd(a),
	)
	return c
}

func volumeGroupHeader(t *table) { t.row("ID", "MEMBERS", "VOLUMES") }

// volumeGroupRow prints the member count next to the IDs so that an empty group reads "0
// <none>" rather than leaving the reader to count commas.
func volumeGroupRow(t *table, g *vgpb.VolumeGroup) {
	ids := memberIDs(g)
	t.row(g.GetVolumeGroupId(), strconv.Itoa(len(ids)), strings.Join(ids, ","))
}

func memberIDs(g *vgpb.VolumeGroup) []string {
	ids := make([]string, 0, len(g.GetVolumes()))
	for _, v := range g.GetVolumes() {
		ids = append(ids, v.GetVolumeId())
	}
	return ids
}

func newVolumeGroupCreateCmd(a *app) *cobra.Command {
	var params []string
	c := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create an empty volume group (CreateVolumeGroup)",
		Example: `  csictl volume-group create vg-1 --param consistency=crash`,
		Args:    args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			m, err := parseMap("param", params)
			if err != nil {
				return err
			}
			resp, err := unary(a, cmd, vgpb.NewControllerClient, vgpb.ControllerClient.CreateVolumeGroup,
				&vgpb.CreateVolumeGroupRequest{Name: argv[0], Parameters: m})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				volumeGroupHeader(t)
				volumeGroupRow(t, resp.GetVolumeGroup())
			})
		},
	}
	c.Flags().StringArrayVar(&params, "param", nil, "volume group class parameter key=value (repeatable)")
	return c
}

func newVolumeGroupDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "delete VOLUME_GROUP_ID",
		Short:             "Delete a volume group and the volumes in it (DeleteVolumeGroup)",
		Args:              args("VOLUME_GROUP_ID"),
		ValidArgsFunction: completeVolumeGroupIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, vgpb.NewControllerClient, vgpb.ControllerClient.DeleteVolumeGroup,
				&vgpb.DeleteVolumeGroupRequest{VolumeGroupId: argv[0]})
			if err != nil {
				return err
			}
			return a.done(resp, "volume group %q deleted", argv[0])
		},
	}
}

func newVolumeGroupModifyCmd(a *app) *cobra.Command {
	var (
		vols  []string
		empty bool
	)
	c := &cobra.Command{
		Use:   "modify VOLUME_GROUP_ID (--volume VOLUME_ID... | --none)",
		Short: "Set the members of a volume group (ModifyVolumeGroupMembership)",
		Long: `Set the members of a volume group (ModifyVolumeGroupMembership).

The --volume flags are the group's whole membership afterwards, not volumes to
add: volumes not yet in the group join it, members that are not listed leave it.
To take every volume out of the group, say --none; forgetting --volume is a usage
error rather than an empty group, because emptying a group by accident is hard to
undo.`,
		Example: `  csictl volume-group modify vg-1 --volume vol-1 --volume vol-2
  csictl volume-group modify vg-1 --none`,
		Args:              args("VOLUME_GROUP_ID"),
		ValidArgsFunction: completeVolumeGroupIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			// cobra counts --none=false as given; it must not empty the group either.
			if len(vols) == 0 && !empty {
				return errors.New("--none=false and no --volume: give the members with --volume, or --none to empty the group")
			}
			// The plugin refuses a repeated volume too, but only after the call; a typo is
			// cheaper to catch here, as parseMap does for repeated keys.
			for i, v := range vols {
				if v == "" {
					return errors.New("--volume: empty volume ID")
				}
				if slices.Contains(vols[:i], v) {
					return fmt.Errorf("--volume: %q given twice", v)
				}
			}
			resp, err := unary(a, cmd, vgpb.NewControllerClient, vgpb.ControllerClient.ModifyVolumeGroupMembership,
				&vgpb.ModifyVolumeGroupMembershipRequest{VolumeGroupId: argv[0], VolumeIds: vols})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				volumeGroupHeader(t)
				volumeGroupRow(t, resp.GetVolumeGroup())
			})
		},
	}
	f := c.Flags()
	f.StringArrayVar(&vols, "volume", nil, "ID of a volume the group is to hold (repeatable; the full membership)")
	f.BoolVar(&empty, "none", false, "take every volume out of the group")
	c.MarkFlagsOneRequired("volume", "none")
	c.MarkFlagsMutuallyExclusive("volume", "none")
	_ = c.RegisterFlagCompletionFunc("volume", completeVolumeIDs(a))
	return c
}

func newVolumeGroupGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "get VOLUME_GROUP_ID",
		Short:             "Show one volume group (ControllerGetVolumeGroup)",
		Args:              args("VOLUME_GROUP_ID"),
		ValidArgsFunction: completeVolumeGroupIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, vgpb.NewControllerClient, vgpb.ControllerClient.ControllerGetVolumeGroup,
				&vgpb.ControllerGetVolumeGroupRequest{VolumeGroupId: argv[0]})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				// One group has room for its context, which the list leaves out.
				g := resp.GetVolumeGroup()
				ids := memberIDs(g)
				t.row("ID", "MEMBERS", "VOLUMES", "CONTEXT")
				t.row(g.GetVolumeGroupId(), strconv.Itoa(len(ids)), strings.Join(ids, ","), kv(g.GetVolumeGroupContext()))
			})
		},
	}
}

func newVolumeGroupListCmd(a *app) *cobra.Command {
	var p pageFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "List volume groups (ListVolumeGroups)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.check(); err != nil {
				return err
			}
			// As for volume list: --all merges the pages into one response, one document.
			out := &vgpb.ListVolumeGroupsResponse{}
			var err error
			out.Entries, out.NextToken, err = follow(&p, func(token string) ([]*vgpb.ListVolumeGroupsResponse_Entry, string, error) {
				resp, err := unary(a, cmd, vgpb.NewControllerClient, vgpb.ControllerClient.ListVolumeGroups,
					&vgpb.ListVolumeGroupsRequest{MaxEntries: p.max, StartingToken: token})
				return resp.GetEntries(), resp.GetNextToken(), err
			})
			if err != nil {
				return err
			}
			err = a.print(out, func(t *table) {
				volumeGroupHeader(t)
				for _, e := range out.GetEntries() {
					volumeGroupRow(t, e.GetVolumeGroup())
				}
			})
			a.more(out.NextToken)
			return err
		},
	}
	p.register(c)
	return c
}
