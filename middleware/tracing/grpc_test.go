package tracing_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/csikit/csikit/middleware/tracing"
)

// endSignal is a span processor that reports every ended span. Registered
// after the exporter's syncer, it fires once the exporter holds the span:
// the server ends its span after the client already has the answer, so the
// test waits for this signal instead of sleeping.
type endSignal struct{ ended chan sdktrace.ReadOnlySpan }

func (e endSignal) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e endSignal) OnEnd(s sdktrace.ReadOnlySpan)                   { e.ended <- s }
func (e endSignal) Shutdown(context.Context) error                  { return nil }
func (e endSignal) ForceFlush(context.Context) error                { return nil }

// harness is a CSI controller served over bufconn with tracing on, and the
// spans it produced.
type harness struct {
	client   csi.ControllerClient
	metadata csi.SnapshotMetadataClient
	exp      *tracetest.InMemoryExporter
	ended    chan sdktrace.ReadOnlySpan
}

// waitSpans returns once n spans have ended. The timeout only turns a hang
// into a failure; it is not what orders the test.
func (h *harness) waitSpans(t *testing.T, n int) tracetest.SpanStubs {
	t.Helper()
	for range n {
		select {
		case <-h.ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %d spans; got %d", n, len(h.exp.GetSpans()))
		}
	}
	return h.exp.GetSpans()
}

// The two ways of starting the server span; every test over gRPC runs with
// both.
const (
	statsHandlerForm = "stats-handler"
	interceptorForm  = "interceptor"
)

// forms runs test once per way of starting the server span.
func forms(t *testing.T, test func(t *testing.T, form string)) {
	for _, form := range []string{statsHandlerForm, interceptorForm} {
		t.Run(form, func(t *testing.T) { test(t, form) })
	}
}

func newHarness(t *testing.T, form string, backend csi.ControllerServer) *harness {
	t.Helper()
	return newHarnessWith(t, form, backend, nil)
}

// newHarnessWith is newHarness with a sampler (nil: the SDK's default,
// parent-based always-on) and tracing options.
func newHarnessWith(t *testing.T, form string, backend csi.ControllerServer, sampler sdktrace.Sampler, opts ...tracing.Option) *harness {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	ended := make(chan sdktrace.ReadOnlySpan, 16)
	popts := []sdktrace.TracerProviderOption{
		sdktrace.WithSyncer(exp),
		sdktrace.WithSpanProcessor(endSignal{ended: ended}),
	}
	if sampler != nil {
		popts = append(popts, sdktrace.WithSampler(sampler))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	lis := bufconn.Listen(1 << 20)
	var sopts []grpc.ServerOption
	switch form {
	case statsHandlerForm:
		sopts = []grpc.ServerOption{
			tracing.ServerOption(tp, opts...),
			grpc.ChainUnaryInterceptor(tracing.UnaryServerInterceptor()),
			grpc.ChainStreamInterceptor(tracing.StreamServerInterceptor()),
		}
	case interceptorForm:
		sopts = []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(tracing.UnarySpanInterceptor(tp, opts...), tracing.UnaryServerInterceptor()),
			grpc.ChainStreamInterceptor(tracing.StreamSpanInterceptor(tp, opts...), tracing.StreamServerInterceptor()),
		}
	default:
		t.Fatalf("unknown form %q", form)
	}
	srv := grpc.NewServer(sopts...)
	csi.RegisterControllerServer(srv, backend)
	csi.RegisterSnapshotMetadataServer(srv, metadataServer{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})
	return &harness{client: csi.NewControllerClient(conn), metadata: csi.NewSnapshotMetadataClient(conn), exp: exp, ended: ended}
}

// controller answers a few RPCs. DeleteVolume fails by volume ID, so one
// server covers every status case; CreateVolume starts a child span as a
// backend would.
type controller struct {
	csi.UnimplementedControllerServer
}

func (controller) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("backend").Start(ctx, "backend.create")
	span.End()
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-" + req.GetName()}}, nil
}

func (controller) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	switch req.GetVolumeId() {
	case "vol-internal":
		return nil, status.Error(codes.Internal, "disk on fire")
	case "vol-missing":
		return nil, status.Error(codes.NotFound, "no such volume")
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (controller) ControllerPublishVolume(context.Context, *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	return &csi.ControllerPublishVolumeResponse{}, nil
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := make(map[attribute.Key]string, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func serverSpan(t *testing.T, spans tracetest.SpanStubs) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			return s
		}
	}
	t.Fatalf("no server span among %d spans", len(spans))
	return tracetest.SpanStub{}
}

