package recovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/csikit/csikit/middleware/requestid"
)

const stripped = "***stripped***"

// scrubSecrets stands in for secrets.Scrub: it replaces the values of the
// request's secrets map.
func scrubSecrets(text string, req any) string {
	if r, ok := req.(interface{ GetSecrets() map[string]string }); ok {
		for _, v := range r.GetSecrets() {
			if v != "" {
				text = strings.ReplaceAll(text, v, stripped)
			}
		}
	}
	return text
}

type custom struct {
	Code int
	Why  string
}

type stringer struct{}

func (stringer) String() string { return "a stringer" }

func wantFields(t *testing.T, e observer.LoggedEntry, method, id, panicText, panicType string) {
	t.Helper()
	if e.Level != zap.ErrorLevel {
		t.Errorf("logged at %v, want error", e.Level)
	}
	got := e.ContextMap()
	want := map[string]string{"method": method, "request_id": id, "panic": panicText, "panic_type": panicType}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("log field %s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want)+1 {
		t.Errorf("log fields = %v, want exactly %v and stack", got, want)
	}
	stack, _ := got["stack"].(string)
	if !strings.Contains(stack, "panic") || !strings.Contains(stack, "recovery_test.go") {
		t.Errorf("stack does not show the panic site:\n%s", stack)
	}
}

func TestUnaryServerInterceptor(t *testing.T) {
	const method = "/csi.v1.Controller/CreateVolume"
	tests := []struct {
		name      string
		handler   func(ctx context.Context, req any) (any, error)
		panicText string
		panicType string
	}{{
		name:      "string",
		handler:   func(context.Context, any) (any, error) { panic("boom") },
		panicText: "boom",
		panicType: "string",
	}, {
		name:      "error",
		handler:   func(context.Context, any) (any, error) { panic(errors.New("backend exploded")) },
		panicText: "backend exploded",
		panicType: "*errors.errorString",
	}, {
		name: "nil pointer dereference",
		handler: func(context.Context, any) (any, error) {
			var v *csi.Volume
			return v.VolumeId, nil
		},
		panicText: "runtime error: invalid memory address or nil pointer dereference",
		panicType: "runtime.", // the concrete type is the runtime's business
	}, {
		name:      "custom type",
		handler:   func(context.Context, any) (any, error) { panic(custom{Code: 7, Why: "odd"}) },
		panicText: "{7 odd}",
		panicType: "recovery.custom",
	}, {
		name:      "stringer",
		handler:   func(context.Context, any) (any, error) { panic(stringer{}) },
		panicText: "a stringer",
		panicType: "recovery.stringer",
	}, {
		name:      "nil",
		handler:   func(context.Context, any) (any, error) { panic(nil) },
		panicText: "panic called with nil argument",
		panicType: "*runtime.PanicNilError",
	}, {
		name: "secret in panic message",
		handler: func(_ context.Context, req any) (any, error) {
			panic(fmt.Sprintf("login as admin with %s failed", req.(*csi.CreateVolumeRequest).Secrets["password"]))
		},
		panicText: "login as admin with " + stripped + " failed",
		panicType: "string",
	}, {
		name: "whole request in panic message",
		handler: func(_ context.Context, req any) (any, error) {
			panic(req)
		},
		panicType: "*csi.CreateVolumeRequest",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			icpt := UnaryServerInterceptor(WithLogger(zap.New(core)), WithScrubber(scrubSecrets))
			req := &csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"password": "hunter2"}}
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-request-id", "req-1"))

			deferred := false
			resp, err := icpt(ctx, req, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, req any) (any, error) {
				defer func() { deferred = true }()
				return tt.handler(ctx, req)
			})

			if resp != nil {
				t.Errorf("resp = %v, want nil", resp)
			}
			want := "CreateVolume: internal error (panic); see the plugin log, request ID req-1"
			if s, _ := status.FromError(err); s.Code() != codes.Internal || s.Message() != want {
				t.Fatalf("err = %v, want Internal %q", err, want)
			}
			if !deferred {
				t.Error("the handler's deferred function did not run")
			}
			if logs.Len() != 1 {
				t.Fatalf("%d log entries, want 1", logs.Len())
			}
			e := logs.All()[0]
			if got, _ := e.ContextMap()["panic_type"].(string); strings.HasSuffix(tt.panicType, ".") && strings.HasPrefix(got, tt.panicType) {
				tt.panicType = got
			}
			if tt.panicText == "" {
				tt.panicText, _ = e.ContextMap()["panic"].(string)
			}
			wantFields(t, e, method, "req-1", tt.panicText, tt.panicType)
			if dump := fmt.Sprint(e.Message, e.ContextMap(), err); strings.Contains(dump, "hunter2") {
				t.Errorf("secret leaked: %s", dump)
			}
		})
	}
}

