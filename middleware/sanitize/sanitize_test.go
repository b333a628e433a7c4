package sanitize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const (
	stripped = "***stripped***"
	secret   = "hunter2-0123456789abcdef"
	method   = "/csi.v1.Controller/CreateVolume"
)

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

func withDetails(t *testing.T, c codes.Code, msg string) error {
	t.Helper()
	s, err := status.New(c, msg).WithDetails(wrapperspb.String("internal detail " + secret))
	if err != nil {
		t.Fatal(err)
	}
	return s.Err()
}

// okStatusError is an error that claims to be a gRPC status with code OK.
type okStatusError struct{ msg string }

func (e okStatusError) Error() string              { return e.msg }
func (e okStatusError) GRPCStatus() *status.Status { return status.New(codes.OK, e.msg) }

// nilStatusError claims to be a status but has none.
type nilStatusError struct{}

func (nilStatusError) Error() string              { return "no status here" }
func (nilStatusError) GRPCStatus() *status.Status { return nil }

func TestSanitize(t *testing.T) {
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name     string
		err      error
		opts     []Option
		method   string // default method
		wantCode codes.Code
		wantMsg  string
		check    func(t *testing.T, msg string)
	}{
		{name: "plain error", err: errors.New("disk on fire"), wantCode: codes.Internal, wantMsg: "CreateVolume: disk on fire"},
		{name: "wrapped plain error", err: fmt.Errorf("allocate: %w", io.ErrUnexpectedEOF), wantCode: codes.Internal, wantMsg: "CreateVolume: allocate: unexpected EOF"},
		{name: "empty plain error", err: errors.New(""), wantCode: codes.Internal, wantMsg: "CreateVolume: failed with Internal and no message"},
		{name: "context canceled", err: context.Canceled, wantCode: codes.Canceled, wantMsg: "CreateVolume: context canceled"},
		{name: "context deadline", err: context.DeadlineExceeded, wantCode: codes.DeadlineExceeded, wantMsg: "CreateVolume: context deadline exceeded"},
		{name: "wrapped deadline", err: fmt.Errorf("attach: %w", context.DeadlineExceeded), wantCode: codes.DeadlineExceeded, wantMsg: "CreateVolume: attach: context deadline exceeded"},
		{name: "status kept", err: status.Error(codes.NotFound, "volume vol-1 not found"), wantCode: codes.NotFound, wantMsg: "volume vol-1 not found"},
		{name: "status details stripped", err: withDetails(t, codes.ResourceExhausted, "pool full"), wantCode: codes.ResourceExhausted, wantMsg: "pool full"},
		{name: "empty status message", err: status.Error(codes.NotFound, ""), wantCode: codes.NotFound, wantMsg: "CreateVolume: failed with NotFound and no message"},
		{name: "blank status message", err: status.Error(codes.Aborted, " \n"), wantCode: codes.Aborted, wantMsg: "CreateVolume: failed with Aborted and no message"},
		{name: "empty message with details", err: withDetails(t, codes.Unavailable, ""), wantCode: codes.Unavailable, wantMsg: "CreateVolume: failed with Unavailable and no message"},
		{name: "unknown status kept", err: status.Error(codes.Unknown, "who knows"), wantCode: codes.Unknown, wantMsg: "who knows"},
		{name: "code OK error", err: okStatusError{"half done"}, wantCode: codes.Internal, wantMsg: "CreateVolume: half done"},
		{name: "code OK error, empty", err: okStatusError{}, wantCode: codes.Internal, wantMsg: "CreateVolume: failed with an error carrying code OK"},
		{name: "nil status", err: nilStatusError{}, wantCode: codes.Internal, wantMsg: "CreateVolume: no status here"},
		{name: "wrapped status", err: fmt.Errorf("stage: %w", status.Error(codes.NotFound, "gone")), wantCode: codes.NotFound, wantMsg: "stage: rpc error: code = NotFound desc = gone"},
		{name: "secret in plain error", err: fmt.Errorf("login with %q refused", secret), wantCode: codes.Internal, wantMsg: `CreateVolume: login with "` + stripped + `" refused`},
		{name: "secret in status", err: status.Error(codes.PermissionDenied, "token "+secret+" rejected"), wantCode: codes.PermissionDenied, wantMsg: "token " + stripped + " rejected"},
		{name: "secret in OK status", err: okStatusError{secret}, wantCode: codes.Internal, wantMsg: "CreateVolume: " + stripped},
		{name: "message that is only a secret", err: status.Error(codes.Unauthenticated, secret), wantCode: codes.Unauthenticated, wantMsg: stripped},
		{
			name: "long message truncated", err: status.Error(codes.Internal, long), wantCode: codes.Internal,
			wantMsg: long[:DefaultMaxMessageLen-len(truncated)] + truncated,
		},
		{
			name: "exactly at the bound", err: status.Error(codes.Internal, long[:DefaultMaxMessageLen]), wantCode: codes.Internal,
			wantMsg: long[:DefaultMaxMessageLen],
		},
		{
			name: "truncated at a character boundary", err: status.Error(codes.Internal, strings.Repeat("é", 1000)), wantCode: codes.Internal,
			check: func(t *testing.T, msg string) {
				if len(msg) > DefaultMaxMessageLen || !utf8.ValidString(msg) || !strings.HasSuffix(msg, truncated) {
					t.Fatalf("message of %d bytes, valid UTF-8 %v: %q", len(msg), utf8.ValidString(msg), msg)
				}
			},
		},
		{
			name: "secret across the cut is scrubbed, not cut", err: errors.New(long[:1000] + secret), wantCode: codes.Internal,
			check: func(t *testing.T, msg string) {
				if strings.Contains(msg, secret[:6]) || len(msg) > DefaultMaxMessageLen {
					t.Fatalf("part of the secret survived: ...%q", msg[len(msg)-40:])
				}
			},
		},
		{
			name: "custom bound", err: status.Error(codes.Internal, long), opts: []Option{WithMaxMessageLen(100)}, wantCode: codes.Internal,
			wantMsg: long[:100-len(truncated)] + truncated,
		},
		{
			name: "bound raised to the minimum", err: status.Error(codes.Internal, long), opts: []Option{WithMaxMessageLen(10)}, wantCode: codes.Internal,
			wantMsg: long[:minMaxMessageLen-len(truncated)] + truncated,
		},
		{name: "invalid UTF-8 replaced", err: errors.New("bad \xff byte"), wantCode: codes.Internal, wantMsg: "CreateVolume: bad \uFFFD byte"},
		{name: "method without service", err: errors.New("x"), method: "Probe", wantCode: codes.Internal, wantMsg: "Probe: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := append([]Option{WithScrubber(scrubSecrets)}, tt.opts...)
			m := method
			if tt.method != "" {
				m = tt.method
			}
			req := &csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"password": secret}}
			resp, err := UnaryServerInterceptor(opts...)(context.Background(), req, &grpc.UnaryServerInfo{FullMethod: m},
				func(context.Context, any) (any, error) { return nil, tt.err })
			if resp != nil {
				t.Errorf("resp = %v, want nil", resp)
			}
			s, ok := status.FromError(err)
			if !ok || err == nil {
				t.Fatalf("err = %v, want a status", err)
			}
			if s.Code() != tt.wantCode {
				t.Errorf("code = %v, want %v", s.Code(), tt.wantCode)
			}
			if tt.check != nil {
				tt.check(t, s.Message())
			} else if s.Message() != tt.wantMsg {
				t.Errorf("message = %q, want %q", s.Message(), tt.wantMsg)
			}
			if len(s.Proto().GetDetails()) != 0 {
				t.Errorf("details not stripped: %v", s.Proto().GetDetails())
			}
			if strings.Contains(s.Message(), secret) {
				t.Errorf("secret in message %q", s.Message())
			}

			// Idempotent: a second pass changes nothing.
			_, again := UnaryServerInterceptor(opts...)(context.Background(), req, &grpc.UnaryServerInfo{FullMethod: m},
				func(context.Context, any) (any, error) { return nil, err })
			if a := status.Convert(again); a.Code() != s.Code() || a.Message() != s.Message() {
				t.Errorf("second pass gave %v %q, want %v %q", a.Code(), a.Message(), s.Code(), s.Message())
			}
		})
	}
}

