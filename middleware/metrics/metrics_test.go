package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/idempotency"
)

func TestFamilyOfMethod(t *testing.T) {
	for _, tc := range []struct {
		method string
		cosi   bool
	}{
		{"/csi.v1.Controller/CreateVolume", false},
		{"/csi.v1.SnapshotMetadata/GetMetadataDelta", false},
		{"/volumegroup.Controller/CreateVolumeGroup", false},
		{"/cosi.v1alpha1.Provisioner/DriverCreateBucket", true},
		{"/cosi.v1alpha1.Identity/DriverGetInfo", true},
		{"/sigs.k8s.io.cosi.v1alpha2.Provisioner/DriverGrantBucketAccess", true},
		{"/cosiness.v1.Service/Call", false}, // a package component must be exactly "cosi"
		{"/example.v1.cosi/Call", false},     // "cosi" as the service name is not the package
		{"/Service/Call", false},             // no package at all
		{"", false},
	} {
		t.Run(tc.method, func(t *testing.T) {
			if got := isCOSI(tc.method); got != tc.cosi {
				t.Errorf("isCOSI(%q) = %v, want %v", tc.method, got, tc.cosi)
			}
		})
	}
}

func TestCodeIsWhatTheClientReceives(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want codes.Code
	}{
		{"no error is OK", nil, codes.OK},
		{"a status keeps its code", status.Error(codes.NotFound, "x"), codes.NotFound},
		{"a wrapped status keeps its code", fmt.Errorf("ctx: %w", status.Error(codes.Aborted, "x")), codes.Aborted},
		{"a plain error is UNKNOWN", errors.New("boom"), codes.Unknown},
		{"a cancelled context is CANCELED", context.Canceled, codes.Canceled},
		{"a passed deadline is DEADLINE_EXCEEDED", fmt.Errorf("wait: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := codeOf(tc.err); got != tc.want {
				t.Errorf("codeOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Run("a nil registerer is refused", func(t *testing.T) {
		if _, err := New(nil, "d"); err == nil {
			t.Fatal("New(nil) succeeded")
		}
	})
	t.Run("two drivers share one registry under their own names", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		a, err := New(reg, "a.csikit.dev")
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(reg, "b.csikit.dev")
		if err != nil {
			t.Fatal(err)
		}
		call(t, a, "/csi.v1.Node/NodeGetInfo", nil)
		call(t, b, "/csi.v1.Node/NodeGetInfo", nil)
		if n := testutil.CollectAndCount(a.csi.ops.(prometheus.Collector), "csi_plugin_operations_seconds"); n != 2 {
			t.Errorf("%d series, want one per driver", n)
		}
	})
	t.Run("an empty driver name is recorded as csi-lib-utils does", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := New(reg, "")
		if err != nil {
			t.Fatal(err)
		}
		call(t, m, "/csi.v1.Identity/Probe", nil)
		want := `csi_plugin_operations_seconds_count{driver_name="unknown-driver",grpc_status_code="OK",method_name="/csi.v1.Identity/Probe"} 1`
		if out := gatherText(t, reg); !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s:\n%s", want, out)
		}
	})
	t.Run("process and Go collectors on request", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		if _, err := New(reg, "d", WithProcessAndGoCollectors()); err != nil {
			t.Fatal(err)
		}
		out := gatherText(t, reg)
		for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
			if !strings.Contains(out, name) {
				t.Errorf("scrape lacks %s", name)
			}
		}
	})
	t.Run("a registry that has the runtime collectors already keeps them", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		if _, err := New(reg, "a", WithProcessAndGoCollectors()); err != nil {
			t.Fatal(err)
		}
		if _, err := New(reg, "b", WithProcessAndGoCollectors()); err != nil {
			t.Fatalf("second New: %v", err)
		}
	})
	t.Run("a clashing collector is an error naming the cause", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "csi_plugin_operations_seconds", Help: "other"}))
		if _, err := New(reg, "d"); err == nil || !strings.Contains(err.Error(), "register") {
			t.Fatalf("New over a clashing collector: %v", err)
		}
	})
}