func TestDefaultScrubber(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	icpt := UnaryServerInterceptor(WithLogger(zap.New(core)))
	req := &csi.NodePublishVolumeRequest{VolumeId: "vol-1", Secrets: map[string]string{"token": "s3cr3t-token"}}
	_, err := icpt(context.Background(), req, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/NodePublishVolume"},
		func(_ context.Context, req any) (any, error) {
			panic(fmt.Sprintf("mount failed for %v", req))
		})
	if status.Code(err) != codes.Internal {
		t.Fatalf("err = %v, want Internal", err)
	}
	got, _ := logs.All()[0].ContextMap()["panic"].(string)
	if strings.Contains(got, "s3cr3t-token") || !strings.Contains(got, stripped) || !strings.Contains(got, "vol-1") {
		t.Fatalf("panic field = %q, want the volume ID kept and the token stripped", got)
	}
}

func TestScrubberPanics(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	icpt := UnaryServerInterceptor(WithLogger(zap.New(core)), WithScrubber(func(string, any) string { panic("scrubber bug") }))
	_, err := icpt(context.Background(), "hunter2", &grpc.UnaryServerInfo{FullMethod: "/x/Y"}, func(context.Context, any) (any, error) {
		panic("secret hunter2")
	})
	if status.Code(err) != codes.Internal {
		t.Fatalf("err = %v, want Internal", err)
	}
	if got := logs.All()[0].ContextMap()["panic"]; got != "(panic message withheld: the scrubber panicked)" {
		t.Fatalf("panic field = %q", got)
	}
}

func TestRequestID(t *testing.T) {
	tests := []struct {
		name    string
		ctx     context.Context
		opts    []Option
		want    string // ID in the message and the handler's context; "*" means minted
		wantMsg string
	}{{
		name:    "from metadata",
		ctx:     metadata.NewIncomingContext(context.Background(), metadata.Pairs("csi.requestid", "17")),
		want:    "17",
		wantMsg: "Probe: internal error (panic); see the plugin log, request ID 17",
	}, {
		name:    "already attached",
		ctx:     requestid.NewContext(context.Background(), "outer"),
		want:    "outer",
		wantMsg: "Probe: internal error (panic); see the plugin log, request ID outer",
	}, {
		name: "minted",
		ctx:  context.Background(),
		want: "*",
	}, {
		name:    "custom source",
		ctx:     context.Background(),
		opts:    []Option{WithRequestID(func(ctx context.Context) (context.Context, string) { return ctx, "mine" })},
		want:    "",
		wantMsg: "Probe: internal error (panic); see the plugin log, request ID mine",
	}, {
		name:    "no ID at all",
		ctx:     context.Background(),
		opts:    []Option{WithRequestID(func(ctx context.Context) (context.Context, string) { return ctx, "" })},
		want:    "",
		wantMsg: "Probe: internal error (panic); see the plugin log",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]Option{WithLogger(zap.NewNop())}, tt.opts...)
			var seen string
			_, err := UnaryServerInterceptor(opts...)(tt.ctx, nil, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Identity/Probe"},
				func(ctx context.Context, _ any) (any, error) {
					seen = requestid.FromContext(ctx)
					panic("x")
				})
			msg := status.Convert(err).Message()
			switch tt.want {
			case "*":
				if seen == "" || !strings.HasSuffix(msg, "request ID "+seen) {
					t.Fatalf("handler saw ID %q, message %q", seen, msg)
				}
			default:
				if seen != tt.want || msg != tt.wantMsg {
					t.Fatalf("handler saw ID %q, message %q; want %q, %q", seen, msg, tt.want, tt.wantMsg)
				}
			}
		})
	}
}

func TestNoPanicPassesThrough(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	icpt := UnaryServerInterceptor(WithLogger(zap.New(core)))
	wantErr := status.Error(codes.NotFound, "volume vol-1 not found")
	resp, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/x/Y"}, func(context.Context, any) (any, error) {
		return "ok", wantErr
	})
	if resp != "ok" || err != wantErr || logs.Len() != 0 {
		t.Fatalf("got %v, %v and %d log entries; want the handler's result untouched and no log", resp, err, logs.Len())
	}
}