func TestDefaultScrubber(t *testing.T) {
	tests := []struct {
		name string
		req  any
		want string
	}{
		{name: "csi_secret field", req: &csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"password": secret}}, want: "login with " + stripped + " refused"},
		{name: "nested secret", req: &csi.NodeStageVolumeRequest{VolumeId: "v", Secrets: map[string]string{"k": secret}}, want: "login with " + stripped + " refused"},
		{name: "no secrets in request type", req: &csi.ProbeRequest{}, want: "login with " + secret + " refused"},
		{name: "not a proto message", req: secret, want: "login with " + secret + " refused"},
		{name: "nil request", req: nil, want: "login with " + secret + " refused"},
		{name: "typed nil request", req: (*csi.CreateVolumeRequest)(nil), want: "login with " + secret + " refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := UnaryServerInterceptor()(context.Background(), tt.req, &grpc.UnaryServerInfo{FullMethod: method},
				func(context.Context, any) (any, error) {
					return nil, status.Error(codes.Unauthenticated, "login with "+secret+" refused")
				})
			if got := status.Convert(err).Message(); got != tt.want {
				t.Fatalf("message = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSuccessUntouched(t *testing.T) {
	resp, err := UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method},
		func(context.Context, any) (any, error) { return "ok", nil })
	if resp != "ok" || err != nil {
		t.Fatalf("got %v, %v; want ok, nil", resp, err)
	}
	// A response that comes with an error still comes back, as gRPC drops it.
	resp, _ = UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method},
		func(context.Context, any) (any, error) { return "partial", errors.New("x") })
	if resp != "partial" {
		t.Fatalf("resp = %v, want the handler's", resp)
	}
}

