package validation

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// fakePlugin serves Identity, Controller (CreateVolume, CreateSnapshot), Node (volume stats, node
// expand) and SnapshotMetadata with canned answers and counts how often its handlers run.
type fakePlugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedSnapshotMetadataServer
	csi.UnimplementedNodeServer

	info      *csi.GetPluginInfoResponse
	createErr error
	blocks    []*csi.GetMetadataAllocatedResponse
	calls     atomic.Int32
}

func (p *fakePlugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	p.calls.Add(1)
	return p.info, nil
}

func (p *fakePlugin) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	p.calls.Add(1)
	if p.createErr != nil {
		return nil, p.createErr
	}
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-" + req.GetName(), CapacityBytes: 1 << 30}}, nil
}

func (p *fakePlugin) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	p.calls.Add(1)
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "snap-" + req.GetName(), SourceVolumeId: req.GetSourceVolumeId()}}, nil
}

func (p *fakePlugin) NodeGetVolumeStats(context.Context, *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	p.calls.Add(1)
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Total: 1 << 30, Unit: csi.VolumeUsage_BYTES}}}, nil
}

func (p *fakePlugin) NodeExpandVolume(context.Context, *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	p.calls.Add(1)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: 2 << 30}, nil
}

func (p *fakePlugin) GetMetadataAllocated(_ *csi.GetMetadataAllocatedRequest, s csi.SnapshotMetadata_GetMetadataAllocatedServer) error {
	p.calls.Add(1)
	for _, b := range p.blocks {
		if err := s.Send(b); err != nil {
			return err
		}
	}
	return nil
}

func serve(t *testing.T, p *fakePlugin, opts ...Option) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor(opts...)),
		grpc.ChainStreamInterceptor(StreamServerInterceptor(opts...)),
	)
	csi.RegisterIdentityServer(srv, p)
	csi.RegisterControllerServer(srv, p)
	csi.RegisterSnapshotMetadataServer(srv, p)
	csi.RegisterNodeServer(srv, p)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})
	return conn
}

func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("not a status: %v", err)
	}
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Fatalf("got %v %q, want %v containing %q", st.Code(), st.Message(), code, msg)
	}
}

func TestUnaryInterceptor(t *testing.T) {
	ctx := context.Background()
	goodInfo := &csi.GetPluginInfoResponse{Name: "test.csikit.io", VendorVersion: "v1"}
	badInfo := &csi.GetPluginInfoResponse{Name: "bad_name"}

	t.Run("valid request reaches the handler", func(t *testing.T) {
		p := &fakePlugin{info: goodInfo}
		c := csi.NewControllerClient(serve(t, p, WithResponseChecks(true)))
		resp, err := c.CreateVolume(ctx, validCreateVolume())
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetVolume().GetVolumeId() == "" || p.calls.Load() != 1 {
			t.Fatalf("resp %v, calls %d", resp, p.calls.Load())
		}
	})
	t.Run("invalid request is rejected before the handler", func(t *testing.T) {
		p := &fakePlugin{info: goodInfo}
		c := csi.NewControllerClient(serve(t, p))
		req := validCreateVolume()
		req.VolumeCapabilities[1].AccessMode.Mode = csi.VolumeCapability_AccessMode_UNKNOWN
		_, err := c.CreateVolume(ctx, req)
		wantStatus(t, err, codes.InvalidArgument, "CreateVolume: volume_capabilities[1].access_mode.mode: required field is missing")
		if p.calls.Load() != 0 {
			t.Fatalf("handler ran %d times", p.calls.Load())
		}
	})
	t.Run("handler errors pass through", func(t *testing.T) {
		p := &fakePlugin{createErr: status.Error(codes.ResourceExhausted, "no space")}
		c := csi.NewControllerClient(serve(t, p, WithResponseChecks(true)))
		_, err := c.CreateVolume(ctx, validCreateVolume())
		wantStatus(t, err, codes.ResourceExhausted, "no space")
	})
	t.Run("invalid response with checks", func(t *testing.T) {
		p := &fakePlugin{info: badInfo}
		c := csi.NewIdentityClient(serve(t, p, WithResponseChecks(true)))
		_, err := c.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		wantStatus(t, err, codes.Internal, "plugin bug: GetPluginInfoResponse.name: must follow domain name notation")
	})
	t.Run("invalid response without checks", func(t *testing.T) {
		p := &fakePlugin{info: badInfo}
		c := csi.NewIdentityClient(serve(t, p, WithResponseChecks(false)))
		resp, err := c.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		if err != nil || resp.GetName() != "bad_name" {
			t.Fatalf("resp %v, err %v", resp, err)
		}
	})
	t.Run("oversized response without checks", func(t *testing.T) {
		p := &fakePlugin{info: &csi.GetPluginInfoResponse{Name: "test.csikit.io", VendorVersion: rep('v', 200)}}
		c := csi.NewIdentityClient(serve(t, p, WithResponseChecks(false)))
		_, err := c.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		wantStatus(t, err, codes.Internal, "plugin bug: GetPluginInfoResponse.vendor_version: 200 bytes, the limit is 128")
	})
	t.Run("nil response with checks", func(t *testing.T) {
		p := &fakePlugin{info: nil}
		c := csi.NewIdentityClient(serve(t, p, WithResponseChecks(true)))
		_, err := c.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		wantStatus(t, err, codes.Internal, "plugin bug: GetPluginInfoResponse.name: required field is missing")
	})
}

