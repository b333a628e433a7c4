package recovery

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/internal/streamcapture"
	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/secrets"

	"github.com/csikit/csikit/internal/grpcmethod"
)

// Option configures the interceptors.
type Option func(*options)

type options struct {
	logger    *zap.Logger
	scrub     func(text string, req any) string
	requestID func(ctx context.Context) (context.Context, string)
}

// WithLogger sets where panics are reported. The default, and what nil
// selects, writes JSON lines at Error level to standard error: a panic is
// never dropped silently. Pass zap.NewNop() to drop them anyway.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithScrubber sets the function that removes the request's secret values
// from the panic text before it is logged. It is called with the unary
// request, or for a stream with the first message the handler received (nil
// if none). The default replaces the secret values of a proto request
// (secrets.Scrub).
func WithScrubber(scrub func(text string, req any) string) Option {
	return func(o *options) { o.scrub = scrub }
}

// WithRequestID sets how the request ID is found: f returns the ID and a
// context carrying it, which is what the handler gets. The default is
// requestid.Ensure, which keeps an ID already attached, or takes it from the
// incoming metadata, or mints one. An ID is attached here, and not only read,
// because recovery runs outside the request ID interceptor.
func WithRequestID(f func(ctx context.Context) (context.Context, string)) Option {
	return func(o *options) { o.requestID = f }
}

func newOptions(opts []Option) *options {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	if o.logger == nil {
		o.logger = defaultLogger()
	}
	if o.scrub == nil {
		o.scrub = secrets.ScrubAny
	}
	if o.requestID == nil {
		o.requestID = requestid.Ensure
	}
	return o
}

func defaultLogger() *zap.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.Lock(os.Stderr), zapcore.ErrorLevel))
}

// UnaryServerInterceptor recovers panics in unary handlers and in the
// interceptors after it.
func UnaryServerInterceptor(opts ...Option) grpc.UnaryServerInterceptor {
	o := newOptions(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		ctx, id := o.requestID(ctx)
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, o.report(info.FullMethod, id, r, req)
			}
		}()
		return handler(ctx, req)
	}
}

// StreamServerInterceptor recovers panics in streaming handlers and in the
// interceptors after it.
func StreamServerInterceptor(opts ...Option) grpc.StreamServerInterceptor {
	o := newOptions(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx, id := o.requestID(ss.Context())
		w := &stream{Stream: streamcapture.New(ss), ctx: ctx}
		defer func() {
			if r := recover(); r != nil {
				err = o.report(info.FullMethod, id, r, w.First())
			}
		}()
		return handler(srv, w)
	}
}

// report logs a recovered panic and returns the error for the client.
func (o *options) report(fullMethod, id string, r any, req any) error {
	o.logger.Error("recovered from a panic in a gRPC handler",
		zap.String("method", fullMethod),
		zap.String("request_id", id),
		zap.String("panic", o.scrubbed(fmt.Sprint(r), req)),
		zap.String("panic_type", fmt.Sprintf("%T", r)),
		zap.String("stack", string(debug.Stack())),
	)
	msg := grpcmethod.Message(fullMethod, "internal error (panic); see the plugin log")
	if id != "" {
		msg += ", request ID " + id
	}
	return status.Error(codes.Internal, msg)
}

// scrubbed runs the scrubber, withholding the text if the scrubber itself
// panics: a second panic here would end the process, and unscrubbed text
// could carry a secret.
func (o *options) scrubbed(text string, req any) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = "(panic message withheld: the scrubber panicked)"
		}
	}()
	return o.scrub(text, req)
}

// stream carries the request ID context; the capture keeps the first message received, which is
// the stream's request for the scrubber.
type stream struct {
	*streamcapture.Stream
	ctx context.Context
}

func (s *stream) Context() context.Context { return s.ctx }
