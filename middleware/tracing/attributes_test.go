package tracing_test

import (
	"context"
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/csikit/csikit/middleware/tracing"
	"github.com/csikit/csikit/secrets"
)

// cosiRequest builds a message in a COSI package without linking COSI's
// bindings: a bucket request with allow-listed fields, a map and a list.
func cosiRequest(t *testing.T) proto.Message {
	t.Helper()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("csikit_tracing_test/cosi.proto"),
		Package: proto.String("sigs.k8s.io.cosi.v9test"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("DriverCreateBucketRequest"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("name"), Number: proto.Int32(1), Type: str, Label: opt, JsonName: proto.String("name")},
				{Name: proto.String("bucket_id"), Number: proto.Int32(2), Type: str, Label: opt, JsonName: proto.String("bucketId")},
				{Name: proto.String("account_id"), Number: proto.Int32(3), Type: str, Label: rep, JsonName: proto.String("accountId")},
			},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatalf("build descriptor: %v", err)
	}
	m := dynamicpb.NewMessage(fd.Messages().Get(0))
	fields := m.Descriptor().Fields()
	m.Set(fields.ByName("name"), protoreflect.ValueOfString("bucket-a"))
	m.Set(fields.ByName("bucket_id"), protoreflect.ValueOfString("bkt-1"))
	l := m.Mutable(fields.ByName("account_id")).List()
	l.Append(protoreflect.ValueOfString("acc-1"))
	return m
}

// secretIDRequest builds a request whose allow-listed volume_id carries
// csi_secret, with "vol-secret" in it.
func secretIDRequest(t *testing.T) proto.Message {
	t.Helper()
	secret := &descriptorpb.FieldOptions{}
	proto.SetExtension(secret, csi.E_CsiSecret, true)
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("csikit_tracing_test/secret.proto"),
		Package: proto.String("csikit.tracingtest.v1"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("GetThingRequest"),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name: proto.String("volume_id"), Number: proto.Int32(1), JsonName: proto.String("volumeId"),
				Type:    descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
				Label:   descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
				Options: secret,
			}},
		}},
	}
	fd, err := protodesc.NewFile(fdp, nil)
	if err != nil {
		t.Fatalf("build descriptor: %v", err)
	}
	md := fd.Messages().Get(0)
	if !secrets.IsSecretField(md.Fields().ByName("volume_id")) {
		t.Fatal("volume_id is not secret: the case would test nothing")
	}
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("volume_id"), protoreflect.ValueOfString("vol-secret"))
	return m
}

// recordingContext returns a context whose span records into a span
// recorder, and a function ending the span and returning what it recorded.
func recordingContext(t *testing.T) (context.Context, func() sdktrace.ReadOnlySpan) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(t.Context(), "call")
	return ctx, func() sdktrace.ReadOnlySpan {
		span.End()
		return rec.Ended()[0]
	}
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]string {
	m := make(map[attribute.Key]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

func TestAnnotate(t *testing.T) {
	tests := []struct {
		name string
		req  func(t *testing.T) any
		want map[attribute.Key]string
	}{
		{
			name: "create name recorded, secrets map never",
			req: func(*testing.T) any {
				return &csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"name": "s3cr3t"}}
			},
			want: map[attribute.Key]string{"csi.name": "pvc-1"},
		},
		{
			name: "empty field is left out (unpublish from all nodes)",
			req: func(*testing.T) any {
				return &csi.ControllerUnpublishVolumeRequest{VolumeId: "vol-1"}
			},
			want: map[attribute.Key]string{"csi.volume_id": "vol-1"},
		},
		{
			name: "snapshot source and name",
			req: func(*testing.T) any {
				return &csi.CreateSnapshotRequest{SourceVolumeId: "vol-1", Name: "snap-1"}
			},
			want: map[attribute.Key]string{"csi.source_volume_id": "vol-1", "csi.name": "snap-1"},
		},
		{
			name: "group ID recorded, repeated snapshot IDs not",
			req: func(*testing.T) any {
				return &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: "g-1", SnapshotIds: []string{"s-1", "s-2"}}
			},
			want: map[attribute.Key]string{"csi.group_snapshot_id": "g-1"},
		},
		{
			name: "fields off the allow-list are never read",
			req: func(*testing.T) any {
				return &csi.NodePublishVolumeRequest{VolumeId: "vol-1", TargetPath: "/mnt/x", StagingTargetPath: "/stage"}
			},
			want: map[attribute.Key]string{"csi.volume_id": "vol-1"},
		},
		{
			name: "field marked secret is skipped even when allow-listed",
			req:  func(t *testing.T) any { return secretIDRequest(t) },
			want: map[attribute.Key]string{},
		},
		{
			name: "COSI request gets the cosi prefix, repeated field left out",
			req:  func(t *testing.T) any { return cosiRequest(t) },
			want: map[attribute.Key]string{"cosi.name": "bucket-a", "cosi.bucket_id": "bkt-1"},
		},
		{
			name: "not a proto message",
			req:  func(*testing.T) any { return "volume_id" },
			want: map[attribute.Key]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, end := recordingContext(t)
			tracing.Annotate(trace.SpanFromContext(ctx), tt.req(t))
			got := attrMap(end().Attributes())
			if len(got) != len(tt.want) {
				t.Errorf("attributes = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestUnaryInterceptorStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want otelcodes.Code
	}{
		{"OK leaves status unset", nil, otelcodes.Unset},
		{"ABORTED is a correct answer", status.Error(codes.Aborted, "busy"), otelcodes.Unset},
		{"INVALID_ARGUMENT is the caller's fault", status.Error(codes.InvalidArgument, "bad"), otelcodes.Unset},
		{"INTERNAL is an error", status.Error(codes.Internal, "x"), otelcodes.Error},
		{"UNAVAILABLE is an error", status.Error(codes.Unavailable, "x"), otelcodes.Error},
		{"plain Go error is UNKNOWN, an error", errors.New("x"), otelcodes.Error},
	}
	ic := tracing.UnaryServerInterceptor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, end := recordingContext(t)
			_, err := ic(ctx, &csi.DeleteVolumeRequest{VolumeId: "v"}, &grpc.UnaryServerInfo{},
				func(context.Context, any) (any, error) { return nil, tt.err })
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v passed through", err, tt.err)
			}
			s := end()
			if s.Status().Code != tt.want {
				t.Errorf("status = %v, want %v", s.Status().Code, tt.want)
			}
			if attrMap(s.Attributes())["csi.volume_id"] != "v" {
				t.Errorf("volume_id not recorded: %v", s.Attributes())
			}
		})
	}
}

