package metrics_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/csikit/csikit/idempotency"
	"github.com/csikit/csikit/middleware/locking"
	"github.com/csikit/csikit/middleware/metrics"
)

const driverName = "test.csikit.dev"

// controller answers DeleteVolume by volume ID: "missing" is NOT_FOUND, "slow" waits for
// release (after signalling entered), anything else succeeds. CreateVolume fails with a plain
// error, which the client sees as UNKNOWN.
type controller struct {
	csi.UnimplementedControllerServer
	entered, release chan struct{}
}

func (c *controller) DeleteVolume(ctx context.Context, r *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	switch r.GetVolumeId() {
	case "missing":
		return nil, status.Error(codes.NotFound, "no such volume")
	case "slow":
		c.entered <- struct{}{}
		<-c.release
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (c *controller) CreateVolume(context.Context, *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	return nil, errors.New("backend exploded")
}

// snapshots streams two responses, or fails with FAILED_PRECONDITION for snapshot "bad".
type snapshots struct {
	csi.UnimplementedSnapshotMetadataServer
}

func (snapshots) GetMetadataAllocated(r *csi.GetMetadataAllocatedRequest, s csi.SnapshotMetadata_GetMetadataAllocatedServer) error {
	if r.GetSnapshotId() == "bad" {
		return status.Error(codes.FailedPrecondition, "not ready")
	}
	for range 2 {
		if err := s.Send(&csi.GetMetadataAllocatedResponse{}); err != nil {
			return err
		}
	}
	return nil
}

// cosiDesc is a stand-in COSI service: only the method names matter to the metrics.
func cosiDesc(serviceName string) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "DriverCreateBucket",
			Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
				in := new(emptypb.Empty)
				if err := dec(in); err != nil {
					return nil, err
				}
				info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + serviceName + "/DriverCreateBucket"}
				return ic(ctx, in, info, func(context.Context, any) (any, error) { return &emptypb.Empty{}, nil })
			},
		}},
	}
}

func volumeKeys(req any) []idempotency.Key {
	if r, ok := req.(*csi.DeleteVolumeRequest); ok {
		return []idempotency.Key{{Kind: "volume", ID: r.GetVolumeId()}}
	}
	return nil
}

// start serves the fakes over bufconn with the metrics interceptors outside locking, as in the
// driver's chain, and returns a client connection and the registry.
func start(t *testing.T, ctrl *controller) (*grpc.ClientConn, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, driverName)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(m.UnaryServerInterceptor(),
			locking.UnaryServerInterceptor(m.Locker(idempotency.NewManager()), volumeKeys)),
		grpc.ChainStreamInterceptor(m.StreamServerInterceptor()),
	)
	csi.RegisterControllerServer(srv, ctrl)
	csi.RegisterSnapshotMetadataServer(srv, snapshots{})
	srv.RegisterService(cosiDesc("cosi.v1alpha1.Provisioner"), nil)
	srv.RegisterService(cosiDesc("sigs.k8s.io.cosi.v1alpha2.Provisioner"), nil)
	lis := bufconn.Listen(1 << 20)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return conn, reg
}

// scrape fetches the registry over its promhttp handler and parses the text exposition format,
// as Prometheus does.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, req)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.Reader(rec.Body))
	if err != nil {
		t.Fatalf("parse scrape: %v\n%s", err, rec.Body)
	}
	return fams
}

// sample finds the series of family name whose labels are exactly want.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) == len(want) {
			match := true
			for k, v := range want {
				if got[k] != v {
					match = false
				}
			}
			if match {
				return m
			}
		}
	}
	return nil
}

