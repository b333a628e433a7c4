package driver

import (
	"context"
	"strings"

	"github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/middleware/locking"
	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/recovery"
	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/middleware/sanitize"
	"github.com/csikit/csikit/middleware/tracing"
	"github.com/csikit/csikit/middleware/validation"
)

// The library's policy runs inside every method it registers, not in server options, so no way of
// composing a server can skip it: Register on a plain grpc.Server, on a server with interceptors of
// its own (they run outside the library's), NewServer, Serve and Run all give the same chain. Per
// method, outermost first:
//
//	[tracing span] -> request ID -> panic recovery -> logging -> [metrics] -> status sanitising
//	-> gate -> validation -> tracing attributes -> locking
//	-> Config.UnaryInterceptors -> handler (-> per-RPC error mapping)
//
// The request ID comes first (it cannot fail) so that a recovered panic is reported with the
// call's ID; sanitising runs inside logging so that the log shows the message the CO gets. The gate
// answers what needs no handler: a request that could not be decoded (INVALID_ARGUMENT naming the
// field, where gRPC alone would answer INTERNAL before any interceptor ran and log nothing; see
// ServerCodec) and an
// RPC the plugin does not serve (UNIMPLEMENTED naming the RPC and the interface or capability).

// Register adds the plugin's services to a gRPC server: Identity always, the others when their
// backend is configured. Each method is registered with the library's interceptor chain around it,
// so validation, locking, logging and redaction run however the server is composed; interceptors
// of the server itself run outside them. Serve and Run do this for you.
func (d *Driver) Register(s grpc.ServiceRegistrar) {
	if d.b.servesCSI() {
		s.RegisterService(d.wrap(&csi.Identity_ServiceDesc), &identityServer{d: d})
	}
	if d.b.controller != nil {
		s.RegisterService(d.wrap(&csi.Controller_ServiceDesc), &controllerServer{d: d, b: &d.b})
	}
	if d.b.node != nil {
		s.RegisterService(d.wrap(&csi.Node_ServiceDesc), &nodeServer{d: d, b: &d.b})
	}
	if d.b.group != nil {
		s.RegisterService(d.wrap(&csi.GroupController_ServiceDesc), &groupServer{d: d, b: &d.b})
	}
	if d.b.metadata != nil {
		s.RegisterService(d.wrap(&csi.SnapshotMetadata_ServiceDesc), &metadataServer{d: d, b: &d.b})
	}
	if d.b.volumeGroups != nil {
		s.RegisterService(d.wrap(&volumegroup.Controller_ServiceDesc), &volumeGroupServer{d: d, b: &d.b})
	}
	if d.b.buckets != nil {
		d.registerCOSI(s)
	}
}

// wrap returns a copy of a generated service descriptor whose handlers run the library's chain.
// Every method must have an rpcTable entry (TestRPCTableCoversEveryMethod).
func (d *Driver) wrap(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		out.Methods[i] = grpc.MethodDesc{MethodName: m.MethodName, Handler: d.unaryHandler(d.spec(desc, m.MethodName), m.Handler)}
	}
	out.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, st := range desc.Streams {
		out.Streams[i] = st
		out.Streams[i].Handler = d.streamHandler(d.spec(desc, st.StreamName), st)
	}
	return &out
}

// spec finds a method's table entry; a method without one is a library bug caught by tests, and is
// served UNIMPLEMENTED rather than without policy.
func (d *Driver) spec(desc *grpc.ServiceDesc, method string) *rpcSpec {
	if s, ok := rpcTable[rpc(method)]; ok && s.carries(desc.ServiceName) {
		return s
	}
	return &rpcSpec{name: rpc(method), service: service(desc.ServiceName), unknown: true, unsupported: codes.InvalidArgument}
}

// frontUnary and frontStream are the interceptors before the gate, shared by every method.
// Metrics, when on, sit inside recovery (a panic is counted as INTERNAL and the in-flight gauge
// stays balanced) and outside sanitising, the gate, validation and locking (the code recorded is
// the one the CO gets, UNIMPLEMENTED, INVALID_ARGUMENT and ABORTED included).
func (d *Driver) frontUnary() []grpc.UnaryServerInterceptor {
	ics := []grpc.UnaryServerInterceptor{
		requestid.UnaryServerInterceptor(),
		recovery.UnaryServerInterceptor(recovery.WithLogger(d.log), recovery.WithScrubber(d.redactor.ScrubAny)),
		logging.UnaryServerInterceptor(d.log, logging.WithRedactor(d.redactor), logging.WithTraceID(tracing.TraceID)),
	}
	if span := tracing.UnarySpanInterceptor(d.tracer()); span != nil {
		// Outermost: every step, the log lines' trace_id included, runs inside the call's span.
		ics = append([]grpc.UnaryServerInterceptor{span}, ics...)
	}
	if d.metrics != nil {
		ics = append(ics, d.metrics.UnaryServerInterceptor())
	}
	return append(ics, sanitize.UnaryServerInterceptor(sanitize.WithScrubber(d.redactor.ScrubAny)))
}

func (d *Driver) frontStream() []grpc.StreamServerInterceptor {
	ics := []grpc.StreamServerInterceptor{
		requestid.StreamServerInterceptor(),
		recovery.StreamServerInterceptor(recovery.WithLogger(d.log), recovery.WithScrubber(d.redactor.ScrubAny)),
		logging.StreamServerInterceptor(d.log, logging.WithRedactor(d.redactor), logging.WithTraceID(tracing.TraceID)),
	}
	if span := tracing.StreamSpanInterceptor(d.tracer()); span != nil {
		ics = append([]grpc.StreamServerInterceptor{span}, ics...)
	}
	if d.metrics != nil {
		ics = append(ics, d.metrics.StreamServerInterceptor())
	}
	return append(ics, sanitize.StreamServerInterceptor(sanitize.WithScrubber(d.redactor.ScrubAny)))
}

