package main

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

// newSnapshotCmd builds "csictl snapshot": the Controller service's snapshot calls.
func newSnapshotCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "snapshot", Aliases: []string{"snapshots", "snap"}, Short: "Create, list and delete snapshots"})
	c.AddCommand(newSnapshotCreateCmd(a), newSnapshotDeleteCmd(a), newSnapshotGetCmd(a), newSnapshotListCmd(a))
	return c
}

func newSnapshotCreateCmd(a *app) *cobra.Command {
	var (
		src                          string
		params, requisite, preferred []string
	)
	c := &cobra.Command{
		Use:     "create NAME --source VOLUME_ID",
		Short:   "Snapshot a volume (CreateSnapshot)",
		Example: `  csictl snapshot create snap-1 --source vol-1`,
		Args:    args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			req := &csi.CreateSnapshotRequest{Name: argv[0], SourceVolumeId: src}
			var err error
			if req.Parameters, err = parseMap("param", params); err != nil {
				return err
			}
			if req.AccessibilityRequirements, err = topologyRequirement(requisite, preferred); err != nil {
				return err
			}
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.CreateSnapshot, req)
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				snapshotHeader(t)
				snapshotRow(t, resp.GetSnapshot())
			})
		},
	}
	f := c.Flags()
	f.StringVar(&src, "source", "", "ID of the volume to snapshot")
	f.StringArrayVar(&params, "param", nil, "snapshot parameter key=value (repeatable)")
	f.StringArrayVar(&requisite, "requisite", nil, "requisite topology, e.g. zone=a (repeatable)")
	f.StringArrayVar(&preferred, "preferred", nil, "preferred topology, most preferred first (repeatable)")
	_ = c.MarkFlagRequired("source")
	_ = c.RegisterFlagCompletionFunc("source", completeVolumeIDs(a))
	return c
}

func newSnapshotDeleteCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "delete SNAPSHOT_ID",
		Short:             "Delete a snapshot (DeleteSnapshot)",
		Args:              args("SNAPSHOT_ID"),
		ValidArgsFunction: completeSnapshotIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.DeleteSnapshot, &csi.DeleteSnapshotRequest{SnapshotId: argv[0]})
			if err != nil {
				return err
			}
			return a.done(resp, "snapshot %q deleted", argv[0])
		},
	}
}

func newSnapshotGetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:               "get SNAPSHOT_ID",
		Short:             "Show one snapshot (GetSnapshot)",
		Args:              args("SNAPSHOT_ID"),
		ValidArgsFunction: completeSnapshotIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.GetSnapshot, &csi.GetSnapshotRequest{SnapshotId: argv[0]})
			if err != nil {
				return err
			}
			return a.print(resp, func(t *table) {
				snapshotHeader(t)
				snapshotRow(t, resp.GetSnapshot())
			})
		},
	}
}

func newSnapshotListCmd(a *app) *cobra.Command {
	var (
		p        pageFlags
		src, sid string
	)
	c := &cobra.Command{
		Use:   "list [--source VOLUME_ID]",
		Short: "List snapshots (ListSnapshots)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := p.check(); err != nil {
				return err
			}
			out := &csi.ListSnapshotsResponse{}
			var err error
			out.Entries, out.NextToken, err = follow(&p, func(token string) ([]*csi.ListSnapshotsResponse_Entry, string, error) {
				resp, err := unary(a, cmd, csi.NewControllerClient, csi.ControllerClient.ListSnapshots,
					&csi.ListSnapshotsRequest{MaxEntries: p.max, StartingToken: token, SourceVolumeId: src, SnapshotId: sid})
				return resp.GetEntries(), resp.GetNextToken(), err
			})
			if err != nil {
				return err
			}
			err = a.print(out, func(t *table) {
				snapshotHeader(t)
				for _, e := range out.GetEntries() {
					snapshotRow(t, e.GetSnapshot())
				}
			})
			a.more(out.NextToken)
			return err
		},
	}
	p.register(c)
	c.Flags().StringVar(&src, "source", "", "only snapshots of this volume ID")
	c.Flags().StringVar(&sid, "id", "", "only the snapshot with this ID")
	_ = c.RegisterFlagCompletionFunc("source", completeVolumeIDs(a))
	return c
}
