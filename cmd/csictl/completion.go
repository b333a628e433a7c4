package main

import (
	"context"
	"strings"
	"time"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
)

// completionTimeout bounds the listing done while the user presses TAB: a shell that hangs on
// a stuck plugin is worse than no suggestions.
const completionTimeout = 2 * time.Second

// complete lists IDs for shell completion. Any failure (no endpoint, plugin down, listing not
// supported) just means no suggestions: completion must never print errors into the prompt.
// list gets the connection rather than a client because IDs come from more than one service.
func complete(a *app, list func(context.Context, grpc.ClientConnInterface) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		conn, err := a.conn(envEndpoint)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		ids, err := list(ctx, conn)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, id := range ids {
			if strings.HasPrefix(id, prefix) {
				out = append(out, id)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeVolumeIDs suggests volume IDs from the first page of ListVolumes.
func completeVolumeIDs(a *app) cobra.CompletionFunc {
	return complete(a, func(ctx context.Context, conn grpc.ClientConnInterface) ([]string, error) {
		resp, err := csi.NewControllerClient(conn).ListVolumes(ctx, &csi.ListVolumesRequest{})
		var ids []string
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetVolume().GetVolumeId())
		}
		return ids, err
	})
}

// completeSnapshotIDs suggests snapshot IDs from the first page of ListSnapshots.
func completeSnapshotIDs(a *app) cobra.CompletionFunc {
	return complete(a, func(ctx context.Context, conn grpc.ClientConnInterface) ([]string, error) {
		resp, err := csi.NewControllerClient(conn).ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
		var ids []string
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetSnapshot().GetSnapshotId())
		}
		return ids, err
	})
}

// completeVolumeGroupIDs suggests volume group IDs from the first page of ListVolumeGroups.
func completeVolumeGroupIDs(a *app) cobra.CompletionFunc {
	return complete(a, func(ctx context.Context, conn grpc.ClientConnInterface) ([]string, error) {
		resp, err := vgpb.NewControllerClient(conn).ListVolumeGroups(ctx, &vgpb.ListVolumeGroupsRequest{})
		var ids []string
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetVolumeGroup().GetVolumeGroupId())
		}
		return ids, err
	})
}

// registerCapCompletion offers the common --cap values of the command c.
func registerCapCompletion(c *cobra.Command) {
	_ = c.RegisterFlagCompletionFunc("cap", cobra.FixedCompletions([]string{
		"mount,single-node-writer", "mount,ext4,single-node-writer", "mount,xfs,single-node-writer",
		"mount,single-node-single-writer", "mount,multi-node-multi-writer", "mount,multi-node-reader-only",
		"block,single-node-writer", "block,multi-node-multi-writer",
	}, cobra.ShellCompDirectiveNoFileComp))
}
