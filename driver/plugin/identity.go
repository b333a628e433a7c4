package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/csikit/csikit/driver"
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

// Probe asks every backend that implements Prober; the plugin is ready when all are. A backend
// that reports a transient fault, or does not answer within Config.ProbeTimeout, is not ready:
// the answer is ready=false, not an error code, and turns true again by itself once the backend
// answers ready.
func (s *identityServer) Probe(ctx context.Context, _ *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	ready, err := s.d.probe(ctx)
	if err != nil {
		return nil, err
	}
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(ready)}, nil
}

// DefaultProbeTimeout is how long the plugin waits for the backends' Probe when
// Config.ProbeTimeout is zero.
const DefaultProbeTimeout = 5 * time.Second

// probe is Probe for the CSI identity service, the HTTP /healthz and the readiness watch, and
// records the answer as the plugin's readiness (/readyz). It waits at most Config.ProbeTimeout
// (or until ctx ends) for each backend. A transient fault (driver.ErrUnavailable, an
// UNAVAILABLE status, a broken connection, a timeout; see mapError) is "not ready"; another
// error that is not one of the sentinels means "not healthy", which the spec answers
// FAILED_PRECONDITION.
func (d *Plugin) probe(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.probeTimeout())
	defer cancel()
	ready := true
	for _, p := range d.probers {
		ok, err := d.probeOne(ctx, p)
		if err != nil {
			d.setReady(false)
			return false, err
		}
		ready = ready && ok
	}
	d.setReady(ready)
	return ready, nil
}

func (d *Plugin) probeTimeout() time.Duration {
	if d.cfg.ProbeTimeout > 0 {
		return d.cfg.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// probeOne asks one backend and classifies its answer.
func (d *Plugin) probeOne(ctx context.Context, p *sharedProber) (bool, error) {
	f := p.flight(ctx, d.probeTimeout())
	select {
	case <-f.done:
	case <-ctx.Done():
		d.log.Debug("not ready: the backend's Probe did not answer in time", zap.Duration("timeout", d.probeTimeout()))
		return false, nil
	}
	if f.err == nil {
		return f.ready, nil
	}
	mapped := mapError(f.ctx, rpcProbe, f.err)
	switch status.Code(mapped) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		d.log.Debug("not ready: the backend reports a transient fault", zap.Error(mapped))
		return false, nil
	}
	_, isStatus := f.err.(interface{ GRPCStatus() *status.Status })
	if _, isSentinel := sentinelCode(rpcProbe, f.err); isStatus || isSentinel {
		return false, mapped
	}
	return false, status.Errorf(codes.FailedPrecondition, "plugin not healthy: %v", f.err)
}

// sharedProber runs at most one Probe of a backend at a time, shared by every caller that asks
// meanwhile. A backend whose Probe hangs thus holds one goroutine, not one per liveness check,
// and every caller still gets its answer within its own bound.
type sharedProber struct {
	p  driver.Prober
	mu sync.Mutex
	f  *probeFlight // the Probe running now, or nil
}

// probeFlight is one call of a backend's Probe; ready and err are set before done closes.
type probeFlight struct {
	ctx   context.Context
	done  chan struct{}
	ready bool
	err   error
}

// flight returns the Probe running now, or starts one. Its context keeps the caller's values
// but not its cancellation, since other callers may share it, and ends after timeout.
func (s *sharedProber) flight(ctx context.Context, timeout time.Duration) *probeFlight {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return s.f
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	f := &probeFlight{ctx: fctx, done: make(chan struct{})}
	s.f = f
	go func() {
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				f.ready, f.err = false, fmt.Errorf("Probe panicked: %v", r)
			}
			s.mu.Lock()
			s.f = nil
			s.mu.Unlock()
			close(f.done)
		}()
		f.ready, f.err = s.p.Probe(fctx)
	}()
	return f
}