// fakeStream is a server stream that yields one request.
type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
	req proto.Message
}

func (s *fakeStream) Context() context.Context     { return s.ctx }
func (s *fakeStream) SetHeader(metadata.MD) error  { return nil }
func (s *fakeStream) SendHeader(metadata.MD) error { return nil }
func (s *fakeStream) SetTrailer(metadata.MD)       {}
func (s *fakeStream) SendMsg(any) error            { return nil }
func (s *fakeStream) RecvMsg(m any) error {
	proto.Merge(m.(proto.Message), s.req)
	return nil
}

func TestStreamInterceptor(t *testing.T) {
	ctx, end := recordingContext(t)
	ss := &fakeStream{ctx: ctx, req: &csi.NodeGetVolumeStatsRequest{VolumeId: "vol-9", VolumePath: "/p"}}
	err := tracing.StreamServerInterceptor()(nil, ss, &grpc.StreamServerInfo{}, func(_ any, s grpc.ServerStream) error {
		var req csi.NodeGetVolumeStatsRequest
		if err := s.RecvMsg(&req); err != nil {
			return err
		}
		return status.Error(codes.Internal, "stream broke")
	})
	if status.Code(err) != codes.Internal {
		t.Fatalf("err = %v", err)
	}
	s := end()
	if got := attrMap(s.Attributes())["csi.volume_id"]; got != "vol-9" {
		t.Errorf("csi.volume_id = %q, want vol-9", got)
	}
	if s.Status().Code != otelcodes.Error {
		t.Errorf("status = %v, want Error", s.Status().Code)
	}
}

// notRecording are the contexts in which the interceptors must cost
// nothing: no span at all, and a sampled-out span carrying a valid remote
// trace context (what a CO's traceparent gives when not sampled).
func notRecording() map[string]context.Context {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true,
	})
	return map[string]context.Context{
		"no span":             context.Background(),
		"sampled-out context": trace.ContextWithSpanContext(context.Background(), sc),
	}
}

func TestInterceptorsAllocateNothingWhenNotRecording(t *testing.T) {
	req := &csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"a": "b"}}
	resp := &csi.CreateVolumeResponse{}
	unary := tracing.UnaryServerInterceptor()
	stream := tracing.StreamServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	sinfo := &grpc.StreamServerInfo{}
	handler := func(context.Context, any) (any, error) { return resp, nil }
	shandler := func(any, grpc.ServerStream) error { return nil }
	for name, ctx := range notRecording() {
		t.Run(name, func(t *testing.T) {
			if n := testing.AllocsPerRun(1000, func() { _, _ = unary(ctx, req, info, handler) }); n != 0 {
				t.Errorf("unary: %v allocs per call, want 0", n)
			}
			ss := &fakeStream{ctx: ctx, req: req}
			if n := testing.AllocsPerRun(1000, func() { _ = stream(nil, ss, sinfo, shandler) }); n != 0 {
				t.Errorf("stream: %v allocs per call, want 0", n)
			}
		})
	}
}

func BenchmarkUnaryInterceptor(b *testing.B) {
	req := &csi.ControllerPublishVolumeRequest{VolumeId: "vol-1", NodeId: "node-1", Secrets: map[string]string{"a": "b"}}
	unary := tracing.UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	b.Run("not-recording", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = unary(ctx, req, info, handler)
		}
	})
	b.Run("recording", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider()
		defer func() { _ = tp.Shutdown(context.Background()) }()
		ctx, span := tp.Tracer("bench").Start(context.Background(), "call")
		defer span.End()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = unary(ctx, req, info, handler)
		}
	})
}