func TestRealCallsAreRecorded(t *testing.T) {
	ctrl := &controller{entered: make(chan struct{}), release: make(chan struct{})}
	conn, reg := start(t, ctrl)
	ctx := t.Context()
	cc := csi.NewControllerClient(conn)

	// A call held inside its handler shows in the in-flight gauge, holds the volume's lock, and
	// a second call on the same volume is turned away with ABORTED.
	slow := make(chan error, 1)
	go func() {
		_, err := cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "slow"})
		slow <- err
	}()
	<-ctrl.entered
	inFlight := sample(scrape(t, reg), "csi_plugin_operations_in_flight",
		map[string]string{"driver_name": driverName, "method_name": "/csi.v1.Controller/DeleteVolume"})
	if got := inFlight.GetGauge().GetValue(); got != 1 {
		t.Errorf("in flight during a held call = %v, want 1", got)
	}
	if _, err := cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "slow"}); status.Code(err) != codes.Aborted {
		t.Fatalf("conflicting DeleteVolume: %v, want ABORTED", err)
	}
	close(ctrl.release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}

	for range 2 {
		if _, err := cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "vol-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cc.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "missing"}); status.Code(err) != codes.NotFound {
		t.Fatalf("DeleteVolume(missing): %v", err)
	}
	if _, err := cc.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v"}); status.Code(err) != codes.Unknown {
		t.Fatalf("CreateVolume: %v", err)
	}
	sm := csi.NewSnapshotMetadataClient(conn)
	for _, id := range []string{"good", "bad"} {
		stream, err := sm.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: id})
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err = stream.Recv(); err != nil {
				break
			}
		}
		if want := map[string]codes.Code{"good": codes.OK, "bad": codes.FailedPrecondition}[id]; err != io.EOF && status.Code(err) != want {
			t.Fatalf("stream %s ended with %v, want %v", id, err, want)
		}
	}
	for _, svc := range []string{"cosi.v1alpha1.Provisioner", "sigs.k8s.io.cosi.v1alpha2.Provisioner"} {
		if err := conn.Invoke(ctx, "/"+svc+"/DriverCreateBucket", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
			t.Fatal(err)
		}
	}

	fams := scrape(t, reg)
	for _, tc := range []struct {
		name, family, method, code string
		count                      uint64
	}{
		{"successes are counted per method with code OK", "csi_plugin_operations_seconds", "/csi.v1.Controller/DeleteVolume", "OK", 3},
		{"a status error keeps its code name", "csi_plugin_operations_seconds", "/csi.v1.Controller/DeleteVolume", "NotFound", 1},
		{"a lock conflict is an Aborted answer", "csi_plugin_operations_seconds", "/csi.v1.Controller/DeleteVolume", "Aborted", 1},
		{"a plain error is recorded as the Unknown the client gets", "csi_plugin_operations_seconds", "/csi.v1.Controller/CreateVolume", "Unknown", 1},
		{"a stream is one operation", "csi_plugin_operations_seconds", "/csi.v1.SnapshotMetadata/GetMetadataAllocated", "OK", 1},
		{"a failed stream keeps its code", "csi_plugin_operations_seconds", "/csi.v1.SnapshotMetadata/GetMetadataAllocated", "FailedPrecondition", 1},
		{"COSI v1alpha1 goes to the COSI family", "cosi_plugin_operations_seconds", "/cosi.v1alpha1.Provisioner/DriverCreateBucket", "OK", 1},
		{"COSI v1alpha2 goes to the COSI family", "cosi_plugin_operations_seconds", "/sigs.k8s.io.cosi.v1alpha2.Provisioner/DriverCreateBucket", "OK", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sample(fams, tc.family, map[string]string{"driver_name": driverName, "method_name": tc.method, "grpc_status_code": tc.code})
			if m == nil {
				t.Fatalf("no %s series for %s %s", tc.family, tc.method, tc.code)
			}
			h := m.GetHistogram()
			if h.GetSampleCount() != tc.count {
				t.Errorf("count = %d, want %d", h.GetSampleCount(), tc.count)
			}
			var bounds []float64
			for _, b := range h.GetBucket() {
				if !math.IsInf(b.GetUpperBound(), 1) { // the text format writes +Inf out
					bounds = append(bounds, b.GetUpperBound())
				}
			}
			if !slices.Equal(bounds, metrics.Buckets()) {
				t.Errorf("buckets = %v, want %v", bounds, metrics.Buckets())
			}
		})
	}

	// Codes that never happened have no series, as with csi-lib-utils.
	if n := len(fams["csi_plugin_operations_seconds"].GetMetric()); n != 6 {
		t.Errorf("%d CSI histogram series, want 6", n)
	}
	if n := len(fams["cosi_plugin_operations_seconds"].GetMetric()); n != 2 {
		t.Errorf("%d COSI histogram series, want 2", n)
	}
	for _, fam := range []string{"csi_plugin_operations_in_flight", "cosi_plugin_operations_in_flight"} {
		for _, m := range fams[fam].GetMetric() {
			if v := m.GetGauge().GetValue(); v != 0 {
				t.Errorf("%s %v = %v after every call returned, want 0", fam, m.GetLabel(), v)
			}
		}
	}
	conflicts := sample(fams, "csi_plugin_lock_conflicts_total", map[string]string{"driver_name": driverName, "kind": "volume"})
	if got := conflicts.GetCounter().GetValue(); got != 1 {
		t.Errorf("lock conflicts on volumes = %v, want 1", got)
	}
}
