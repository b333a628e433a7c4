package plugin

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type identityServer struct {
	csi.UnimplementedIdentityServer
	d *Plugin
}

func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return s.d.pluginInfo, nil
}

func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return s.d.pluginCaps, nil
}

// Probe asks every backend that implements Prober; the plugin is ready when all are.
func (s *identityServer) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	ready, err := s.d.probe(ctx)
	if err != nil {
		return nil, err
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(ready)}, nil
}

// probe is Probe for both the CSI identity service and the HTTP /healthz. An error that is not one
// of the sentinels means "not healthy", which the spec answers FAILED_PRECONDITION.
func (d *Plugin) probe(ctx context.Context) (bool, error) {
	ready := true
	for _, p := range d.b.probers {
		ok, err := p.Probe(ctx)
		if err != nil {
			_, isStatus := err.(interface{ GRPCStatus() *status.Status })
			if _, isSentinel := sentinelCode(rpcProbe, err); isStatus || isSentinel {
				return false, mapError(rpcProbe, err)
			}
			return false, status.Errorf(codes.FailedPrecondition, "plugin not healthy: %v", err)
		}
		ready = ready && ok
	}
	return ready, nil
}
