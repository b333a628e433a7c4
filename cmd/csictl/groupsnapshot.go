package main

import (
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// newGroupSnapshotCmd builds "csictl group-snapshot": the GroupController service's calls on
// crash-consistent snapshots of several volumes at once.
func newGroupSnapshotCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "group-snapshot", Aliases: []string{"group-snapshots", "gsnap"}, Short: "Create, inspect and delete group snapshots"})
	c.AddCommand(newGroupSnapshotCreateCmd(a), newGroupSnapshotDeleteCmd(a), newGroupSnapshotGetCmd(a))
	return c
}

func groupSnapshotTable(t *table, g *csi.VolumeGroupSnapshot) {
	t.row("ID", "CREATED", "READY", "SNAPSHOTS", "VOLUMES")
	var snaps, vols []string
	for _, s := range g.GetSnapshots() {
		snaps = append(snaps, s.GetSnapshotId())
		vols = append(vols, s.GetSourceVolumeId())
	}
	t.row(g.GetGroupSnapshotId(), when(g.GetCreationTime()), yesNo(g.GetReadyToUse()), strings.Join(snaps, ","), strings.Join(vols, ","))
}

func newGroupSnapshotCreateCmd(a *app) *cobra.Command {
	var vols, params []string
	c := &cobra.Command{
		Use:     "create NAME --volume VOLUME_ID...",
		Short:   "Snapshot several volumes together (CreateVolumeGroupSnapshot)",
		Example: `  csictl group-snapshot create gs-1 --volume vol-1 --volume vol-2`,
		Args:    args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			m, err := parseMap("param", params)
			if err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewGroupControllerClient, csi.GroupControllerClient.CreateVolumeGroupSnapshot,
				&csi.CreateVolumeGroupSnapshotRequest{Name: argv[0], SourceVolumeIds: vols, Parameters: m})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) { groupSnapshotTable(t, resp.GetGroupSnapshot()) })
		},
	}
	c.Flags().StringArrayVar(&vols, "volume", nil, "ID of a volume to include (repeatable, at least one)")
	c.Flags().StringArrayVar(&params, "param", nil, "group snapshot parameter key=value (repeatable)")
	_ = c.MarkFlagRequired("volume")
	_ = c.RegisterFlagCompletionFunc("volume", completeVolumeIDs(a))
	return c
}

func newGroupSnapshotDeleteCmd(a *app) *cobra.Command {
	var snaps []string
	c := &cobra.Command{
		Use:   "delete GROUP_SNAPSHOT_ID --snapshot SNAPSHOT_ID...",
		Short: "Delete a group snapshot and its snapshots (DeleteVolumeGroupSnapshot)",
		Long: `Delete a group snapshot and its snapshots (DeleteVolumeGroupSnapshot).

The spec requires the IDs of all member snapshots, so that a plugin can refuse a
delete by a caller that does not know the whole group.`,
		Args: args("GROUP_SNAPSHOT_ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewGroupControllerClient, csi.GroupControllerClient.DeleteVolumeGroupSnapshot,
				&csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: argv[0], SnapshotIds: snaps})
			if err != nil {
				return err
			}
			return a.done(resp, "group snapshot %q deleted", argv[0])
		},
	}
	c.Flags().StringArrayVar(&snaps, "snapshot", nil, "ID of a member snapshot (repeatable, all members)")
	_ = c.MarkFlagRequired("snapshot")
	return c
}

func newGroupSnapshotGetCmd(a *app) *cobra.Command {
	var snaps []string
	c := &cobra.Command{
		Use:   "get GROUP_SNAPSHOT_ID --snapshot SNAPSHOT_ID...",
		Short: "Show one group snapshot (GetVolumeGroupSnapshot)",
		Args:  args("GROUP_SNAPSHOT_ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewGroupControllerClient, csi.GroupControllerClient.GetVolumeGroupSnapshot,
				&csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: argv[0], SnapshotIds: snaps})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) { groupSnapshotTable(t, resp.GetGroupSnapshot()) })
		},
	}
	c.Flags().StringArrayVar(&snaps, "snapshot", nil, "ID of a member snapshot (repeatable, all members)")
	_ = c.MarkFlagRequired("snapshot")
	return c
}
