// Package logging writes one zap line per gRPC call: the method, the request ID, the duration and
// the status code at info level (warn or error for failures), and the redacted request and
// response at debug level. Secret fields are found from the proto descriptors by package secrets,
// so no secret value reaches the log; when debug is off, building the payload fields costs
// nothing.
package logging

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/secrets"

	"github.com/csikit/csikit/internal/grpcmethod"
)

// Option configures the interceptors.
type Option func(*options)

type options struct {
	redactor  *secrets.Redactor
	requestID func(context.Context) string
	traceID   func(context.Context) string
}

// WithRedactor sets how payloads are redacted at debug level (default: secrets.NewRedactor()).
func WithRedactor(r *secrets.Redactor) Option { return func(o *options) { o.redactor = r } }

// WithRequestID sets where the request ID comes from (default: requestid.FromContext).
func WithRequestID(f func(context.Context) string) Option {
	return func(o *options) { o.requestID = f }
}

// WithTraceID adds a trace_id field, from f, to every line of a call whose f answers non-empty,
// so a log line leads to the call's trace (tracing.TraceID fits). Default: none.
func WithTraceID(f func(context.Context) string) Option {
	return func(o *options) { o.traceID = f }
}

// traceField is the trace_id field, or a field that adds nothing when there is no trace.
func traceField(tid string) zap.Field {
	if tid == "" {
		return zap.Skip()
	}
	return zap.String("trace_id", tid)
}

func noTrace(context.Context) string { return "" }

func evaluate(opts []Option) *options {
	o := &options{requestID: requestid.FromContext, traceID: noTrace}
	for _, opt := range opts {
		opt(o)
	}
	if o.redactor == nil {
		o.redactor = secrets.NewRedactor()
	}
	return o
}

// levelFor keeps routine outcomes at info and flags faults: the codes a healthy plugin answers to
// bad or racing requests are warnings, the ones that mean the plugin or its storage failed are
// errors.
func levelFor(c codes.Code) zapcore.Level {
	switch c {
	case codes.OK:
		return zapcore.InfoLevel
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable:
		return zapcore.ErrorLevel
	}
	return zapcore.WarnLevel
}

// UnaryServerInterceptor logs each unary call.
func UnaryServerInterceptor(logger *zap.Logger, opts ...Option) grpc.UnaryServerInterceptor {
	o := evaluate(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		method := grpcmethod.Short(info.FullMethod)
		id, tid := o.requestID(ctx), o.traceID(ctx)
		logPayload(logger, o, "request", method, id, tid, req)
		resp, err := handler(ctx, req)
		logCall(logger, method, id, tid, start, err)
		if err == nil {
			logPayload(logger, o, "response", method, id, tid, resp)
		}
		return resp, err
	}
}

// The log calls live in small functions kept out of line (go:noinline): inlined, their zap.Field
// values would sit in the interceptor's frame, and grpc-go runs each call on a fresh goroutine
// whose stack would then have to grow to hold them, on every call, at any log level.
//
//go:noinline
func logPayload(logger *zap.Logger, o *options, key, method, id, tid string, m any) {
	if ce := logger.Check(zapcore.DebugLevel, key); ce != nil {
		ce.Write(zap.String("method", method), zap.String("request_id", id), traceField(tid), payload(o, key, m))
	}
}

//go:noinline
func logCall(logger *zap.Logger, method, id, tid string, start time.Time, err error) {
	code := status.Code(err)
	ce := logger.Check(levelFor(code), "call")
	if ce == nil {
		return
	}
	d := elapsed(start, ce.Time)
	// Each form lists exactly the fields it writes: zap copies the list to the heap, 64 bytes a
	// field, so the usual line (no error, no trace) spends no slot on an absent one.
	switch {
	case err != nil && tid != "":
		ce.Write(zap.String("method", method), zap.String("request_id", id), zap.String("trace_id", tid),
			zap.Duration("duration", d), zap.String("code", code.String()),
			zap.String("error", status.Convert(err).Message()))
	case err != nil:
		ce.Write(zap.String("method", method), zap.String("request_id", id),
			zap.Duration("duration", d), zap.String("code", code.String()),
			zap.String("error", status.Convert(err).Message()))
	case tid != "":
		ce.Write(zap.String("method", method), zap.String("request_id", id), zap.String("trace_id", tid),
			zap.Duration("duration", d), zap.String("code", code.String()))
	default:
		ce.Write(zap.String("method", method), zap.String("request_id", id),
			zap.Duration("duration", d), zap.String("code", code.String()))
	}
}

// elapsed is the time from start to the log entry's timestamp. zap stamps every entry with its
// clock, by default time.Now, so the entry's time doubles as the end of the call and saves a
// second clock read per call (a read of a virtual machine's kvm-clock costs 100 to 200 ns). That
// holds only for a timestamp that carries this process's monotonic reading, as time.Now's do; for
// a logger with a clock of its own (zap.WithClock), whose times carry none, the clock is read
// again.
func elapsed(start, stamped time.Time) time.Duration {
	if stamped != stamped.Round(0) { // Round(0) strips the monotonic reading, if there is one
		return stamped.Sub(start)
	}
	return time.Since(start)
}

func payload(o *options, key string, m any) zap.Field {
	if pm, ok := m.(proto.Message); ok {
		return o.redactor.Field(key, pm)
	}
	return zap.Skip()
}

// StreamServerInterceptor logs each streaming call once at its end, and at debug level every
// message received and sent (redacted).
func StreamServerInterceptor(logger *zap.Logger, opts ...Option) grpc.StreamServerInterceptor {
	o := evaluate(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		method := grpcmethod.Short(info.FullMethod)
		id, tid := o.requestID(ss.Context()), o.traceID(ss.Context())
		ls := &loggedStream{ServerStream: ss, logger: logger, o: o, method: method, id: id, tid: tid}
		err := handler(srv, ls)
		code := status.Code(err)
		if ce := logger.Check(levelFor(code), "call"); ce != nil {
			fields := []zap.Field{zap.String("method", method), zap.String("request_id", id), traceField(tid),
				zap.Duration("duration", time.Since(start)), zap.String("code", code.String()),
				zap.Int("messages_sent", ls.sent)}
			if err != nil {
				fields = append(fields, zap.String("error", status.Convert(err).Message()))
			}
			ce.Write(fields...)
		}
		return err
	}
}

type loggedStream struct {
	grpc.ServerStream
	logger *zap.Logger
	o      *options
	method string
	id     string
	tid    string
	sent   int
}

func (s *loggedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		if ce := s.logger.Check(zapcore.DebugLevel, "request"); ce != nil {
			ce.Write(zap.String("method", s.method), zap.String("request_id", s.id), traceField(s.tid), payload(s.o, "request", m))
		}
	}
	return err
}

func (s *loggedStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil {
		s.sent++
		if ce := s.logger.Check(zapcore.DebugLevel, "response"); ce != nil {
			ce.Write(zap.String("method", s.method), zap.String("request_id", s.id), traceField(s.tid), payload(s.o, "response", m))
		}
	}
	return err
}