func TestPanicIsRecordedAsInternalAndLeavesNothingInFlight(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, "d")
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic was swallowed; it must reach the recovery interceptor")
			}
		}()
		_, _ = m.UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/NodeStageVolume"},
			func(context.Context, any) (any, error) { panic("backend bug") })
	}()
	out := gatherText(t, reg)
	for _, want := range []string{
		`csi_plugin_operations_seconds_count{driver_name="d",grpc_status_code="Internal",method_name="/csi.v1.Node/NodeStageVolume"} 1`,
		`csi_plugin_operations_in_flight{driver_name="d",method_name="/csi.v1.Node/NodeStageVolume"} 0`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s:\n%s", want, out)
		}
	}
}

func TestLockerCountsOnlyConflicts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, "d")
	if err != nil {
		t.Fatal(err)
	}
	l := m.Locker(idempotency.NewManager())
	ctx := context.Background()
	unlock, err := l.Lock(ctx, idempotency.Key{Kind: "volume", ID: "v"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		key      idempotency.Key
		conflict bool
	}{
		{"a held key is a conflict of its kind", idempotency.Key{Kind: "volume", ID: "v"}, true},
		{"a free key is not", idempotency.Key{Kind: "volume", ID: "w"}, false},
		{"the same ID of another kind is not", idempotency.Key{Kind: "volume name", ID: "v"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := l.Lock(ctx, tc.key)
			if (err != nil) != tc.conflict {
				t.Fatalf("Lock(%v) err = %v, conflict expected: %v", tc.key, err, tc.conflict)
			}
			if u != nil {
				u()
			}
		})
	}
	unlock()
	m.RecordAborted(ctx, "")
	out := gatherText(t, reg)
	for _, want := range []string{
		`csi_plugin_lock_conflicts_total{driver_name="d",kind="volume"} 1`,
		`csi_plugin_lock_conflicts_total{driver_name="d",kind="resource"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `kind="volume name"`) {
		t.Error("a successful lock was counted as a conflict")
	}
}

func TestRecordingDoesNotAllocate(t *testing.T) {
	m, err := New(prometheus.NewRegistry(), "d")
	if err != nil {
		t.Fatal(err)
	}
	ic := m.UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	fail := status.Error(codes.NotFound, "x")
	for _, tc := range []struct {
		name string
		err  error
	}{{"success", nil}, {"failure", fail}} {
		t.Run(tc.name, func(t *testing.T) {
			h := func(context.Context, any) (any, error) { return nil, tc.err }
			ctx := context.Background()
			_, _ = ic(ctx, nil, info, h) // the first call resolves the series
			if n := testing.AllocsPerRun(100, func() { _, _ = ic(ctx, nil, info, h) }); n != 0 {
				t.Errorf("%v allocations per call, want 0", n)
			}
		})
	}
}

func call(t *testing.T, m *Metrics, method string, err error) {
	t.Helper()
	_, _ = m.UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method},
		func(context.Context, any) (any, error) { return nil, err })
}

func gatherText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// methodStream is the part of a server transport stream grpc.Method reads.
type methodStream struct {
	grpc.ServerTransportStream
	method string
}

func (s methodStream) Method() string { return s.method }

func TestConflictFamilyFollowsTheCall(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg, "d")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, kind string }{
		{"/sigs.k8s.io.cosi.v1alpha2.Provisioner/DriverCreateBucket", "bucket name"},
		{"/csi.v1.Controller/CreateVolume", "volume name"},
	} {
		ctx := grpc.NewContextWithServerTransportStream(context.Background(), methodStream{method: tc.method})
		m.RecordAborted(ctx, tc.kind)
	}
	out := gatherText(t, reg)
	for _, want := range []string{
		`cosi_plugin_lock_conflicts_total{driver_name="d",kind="bucket name"} 1`,
		`csi_plugin_lock_conflicts_total{driver_name="d",kind="volume name"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %s:\n%s", want, out)
		}
	}
}