// gate is the UNIMPLEMENTED answer for an RPC the plugin does not serve, or nil.
func (d *Driver) gate(s *rpcSpec) error {
	if s.unknown {
		return status.Errorf(codes.Unimplemented, "%s is not served by this version of csikit", s.name)
	}
	if !d.b.serves(s) {
		var names []string
		for _, t := range s.serves {
			names = append(names, "driver."+t.Name())
		}
		return status.Errorf(codes.Unimplemented, "%s is not implemented by this plugin (its backend does not implement %s)",
			s.name, strings.Join(names, " or "))
	}
	if s.ctrlCap != 0 && !d.caps.controller[s.ctrlCap] {
		return status.Errorf(codes.Unimplemented, "%s is not served: this plugin does not advertise the %s capability", s.name, s.ctrlCap)
	}
	if s.nodeCap != 0 && !d.caps.node[s.nodeCap] {
		return status.Errorf(codes.Unimplemented, "%s is not served: this plugin does not advertise the %s capability", s.name, s.nodeCap)
	}
	return nil
}

func (d *Driver) unaryHandler(s *rpcSpec, h grpc.MethodHandler) grpc.MethodHandler {
	ics := d.frontUnary()
	ics = append(ics, gateUnary(s.name, d.gate(s)),
		validation.UnaryServerInterceptor(validation.WithResponseChecks(d.cfg.CheckResponses)),
		// Valid requests only: the span gets the request's resource IDs (nothing when not
		// recording, and never a secret).
		tracing.UnaryServerInterceptor())
	if s.locks != nil {
		ics = append(ics, locking.UnaryServerInterceptor(d.locker, s.locks))
	}
	ours := chainUnary(append(ics, d.cfg.UnaryInterceptors...))
	return func(srv any, ctx context.Context, dec func(any) error, outer grpc.UnaryServerInterceptor) (any, error) {
		if outer == nil {
			return h(srv, ctx, dec, ours)
		}
		// The server's own interceptors run outside the library's chain.
		return h(srv, ctx, dec, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			return outer(ctx, req, info, func(ctx context.Context, req any) (any, error) {
				return ours(ctx, req, info, handler)
			})
		})
	}
}

// gateUnary answers, after logging has seen the call, a request that could not be decoded and an
// RPC the plugin does not serve (unserved is then its UNIMPLEMENTED answer).
func gateUnary(r rpc, unserved error) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if reason := decodeFailure(req); reason != "" {
			return nil, undecodable(r, reason)
		}
		if unserved != nil {
			return nil, unserved
		}
		return handler(ctx, req)
	}
}

// undecodable is the answer to a request ServerCodec could not decode.
func undecodable(r rpc, reason string) error {
	return status.Errorf(codes.InvalidArgument, "%s: the request cannot be decoded: %s", r, reason)
}

func (d *Driver) streamHandler(s *rpcSpec, desc grpc.StreamDesc) grpc.StreamHandler {
	front := chainStream(d.frontStream())
	inner := chainStream(append([]grpc.StreamServerInterceptor{
		validation.StreamServerInterceptor(validation.WithResponseChecks(d.cfg.CheckResponses)),
		tracing.StreamServerInterceptor(),
	}, d.cfg.StreamInterceptors...))
	gate := d.gate(s)
	info := &grpc.StreamServerInfo{FullMethod: s.method(), IsClientStream: desc.ClientStreams, IsServerStream: desc.ServerStreams}
	h := desc.Handler
	return func(srv any, ss grpc.ServerStream) error {
		return front(srv, ss, info, func(srv any, ss grpc.ServerStream) error {
			if gate != nil {
				return gate
			}
			return inner(srv, ss, info, func(srv any, ss grpc.ServerStream) error {
				return h(srv, &decodingStream{ServerStream: ss, r: s.name})
			})
		})
	}
}

// decodingStream turns a request ServerCodec could not decode into INVALID_ARGUMENT, as gateUnary
// does for unary calls.
type decodingStream struct {
	grpc.ServerStream
	r rpc
}

func (s *decodingStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if reason := decodeFailure(m); reason != "" {
		return undecodable(s.r, reason)
	}
	return nil
}

// chainUnary composes interceptors into one, the first outermost.
func chainUnary(ics []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(ics) {
	case 0:
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(ctx, req)
		}
	case 1:
		return ics[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return ics[0](ctx, req, info, nextUnary(ics, 1, info, h))
	}
}

func nextUnary(ics []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(ics) {
		return final
	}
	return func(ctx context.Context, req any) (any, error) {
		return ics[i](ctx, req, info, nextUnary(ics, i+1, info, final))
	}
}

// chainStream composes stream interceptors into one, the first outermost.
func chainStream(ics []grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return nextStream(ics, 0, info, h)(srv, ss)
	}
}

func nextStream(ics []grpc.StreamServerInterceptor, i int, info *grpc.StreamServerInfo, final grpc.StreamHandler) grpc.StreamHandler {
	if i == len(ics) {
		return final
	}
	return func(srv any, ss grpc.ServerStream) error {
		return ics[i](srv, ss, info, nextStream(ics, i+1, info, final))
	}
}
