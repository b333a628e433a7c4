package sanitize

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/internal/streamcapture"
	"github.com/csikit/csikit/secrets"

	"github.com/csikit/csikit/internal/grpcmethod"
)

// DefaultMaxMessageLen is the longest status message, in bytes, the
// interceptors let through by default.
const DefaultMaxMessageLen = 1024

// minMaxMessageLen keeps room for the RPC name and the truncation marker.
const minMaxMessageLen = 64

// truncated marks a message that was cut short.
const truncated = "…(truncated)"

// Option configures the interceptors.
type Option func(*options)

type options struct {
	scrub  func(text string, req any) string
	maxLen int
}

// WithScrubber sets the function that removes the request's secret values
// from an error message. It is called with the unary request, or for a stream
// with the first message the handler received (nil if none). The default
// replaces the secret values of a proto request (secrets.Scrub).
func WithScrubber(scrub func(text string, req any) string) Option {
	return func(o *options) { o.scrub = scrub }
}

// WithMaxMessageLen sets the longest status message in bytes; longer ones are
// cut at a character boundary and end in "…(truncated)". Zero or less means
// DefaultMaxMessageLen; values below 64 are raised to 64.
func WithMaxMessageLen(n int) Option {
	return func(o *options) { o.maxLen = n }
}

func newOptions(opts []Option) *options {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	if o.scrub == nil {
		o.scrub = secrets.ScrubAny
	}
	switch {
	case o.maxLen <= 0:
		o.maxLen = DefaultMaxMessageLen
	case o.maxLen < minMaxMessageLen:
		o.maxLen = minMaxMessageLen
	}
	return o
}

// UnaryServerInterceptor sanitises the error of every unary call.
func UnaryServerInterceptor(opts ...Option) grpc.UnaryServerInterceptor {
	o := newOptions(opts)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err != nil {
			return resp, o.sanitize(info.FullMethod, err, req)
		}
		return resp, nil
	}
}

// StreamServerInterceptor sanitises the error of every streaming call. The
// request the scrubber gets is the first message the handler received.
func StreamServerInterceptor(opts ...Option) grpc.StreamServerInterceptor {
	o := newOptions(opts)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		w := streamcapture.New(ss)
		if err := handler(srv, w); err != nil {
			return o.sanitize(info.FullMethod, err, w.First())
		}
		return nil
	}
}

func (o *options) sanitize(fullMethod string, err error, req any) error {
	method := grpcmethod.Short(fullMethod)
	var code codes.Code
	var msg string
	s, isStatus := status.FromError(err)
	switch {
	case !isStatus:
		// A plain Go error: gRPC would send UNKNOWN. Name the RPC, since a
		// bare "file exists" in an event says nothing about what failed.
		code = codes.Internal
		switch {
		case errors.Is(err, context.Canceled):
			code = codes.Canceled
		case errors.Is(err, context.DeadlineExceeded):
			code = codes.DeadlineExceeded
		}
		msg = o.scrub(err.Error(), req)
		if !blank(msg) {
			msg = method + ": " + msg
		}
	case s.Code() == codes.OK:
		// Would reach the client as success with no response.
		code = codes.Internal
		msg = o.scrub(s.Message(), req)
		if blank(msg) {
			msg = method + ": failed with an error carrying code OK"
		} else {
			msg = method + ": " + msg
		}
	default:
		code = s.Code()
		msg = o.scrub(s.Message(), req)
	}
	if blank(msg) {
		msg = method + ": failed with " + code.String() + " and no message"
	}
	// Scrub first, cut second: cutting first could leave the head of a
	// secret that the scrubber no longer recognises.
	return status.Error(code, limit(strings.ToValidUTF8(msg, "\uFFFD"), o.maxLen))
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// limit cuts s to at most n bytes, at a character boundary, marking the cut.
func limit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(truncated)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncated
}
