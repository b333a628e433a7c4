package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// newMetadataCmd builds "csictl metadata": the SnapshotMetadata service, whose calls stream
// the changed-block lists backup tools read.
func newMetadataCmd(a *app) *cobra.Command {
	c := asGroup(&cobra.Command{Use: "metadata", Short: "SnapshotMetadata service: allocated and changed blocks"})
	c.AddCommand(newMetadataAllocatedCmd(a), newMetadataDeltaCmd(a))
	return c
}

// streamFlags are shared by both streaming calls.
type streamFlags struct {
	offset     string
	maxResults int32
}

func (s *streamFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&s.offset, "offset", "0", "start at this byte offset (e.g. 0, 1Mi)")
	c.Flags().Int32Var(&s.maxResults, "max-results", 0, "at most this many blocks per message (0: plugin's choice)")
}

func (s *streamFlags) parse() (int64, error) {
	if s.maxResults < 0 {
		return 0, fmt.Errorf("--max-results %d: must not be negative", s.maxResults)
	}
	off, err := parseSize(s.offset)
	if err != nil {
		return 0, fmt.Errorf("--offset: %w", err)
	}
	return off, nil
}

// blockMessage is what both streams send: a block list with its type and the volume size.
type blockMessage interface {
	proto.Message
	GetBlockMetadataType() csi.BlockMetadataType
	GetVolumeCapacityBytes() int64
	GetBlockMetadata() []*csi.BlockMetadata
}

// printStream prints each message as it arrives, so a long listing shows progress and needs no
// memory for the whole stream: table rows flushed per message, or one json/yaml document per
// message (yaml documents separated by ---).
func printStream[M blockMessage](a *app, recv func() (M, error)) error {
	first := true
	for {
		msg, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return callError{err}
		}
		if a.output != outputTable {
			if a.output == outputYAML && !first {
				if _, err := io.WriteString(a.stdout, "---\n"); err != nil {
					return callError{fmt.Errorf("write output: %w", err)}
				}
			}
			if err := a.print(msg, nil); err != nil {
				return err
			}
			first = false
			continue
		}
		t := newStreamTable(a.stdout)
		if first {
			t.row("TYPE", "VOLUME-SIZE", "OFFSET", "SIZE")
		}
		for _, b := range msg.GetBlockMetadata() {
			t.row(msg.GetBlockMetadataType().String(), formatSize(msg.GetVolumeCapacityBytes()),
				strconv.FormatInt(b.GetByteOffset(), 10), formatSize(b.GetSizeBytes()))
		}
		if err := t.flush(); err != nil {
			return callError{fmt.Errorf("write output: %w", err)}
		}
		first = false
	}
}

// stream opens a server-streaming call under --timeout and prints what it sends.
func stream[Req proto.Message, M blockMessage, S interface{ Recv() (M, error) }](
	a *app, cmd *cobra.Command, req Req,
	open func(csi.SnapshotMetadataClient, context.Context, Req, ...grpc.CallOption) (S, error),
) error {
	conn, err := prepare(a, req)
	if err != nil {
		return err
	}
	ctx, cancel := a.callContext(cmd)
	defer cancel()
	s, err := open(csi.NewSnapshotMetadataClient(conn), ctx, req)
	if err != nil {
		return callError{err}
	}
	return printStream(a, s.Recv)
}

func newMetadataAllocatedCmd(a *app) *cobra.Command {
	var sf streamFlags
	c := &cobra.Command{
		Use:               "allocated SNAPSHOT_ID",
		Short:             "Stream the allocated blocks of a snapshot (GetMetadataAllocated)",
		Args:              args("SNAPSHOT_ID"),
		ValidArgsFunction: completeSnapshotIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			off, err := sf.parse()
			if err != nil {
				return err
			}
			return stream(a, cmd, &csi.GetMetadataAllocatedRequest{SnapshotId: argv[0], StartingOffset: off, MaxResults: sf.maxResults},
				csi.SnapshotMetadataClient.GetMetadataAllocated)
		},
	}
	sf.register(c)
	return c
}

func newMetadataDeltaCmd(a *app) *cobra.Command {
	var sf streamFlags
	c := &cobra.Command{
		Use:               "delta BASE_SNAPSHOT_ID TARGET_SNAPSHOT_ID",
		Short:             "Stream the blocks that changed between two snapshots (GetMetadataDelta)",
		Args:              args("BASE_SNAPSHOT_ID", "TARGET_SNAPSHOT_ID"),
		ValidArgsFunction: completeSnapshotIDs(a),
		RunE: func(cmd *cobra.Command, argv []string) error {
			off, err := sf.parse()
			if err != nil {
				return err
			}
			return stream(a, cmd, &csi.GetMetadataDeltaRequest{BaseSnapshotId: argv[0], TargetSnapshotId: argv[1], StartingOffset: off, MaxResults: sf.maxResults},
				csi.SnapshotMetadataClient.GetMetadataDelta)
		},
	}
	sf.register(c)
	return c
}