// fakeStream hands out one NodeStageVolumeRequest carrying a secret.
type fakeStream struct {
	grpc.ServerStream
	sent bool
}

func (s *fakeStream) Context() context.Context { return context.Background() }

func (s *fakeStream) RecvMsg(m any) error {
	if s.sent {
		return io.EOF
	}
	s.sent = true
	m.(*csi.NodeStageVolumeRequest).Secrets = map[string]string{"token": secret}
	return nil
}

func TestStreamServerInterceptor(t *testing.T) {
	tests := []struct {
		name     string
		handler  grpc.StreamHandler
		wantCode codes.Code
		wantMsg  string
	}{{
		name: "secret from the received message scrubbed",
		handler: func(_ any, ss grpc.ServerStream) error {
			var req csi.NodeStageVolumeRequest
			if err := ss.RecvMsg(&req); err != nil {
				return err
			}
			return withDetails(t, codes.FailedPrecondition, "token "+req.Secrets["token"]+" expired")
		},
		wantCode: codes.FailedPrecondition,
		wantMsg:  "token " + stripped + " expired",
	}, {
		name:     "error before any receive",
		handler:  func(any, grpc.ServerStream) error { return errors.New("not ready") },
		wantCode: codes.Internal,
		wantMsg:  "Watch: not ready",
	}, {
		name:     "empty status",
		handler:  func(any, grpc.ServerStream) error { return status.Error(codes.Unavailable, "") },
		wantCode: codes.Unavailable,
		wantMsg:  "Watch: failed with Unavailable and no message",
	}, {
		name:    "success",
		handler: func(any, grpc.ServerStream) error { return nil },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := StreamServerInterceptor(WithScrubber(scrubSecrets))(nil, &fakeStream{}, &grpc.StreamServerInfo{FullMethod: "/test.Stream/Watch"}, tt.handler)
			if tt.wantCode == codes.OK {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			s := status.Convert(err)
			if s.Code() != tt.wantCode || s.Message() != tt.wantMsg || len(s.Proto().GetDetails()) != 0 {
				t.Fatalf("got %v %q %v, want %v %q and no details", s.Code(), s.Message(), s.Proto().GetDetails(), tt.wantCode, tt.wantMsg)
			}
		})
	}
}

