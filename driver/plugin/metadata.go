package plugin

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/csikit/csikit/driver"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// defaultMaxResults bounds a metadata message when the CO leaves max_results at 0: big enough to
// keep the message count low, small enough to keep one message far below gRPC's 4 MiB default.
const defaultMaxResults = 1024

type metadataServer struct {
	csi.UnimplementedSnapshotMetadataServer
	d *Plugin
	b *backendSet
}

func (s *metadataServer) GetMetadataAllocated(req *csi.GetMetadataAllocatedRequest, stream csi.SnapshotMetadata_GetMetadataAllocatedServer) error {
	ctx := stream.Context()
	st, err := s.b.metadata.GetMetadataAllocated(ctx, &driver.GetMetadataAllocatedRequest{
		SnapshotID: req.GetSnapshotId(), StartingOffset: req.GetStartingOffset(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return mapError(ctx, rpcGetMetadataAllocated, err)
	}
	return streamBlocks(ctx, rpcGetMetadataAllocated, st, req.GetStartingOffset(), req.GetMaxResults(),
		func(t csi.BlockMetadataType, capacity int64, blocks []*csi.BlockMetadata) error {
			return stream.Send(&csi.GetMetadataAllocatedResponse{BlockMetadataType: t, VolumeCapacityBytes: capacity, BlockMetadata: blocks})
		})
}

func (s *metadataServer) GetMetadataDelta(req *csi.GetMetadataDeltaRequest, stream csi.SnapshotMetadata_GetMetadataDeltaServer) error {
	ctx := stream.Context()
	st, err := s.b.metadata.GetMetadataDelta(ctx, &driver.GetMetadataDeltaRequest{
		BaseSnapshotID: req.GetBaseSnapshotId(), TargetSnapshotID: req.GetTargetSnapshotId(),
		StartingOffset: req.GetStartingOffset(), Secrets: req.GetSecrets(), Raw: req})
	if err != nil {
		return mapError(ctx, rpcGetMetadataDelta, err)
	}
	return streamBlocks(ctx, rpcGetMetadataDelta, st, req.GetStartingOffset(), req.GetMaxResults(),
		func(t csi.BlockMetadataType, capacity int64, blocks []*csi.BlockMetadata) error {
			return stream.Send(&csi.GetMetadataDeltaResponse{BlockMetadataType: t, VolumeCapacityBytes: capacity, BlockMetadata: blocks})
		})
}

// streamBlocks sends a backend's ranges in messages of at most maxResults, enforcing the spec's
// ordering rules so a buggy backend cannot send the CO overlapping or out-of-order ranges.
func streamBlocks(ctx context.Context, r rpc, st *driver.BlockMetadataStream, start int64, maxResults int32,
	send func(csi.BlockMetadataType, int64, []*csi.BlockMetadata) error) error {
	if st == nil || (st.Type != driver.FixedLength && st.Type != driver.VariableLength) || st.VolumeCapacityBytes < 0 {
		return pluginBug(r, "the backend returned no stream, an unknown block metadata type or a negative capacity")
	}
	if start > st.VolumeCapacityBytes {
		return status.Errorf(codes.OutOfRange, "starting_offset %d is past the end of the volume (%d bytes)", start, st.VolumeCapacityBytes)
	}
	batch := int(maxResults)
	if batch <= 0 {
		batch = defaultMaxResults
	}
	t := csi.BlockMetadataType(st.Type)
	var (
		buf       = make([]*csi.BlockMetadata, 0, min(batch, 64))
		sent      bool
		prevEnd   int64 = -1
		fixedSize int64
	)
	flush := func() error {
		if err := send(t, st.VolumeCapacityBytes, buf); err != nil {
			return err
		}
		sent = true
		buf = make([]*csi.BlockMetadata, 0, cap(buf))
		return nil
	}
	if st.Blocks != nil {
		for br, err := range st.Blocks {
			if err != nil {
				return mapError(ctx, r, err)
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return status.FromContextError(ctxErr).Err()
			}
			if br.Size <= 0 || br.Offset < 0 {
				return pluginBug(r, "range at offset %d has size %d", br.Offset, br.Size)
			}
			if br.Offset < prevEnd {
				return pluginBug(r, "range at offset %d overlaps or precedes the previous range ending at %d", br.Offset, prevEnd)
			}
			if st.Type == driver.FixedLength {
				if fixedSize == 0 {
					fixedSize = br.Size
				} else if br.Size != fixedSize {
					return pluginBug(r, "FIXED_LENGTH ranges of different sizes (%d and %d)", fixedSize, br.Size)
				}
			}
			prevEnd = br.End()
			if br.End() <= start {
				continue
			}
			buf = append(buf, &csi.BlockMetadata{ByteOffset: br.Offset, SizeBytes: br.Size})
			if len(buf) == batch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if len(buf) > 0 || !sent {
		// An empty answer still carries the volume's capacity and the metadata type.
		return flush()
	}
	return nil
}
