package logging

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/secrets"
)

const secretValue = "hunter2-very-secret"

func call(t *testing.T, level zapcore.Level, handlerErr error) *observer.ObservedLogs {
	t.Helper()
	core, logs := observer.New(level)
	intercept := UnaryServerInterceptor(zap.New(core))
	ctx := requestid.NewContext(context.Background(), "req-42")
	req := &csi.CreateVolumeRequest{Name: "vol", Secrets: map[string]string{"password": secretValue}}
	_, _ = intercept(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"},
		func(context.Context, any) (any, error) {
			if handlerErr != nil {
				return nil, handlerErr
			}
			return &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "v-1"}}, nil
		})
	return logs
}

func TestInfoLineOnEveryCall(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantLevel zapcore.Level
		wantCode  string
	}{
		{"ok", nil, zapcore.InfoLevel, "OK"},
		{"client error is a warning", status.Error(codes.NotFound, "volume gone"), zapcore.WarnLevel, "NotFound"},
		{"plugin fault is an error", status.Error(codes.Internal, "disk on fire"), zapcore.ErrorLevel, "Internal"},
		{"plain error counts as unknown", errors.New("raw"), zapcore.ErrorLevel, "Unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := call(t, zapcore.InfoLevel, tt.err)
			entries := logs.FilterMessage("call").All()
			if len(entries) != 1 {
				t.Fatalf("%d call lines, want 1: %v", len(entries), logs.All())
			}
			e := entries[0]
			fields := e.ContextMap()
			if e.Level != tt.wantLevel || fields["method"] != "CreateVolume" || fields["request_id"] != "req-42" || fields["code"] != tt.wantCode {
				t.Fatalf("call line = %v %v", e.Level, fields)
			}
			if _, ok := fields["duration"]; !ok {
				t.Fatalf("no duration in %v", fields)
			}
			if tt.err != nil && fields["error"] == nil {
				t.Fatalf("no error message in %v", fields)
			}
			if len(logs.FilterMessage("request").All()) != 0 {
				t.Fatal("payload logged at info level")
			}
		})
	}
}

// TestCallLineFields: the call line has exactly its fields in each form, trace_id only when the
// call has a trace and error only when it failed.
func TestCallLineFields(t *testing.T) {
	tests := []struct {
		name string
		tid  string
		err  error
		want []string
	}{
		{"ok", "", nil, []string{"method", "request_id", "duration", "code"}},
		{"ok traced", "4bf92f3577b34da6a3ce929d0e0e4736", nil, []string{"method", "request_id", "trace_id", "duration", "code"}},
		{"failed", "", status.Error(codes.NotFound, "gone"), []string{"method", "request_id", "duration", "code", "error"}},
		{"failed traced", "4bf92f3577b34da6a3ce929d0e0e4736", status.Error(codes.NotFound, "gone"),
			[]string{"method", "request_id", "trace_id", "duration", "code", "error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			intercept := UnaryServerInterceptor(zap.New(core), WithTraceID(func(context.Context) string { return tt.tid }))
			ctx := requestid.NewContext(context.Background(), "req-1")
			_, _ = intercept(ctx, &csi.DeleteVolumeRequest{VolumeId: "v"}, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/DeleteVolume"},
				func(context.Context, any) (any, error) { return &csi.DeleteVolumeResponse{}, tt.err })
			lines := logs.FilterMessage("call").All()
			if len(lines) != 1 {
				t.Fatalf("%d call lines, want 1", len(lines))
			}
			var got []string
			for _, f := range lines[0].Context {
				got = append(got, f.Key)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("fields %v, want %v", got, tt.want)
			}
			if tt.tid != "" && lines[0].ContextMap()["trace_id"] != tt.tid {
				t.Fatalf("trace_id = %v, want %s", lines[0].ContextMap()["trace_id"], tt.tid)
			}
		})
	}
}

// fixedClock is a zap clock stuck in 2001: its times carry no monotonic reading.
type fixedClock struct{}