func TestServerSpan(t *testing.T) {
	tests := []struct {
		name       string
		call       func(context.Context, csi.ControllerClient) error
		method     string
		wantAttrs  map[attribute.Key]string
		wantCode   string
		wantStatus otelcodes.Code
	}{
		{
			name: "publish records volume and node IDs, status unset on OK",
			call: func(ctx context.Context, c csi.ControllerClient) error {
				_, err := c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
					VolumeId: "vol-1", NodeId: "node-a", Secrets: map[string]string{"k": "v"},
				})
				return err
			},
			method:     "csi.v1.Controller/ControllerPublishVolume",
			wantAttrs:  map[attribute.Key]string{"csi.volume_id": "vol-1", "csi.node_id": "node-a"},
			wantCode:   "OK",
			wantStatus: otelcodes.Unset,
		},
		{
			name: "server fault marks the span as an error",
			call: func(ctx context.Context, c csi.ControllerClient) error {
				_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "vol-internal"})
				return err
			},
			method:     "csi.v1.Controller/DeleteVolume",
			wantAttrs:  map[attribute.Key]string{"csi.volume_id": "vol-internal"},
			wantCode:   "INTERNAL",
			wantStatus: otelcodes.Error,
		},
		{
			name: "client-side code such as NOT_FOUND is a correct answer, status unset",
			call: func(ctx context.Context, c csi.ControllerClient) error {
				_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "vol-missing"})
				return err
			},
			method:     "csi.v1.Controller/DeleteVolume",
			wantAttrs:  map[attribute.Key]string{"csi.volume_id": "vol-missing"},
			wantCode:   "NOT_FOUND",
			wantStatus: otelcodes.Unset,
		},
		{
			name: "unserved RPC still gets a span with its code",
			call: func(ctx context.Context, c csi.ControllerClient) error {
				_, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{SourceVolumeId: "vol-1", Name: "snap"})
				return err
			},
			method: "csi.v1.Controller/CreateSnapshot",
			wantAttrs: map[attribute.Key]string{
				"csi.source_volume_id": "vol-1", "csi.name": "snap",
			},
			wantCode:   "UNIMPLEMENTED",
			wantStatus: otelcodes.Error,
		},
	}
	forms(t, func(t *testing.T, form string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				h := newHarness(t, form, controller{})
				_ = tt.call(t.Context(), h.client)
				s := serverSpan(t, h.waitSpans(t, 1))
				if s.Name != tt.method {
					t.Errorf("span name = %q, want %q", s.Name, tt.method)
				}
				got := attrs(s)
				if got["rpc.system.name"] != "grpc" {
					t.Errorf("rpc.system.name = %q, want grpc", got["rpc.system.name"])
				}
				if got["rpc.method"] != tt.method {
					t.Errorf("rpc.method = %q, want %q", got["rpc.method"], tt.method)
				}
				if got["rpc.response.status_code"] != tt.wantCode {
					t.Errorf("rpc.response.status_code = %q, want %q", got["rpc.response.status_code"], tt.wantCode)
				}
				for k, v := range tt.wantAttrs {
					if got[k] != v {
						t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
					}
				}
				if s.Status.Code != tt.wantStatus {
					t.Errorf("status = %v, want %v", s.Status.Code, tt.wantStatus)
				}
				if len(s.Events) != 0 {
					t.Errorf("span has %d events, want none (no per-message events)", len(s.Events))
				}
			})
		}
	})
}

func TestIncomingTraceparentMakesChildSpan(t *testing.T) {
	forms(t, func(t *testing.T, form string) {
		h := newHarness(t, form, controller{})
		const (
			traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
			spanID  = "00f067aa0ba902b7"
		)
		ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", "00-"+traceID+"-"+spanID+"-01")
		if _, err := h.client.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-1"}); err != nil {
			t.Fatalf("CreateVolume: %v", err)
		}
		spans := h.waitSpans(t, 2) // the backend's child span and the server span
		s := serverSpan(t, spans)
		if got := s.SpanContext.TraceID().String(); got != traceID {
			t.Errorf("trace ID = %s, want the caller's %s", got, traceID)
		}
		if got := s.Parent.SpanID().String(); got != spanID || !s.Parent.IsRemote() {
			t.Errorf("parent = %s (remote %v), want remote %s", got, s.Parent.IsRemote(), spanID)
		}
		var backend *tracetest.SpanStub
		for i := range spans {
			if spans[i].Name == "backend.create" {
				backend = &spans[i]
			}
		}
		if backend == nil {
			t.Fatal("no backend span")
		}
		if backend.Parent.SpanID() != s.SpanContext.SpanID() {
			t.Errorf("backend span parent = %s, want the server span %s", backend.Parent.SpanID(), s.SpanContext.SpanID())
		}
	})
}

func TestNoTraceparentStartsNewTrace(t *testing.T) {
	forms(t, func(t *testing.T, form string) {
		h := newHarness(t, form, controller{})
		if _, err := h.client.ControllerPublishVolume(t.Context(), &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n"}); err != nil {
			t.Fatalf("publish: %v", err)
		}
		s := serverSpan(t, h.waitSpans(t, 1))
		if s.Parent.IsValid() {
			t.Errorf("span has parent %v without an incoming traceparent", s.Parent)
		}
	})
}