type controller struct {
	csi.UnimplementedControllerServer
}

func (controller) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	s, err := status.New(codes.ResourceExhausted, "pool rejected credentials "+req.GetSecrets()["password"]).
		WithDetails(wrapperspb.String("debug info"))
	if err != nil {
		return nil, err
	}
	return nil, s.Err()
}

type streamer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (streamer) FullDuplexCall(ss grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	if _, err := ss.Recv(); err != nil {
		return err
	}
	s, err := status.New(codes.Aborted, "busy").WithDetails(wrapperspb.String("debug info"))
	if err != nil {
		return err
	}
	return s.Err()
}

func dial(t *testing.T, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(opts...)
	csi.RegisterControllerServer(srv, controller{})
	testgrpc.RegisterTestServiceServer(srv, streamer{})
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
	return conn
}

// TestEndToEnd shows what a real client receives, with and without the
// interceptors: without them the details and the secret reach the client.
func TestEndToEnd(t *testing.T) {
	tests := []struct {
		name        string
		opts        []grpc.ServerOption
		wantDetails bool
		wantMsg     string
	}{{
		name:        "without sanitize",
		wantDetails: true,
		wantMsg:     "pool rejected credentials " + secret,
	}, {
		name: "with sanitize",
		opts: []grpc.ServerOption{
			grpc.ChainUnaryInterceptor(UnaryServerInterceptor(WithScrubber(scrubSecrets))),
			grpc.ChainStreamInterceptor(StreamServerInterceptor(WithScrubber(scrubSecrets))),
		},
		wantMsg: "pool rejected credentials " + stripped,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := dial(t, tt.opts...)

			var trailer metadata.MD
			_, err := csi.NewControllerClient(conn).CreateVolume(context.Background(),
				&csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"password": secret}},
				grpc.Trailer(&trailer))
			s := status.Convert(err)
			if s.Code() != codes.ResourceExhausted || s.Message() != tt.wantMsg {
				t.Fatalf("CreateVolume: %v %q, want ResourceExhausted %q", s.Code(), s.Message(), tt.wantMsg)
			}
			_, rawDetails := trailer["grpc-status-details-bin"]
			if gotDetails := len(s.Details()) != 0; gotDetails != tt.wantDetails || rawDetails != tt.wantDetails {
				t.Fatalf("details %v, trailer grpc-status-details-bin present %v; want %v", s.Details(), rawDetails, tt.wantDetails)
			}

			stream, err := testgrpc.NewTestServiceClient(conn).FullDuplexCall(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(&testgrpc.StreamingOutputCallRequest{}); err != nil {
				t.Fatal(err)
			}
			_, err = stream.Recv()
			s = status.Convert(err)
			_, rawDetails = stream.Trailer()["grpc-status-details-bin"]
			if s.Code() != codes.Aborted || (len(s.Details()) != 0) != tt.wantDetails || rawDetails != tt.wantDetails {
				t.Fatalf("FullDuplexCall: %v %q details %v, want Aborted with details %v", s.Code(), s.Message(), s.Details(), tt.wantDetails)
			}
		})
	}
}

func BenchmarkUnaryServerInterceptorError(b *testing.B) {
	icpt := UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: method}
	errNotFound := status.Error(codes.NotFound, "volume vol-1 not found")
	handler := func(context.Context, any) (any, error) { return nil, errNotFound }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = icpt(context.Background(), nil, info, handler)
	}
}