func (fixedClock) Now() time.Time                         { return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) }
func (fixedClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

// TestDurationSpansTheCall: the duration covers the handler, whether the logger stamps entries
// with the process clock (the entry's time then ends the duration) or with a clock of its own
// (the process clock is read again).
func TestDurationSpansTheCall(t *testing.T) {
	for name, opts := range map[string][]zap.Option{
		"process clock": nil,
		"own clock":     {zap.WithClock(fixedClock{})},
	} {
		t.Run(name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			intercept := UnaryServerInterceptor(zap.New(core, opts...))
			var inHandler time.Duration
			_, _ = intercept(context.Background(), &csi.DeleteVolumeRequest{VolumeId: "v"},
				&grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/DeleteVolume"},
				func(context.Context, any) (any, error) {
					start := time.Now()
					for time.Since(start) == 0 { // at least one tick of the clock passes in here
					}
					inHandler = time.Since(start)
					return &csi.DeleteVolumeResponse{}, nil
				})
			lines := logs.FilterMessage("call").All()
			if len(lines) != 1 {
				t.Fatalf("%d call lines, want 1", len(lines))
			}
			d, ok := lines[0].ContextMap()["duration"].(time.Duration)
			if !ok || d < inHandler || d > time.Hour {
				t.Fatalf("duration %v (%T), want at least the %v spent in the handler", lines[0].ContextMap()["duration"],
					lines[0].ContextMap()["duration"], inHandler)
			}
		})
	}
}

func TestDebugLogsRedactedPayloads(t *testing.T) {
	logs := call(t, zapcore.DebugLevel, nil)
	req := logs.FilterMessage("request").All()
	resp := logs.FilterMessage("response").All()
	if len(req) != 1 || len(resp) != 1 {
		t.Fatalf("want one request and one response line, got %v", logs.All())
	}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	for _, e := range logs.All() {
		buf, err := enc.EncodeEntry(e.Entry, e.Context)
		if err != nil {
			t.Fatal(err)
		}
		line := buf.String()
		if strings.Contains(line, secretValue) {
			t.Fatalf("secret value in the log: %s", line)
		}
		if e.Message == "request" && (!strings.Contains(line, `"password":"`+secrets.Placeholder+`"`) || !strings.Contains(line, `"name":"vol"`)) {
			t.Fatalf("request line lacks the redacted secret key or the name: %s", line)
		}
		if e.Message == "response" && !strings.Contains(line, `"volume_id":"v-1"`) {
			t.Fatalf("response line lacks the response: %s", line)
		}
	}
}

func TestStreamLogsOnceAtTheEnd(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	intercept := StreamServerInterceptor(zap.New(core))
	ss := &fakeStream{ctx: requestid.NewContext(context.Background(), "req-7")}
	err := intercept(nil, ss, &grpc.StreamServerInfo{FullMethod: "/csi.v1.SnapshotMetadata/GetMetadataAllocated"},
		func(_ any, s grpc.ServerStream) error {
			req := &csi.GetMetadataAllocatedRequest{}
			if err := s.RecvMsg(req); err != nil {
				return err
			}
			for range 3 {
				if err := s.SendMsg(&csi.GetMetadataAllocatedResponse{VolumeCapacityBytes: 1}); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	calls := logs.FilterMessage("call").All()
	if len(calls) != 1 || calls[0].ContextMap()["messages_sent"] != int64(3) || calls[0].ContextMap()["request_id"] != "req-7" {
		t.Fatalf("stream call line = %v", calls)
	}
	if n := len(logs.FilterMessage("response").All()); n != 3 {
		t.Fatalf("%d response lines at debug, want 3", n)
	}
	if strings.Contains(logs.FilterMessage("request").All()[0].ContextMap()["request"].(map[string]any)["secrets"].(map[string]any)["password"].(string), secretValue) {
		t.Fatal("secret in the stream's request line")
	}
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fakeStream) Context() context.Context     { return s.ctx }
func (s *fakeStream) SendMsg(any) error            { return nil }
func (s *fakeStream) SetHeader(metadata.MD) error  { return nil }
func (s *fakeStream) SendHeader(metadata.MD) error { return nil }
func (s *fakeStream) SetTrailer(metadata.MD)       {}
func (s *fakeStream) RecvMsg(m any) error {
	m.(*csi.GetMetadataAllocatedRequest).SnapshotId = "snap"
	m.(*csi.GetMetadataAllocatedRequest).Secrets = map[string]string{"password": secretValue}
	return nil
}

func BenchmarkUnaryInfo(b *testing.B) {
	logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(discard{}), zapcore.InfoLevel))
	intercept := UnaryServerInterceptor(logger)
	req := &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n", Secrets: map[string]string{"a": "b"}}
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/ControllerPublishVolume"}
	ctx := requestid.NewContext(context.Background(), "req-1")
	handler := func(context.Context, any) (any, error) { return &csi.ControllerPublishVolumeResponse{}, nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = intercept(ctx, req, info, handler)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