// fakeStream hands out one NodeStageVolumeRequest carrying a secret.
type fakeStream struct {
	grpc.ServerStream
	ctx  context.Context
	sent bool
}

func (s *fakeStream) Context() context.Context { return s.ctx }

func (s *fakeStream) RecvMsg(m any) error {
	if s.sent {
		return io.EOF
	}
	s.sent = true
	m.(*csi.NodeStageVolumeRequest).Secrets = map[string]string{"token": "s3cr3t-token"}
	return nil
}

func TestStreamServerInterceptor(t *testing.T) {
	tests := []struct {
		name      string
		handler   grpc.StreamHandler
		panicText string
	}{{
		name: "panic after receive, secret scrubbed",
		handler: func(_ any, ss grpc.ServerStream) error {
			var req csi.NodeStageVolumeRequest
			if err := ss.RecvMsg(&req); err != nil {
				return err
			}
			panic("token " + req.Secrets["token"] + " rejected")
		},
		panicText: "token " + stripped + " rejected",
	}, {
		name:      "panic before receive",
		handler:   func(any, grpc.ServerStream) error { panic(errors.New("early")) },
		panicText: "early",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			icpt := StreamServerInterceptor(WithLogger(zap.New(core)), WithScrubber(scrubSecrets))
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-request-id", "s-1"))
			err := icpt(nil, &fakeStream{ctx: ctx}, &grpc.StreamServerInfo{FullMethod: "/test.Stream/Watch"}, tt.handler)
			want := "Watch: internal error (panic); see the plugin log, request ID s-1"
			if s, _ := status.FromError(err); s.Code() != codes.Internal || s.Message() != want {
				t.Fatalf("err = %v, want Internal %q", err, want)
			}
			if got := logs.All()[0].ContextMap()["panic"]; got != tt.panicText {
				t.Fatalf("panic field = %q, want %q", got, tt.panicText)
			}
		})
	}
}

// testServer panics on request; its calls run through recovery, request ID
// and a locking interceptor that releases its lock with defer.
type testServer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (testServer) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if string(req.GetPayload().GetBody()) == "panic" {
		panic("unary handler bug")
	}
	return &testgrpc.SimpleResponse{Username: "ok"}, nil
}

func (testServer) FullDuplexCall(ss grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	if _, err := ss.Recv(); err != nil {
		return err
	}
	panic("stream handler bug")
}

func startServer(t *testing.T, opts ...grpc.ServerOption) testgrpc.TestServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(srv, testServer{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return testgrpc.NewTestServiceClient(conn)
}

func TestServerSurvives(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	var mu sync.Mutex
	lockUnary := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !mu.TryLock() {
			return nil, status.Error(codes.Aborted, "lock still held")
		}
		defer mu.Unlock()
		return handler(ctx, req)
	}
	client := startServer(t,
		grpc.ChainUnaryInterceptor(UnaryServerInterceptor(WithLogger(zap.New(core))), requestid.UnaryServerInterceptor(), lockUnary),
		grpc.ChainStreamInterceptor(StreamServerInterceptor(WithLogger(zap.New(core))), requestid.StreamServerInterceptor()),
	)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-request-id", "e2e-1")

	_, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte("panic")}})
	want := "UnaryCall: internal error (panic); see the plugin log, request ID e2e-1"
	if s, _ := status.FromError(err); s.Code() != codes.Internal || s.Message() != want || len(s.Details()) != 0 {
		t.Fatalf("panicking call: %v, want Internal %q", err, want)
	}

	// Same server, same lock: the deferred Unlock ran during the panic.
	resp, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if err != nil || resp.GetUsername() != "ok" {
		t.Fatalf("call after the panic: %v, %v", resp, err)
	}

	stream, err := client.FullDuplexCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	want = "FullDuplexCall: internal error (panic); see the plugin log, request ID e2e-1"
	if s, _ := status.FromError(err); s.Code() != codes.Internal || s.Message() != want {
		t.Fatalf("panicking stream: %v, want Internal %q", err, want)
	}

	if _, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{}); err != nil {
		t.Fatalf("call after the stream panic: %v", err)
	}
	if logs.Len() != 2 {
		t.Fatalf("%d panic reports, want 2", logs.Len())
	}
}
