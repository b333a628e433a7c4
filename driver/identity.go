package driver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type identityServer struct {
	csi.UnimplementedIdentityServer
	d *Driver
}

func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return s.d.pluginInfo, nil
}

func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return s.d.pluginCaps, nil
}

// Probe asks every backend that implements Prober; the plugin is ready when all are. An error that
// is not one of the sentinels means "not healthy", which the spec answers FAILED_PRECONDITION.
func (s *identityServer) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	ready := true
	for _, p := range s.d.b.probers {
		ok, err := p.Probe(ctx)
		if err != nil {
			_, isStatus := err.(interface{ GRPCStatus() *status.Status })
			if _, isSentinel := sentinelCode(rpcProbe, err); isStatus || isSentinel {
				return nil, mapError(rpcProbe, err)
			}
			return nil, status.Errorf(codes.FailedPrecondition, "plugin not healthy: %v", err)
		}
		ready = ready && ok
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(ready)}, nil
}