func recvAll(s grpc.ServerStreamingClient[csi.GetMetadataAllocatedResponse]) (int, error) {
	n := 0
	for {
		_, err := s.Recv()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

func TestStreamInterceptor(t *testing.T) {
	ctx := context.Background()
	good := &csi.GetMetadataAllocatedResponse{
		BlockMetadataType:   csi.BlockMetadataType_FIXED_LENGTH,
		VolumeCapacityBytes: 1 << 20,
		BlockMetadata:       []*csi.BlockMetadata{{ByteOffset: 0, SizeBytes: 4096}},
	}
	bad := &csi.GetMetadataAllocatedResponse{
		BlockMetadataType: csi.BlockMetadataType_FIXED_LENGTH,
		BlockMetadata:     []*csi.BlockMetadata{{ByteOffset: 8192, SizeBytes: 0}},
	}
	req := &csi.GetMetadataAllocatedRequest{SnapshotId: snapID, StartingOffset: 0, MaxResults: 10}

	t.Run("valid stream", func(t *testing.T) {
		p := &fakePlugin{blocks: []*csi.GetMetadataAllocatedResponse{good, good}}
		c := csi.NewSnapshotMetadataClient(serve(t, p, WithResponseChecks(true)))
		s, err := c.GetMetadataAllocated(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := recvAll(s); err != nil || n != 2 {
			t.Fatalf("received %d, err %v", n, err)
		}
	})
	t.Run("negative offset is OUT_OF_RANGE", func(t *testing.T) {
		p := &fakePlugin{blocks: []*csi.GetMetadataAllocatedResponse{good}}
		c := csi.NewSnapshotMetadataClient(serve(t, p))
		bad := &csi.GetMetadataAllocatedRequest{SnapshotId: snapID, StartingOffset: -1}
		s, err := c.GetMetadataAllocated(ctx, bad)
		if err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(s)
		wantStatus(t, err, codes.OutOfRange, "GetMetadataAllocated: starting_offset: must not be negative")
		if p.calls.Load() != 0 {
			t.Fatalf("handler ran")
		}
	})
	t.Run("missing snapshot id", func(t *testing.T) {
		p := &fakePlugin{}
		c := csi.NewSnapshotMetadataClient(serve(t, p))
		s, err := c.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = recvAll(s)
		wantStatus(t, err, codes.InvalidArgument, "GetMetadataAllocated: snapshot_id: required field is missing")
	})
	t.Run("invalid response with checks", func(t *testing.T) {
		p := &fakePlugin{blocks: []*csi.GetMetadataAllocatedResponse{good, bad, good}}
		c := csi.NewSnapshotMetadataClient(serve(t, p, WithResponseChecks(true)))
		s, err := c.GetMetadataAllocated(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := recvAll(s)
		wantStatus(t, err, codes.Internal, "plugin bug: GetMetadataAllocatedResponse.block_metadata[0].size_bytes: must be greater than zero")
		if n != 1 {
			t.Fatalf("received %d messages before the error, want 1", n)
		}
	})
	t.Run("invalid response without checks", func(t *testing.T) {
		p := &fakePlugin{blocks: []*csi.GetMetadataAllocatedResponse{good, bad}}
		c := csi.NewSnapshotMetadataClient(serve(t, p))
		s, err := c.GetMetadataAllocated(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := recvAll(s); err != nil || n != 2 {
			t.Fatalf("received %d, err %v", n, err)
		}
	})
}