// TestNoSecretInAnySpan sends every kind of secret a CreateVolume can carry
// and searches every string the exporter was given: attributes of the spans,
// their events and links, status descriptions and the resource.
func TestNoSecretInAnySpan(t *testing.T) {
	forms(t, func(t *testing.T, form string) {
		const secret = "hunter2"
		h := newHarness(t, form, controller{})
		req := &csi.CreateVolumeRequest{
			Name:    "pvc-secret-canary",
			Secrets: map[string]string{"password": secret, "token": secret},
			VolumeCapabilities: []*csi.VolumeCapability{{
				AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
					FsType: "ext4", MountFlags: []string{"password=" + secret, "ro"},
				}},
				AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			}},
			MutableParameters: map[string]string{"iops": "100"},
		}
		if _, err := h.client.CreateVolume(t.Context(), req); err != nil {
			t.Fatalf("CreateVolume: %v", err)
		}
		spans := h.waitSpans(t, 2)
		// The canary must have gone through the annotating path; otherwise the
		// absence of the secret would prove nothing.
		if got := attrs(serverSpan(t, spans))["csi.name"]; got != req.Name {
			t.Fatalf("csi.name = %q, want %q: request was not annotated", got, req.Name)
		}
		for _, s := range spans {
			var texts []string
			addKVs := func(where string, kvs []attribute.KeyValue) {
				for _, kv := range kvs {
					texts = append(texts, where+" "+string(kv.Key)+"="+kv.Value.Emit())
				}
			}
			addKVs("attribute", s.Attributes)
			for _, e := range s.Events {
				texts = append(texts, "event "+e.Name)
				addKVs("event attribute", e.Attributes)
			}
			for _, l := range s.Links {
				addKVs("link attribute", l.Attributes)
			}
			if s.Resource != nil {
				addKVs("resource", s.Resource.Attributes())
			}
			texts = append(texts, "name "+s.Name, "status "+s.Status.Description)
			for _, text := range texts {
				if strings.Contains(text, secret) {
					t.Errorf("span %q leaks the secret in %s", s.Name, text)
				}
			}
		}
	})
}

// metadataServer answers GetMetadataAllocated with one message, and fails
// GetMetadataDelta as a server fault, so streams are traced in both cases.
type metadataServer struct {
	csi.UnimplementedSnapshotMetadataServer
}

func (metadataServer) GetMetadataAllocated(_ *csi.GetMetadataAllocatedRequest, s csi.SnapshotMetadata_GetMetadataAllocatedServer) error {
	return s.Send(&csi.GetMetadataAllocatedResponse{VolumeCapacityBytes: 1 << 20})
}

func (metadataServer) GetMetadataDelta(*csi.GetMetadataDeltaRequest, csi.SnapshotMetadata_GetMetadataDeltaServer) error {
	return status.Error(codes.Unavailable, "backend away")
}

// TestStreamSpan: a streaming call gets one server span with the resource
// IDs of its request and its final code.
func TestStreamSpan(t *testing.T) {
	tests := []struct {
		name      string
		call      func(context.Context, csi.SnapshotMetadataClient) error
		method    string
		wantAttrs map[attribute.Key]string
		wantCode  string
	}{
		{
			name: "allocated blocks, OK",
			call: func(ctx context.Context, c csi.SnapshotMetadataClient) error {
				s, err := c.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: "snap-1", Secrets: map[string]string{"token": "t0ken"}})
				if err != nil {
					return err
				}
				for {
					if _, err := s.Recv(); err != nil {
						return err
					}
				}
			},
			method:    "csi.v1.SnapshotMetadata/GetMetadataAllocated",
			wantAttrs: map[attribute.Key]string{"csi.snapshot_id": "snap-1"},
			wantCode:  "OK",
		},
		{
			name: "delta, server fault",
			call: func(ctx context.Context, c csi.SnapshotMetadataClient) error {
				s, err := c.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: "snap-1", TargetSnapshotId: "snap-2"})
				if err != nil {
					return err
				}
				_, err = s.Recv()
				return err
			},
			method:   "csi.v1.SnapshotMetadata/GetMetadataDelta",
			wantCode: "UNAVAILABLE",
		},
	}
	forms(t, func(t *testing.T, form string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				h := newHarness(t, form, controller{})
				_ = tt.call(t.Context(), h.metadata)
				s := serverSpan(t, h.waitSpans(t, 1))
				got := attrs(s)
				if s.Name != tt.method || got["rpc.method"] != tt.method {
					t.Errorf("span %q, rpc.method %q; want %q", s.Name, got["rpc.method"], tt.method)
				}
				if got["rpc.response.status_code"] != tt.wantCode {
					t.Errorf("rpc.response.status_code = %q, want %q", got["rpc.response.status_code"], tt.wantCode)
				}
				for k, v := range tt.wantAttrs {
					if got[k] != v {
						t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
					}
				}
				for k, v := range got {
					if strings.Contains(v, "t0ken") {
						t.Errorf("attribute %s carries the secret", k)
					}
				}
			})
		}
	})
}
