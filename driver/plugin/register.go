package plugin

import (
	"context"
	"strings"
	"sync"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/middleware/locking"
	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/recovery"
	"github.com/csikit/csikit/middleware/sanitize"
	"github.com/csikit/csikit/middleware/tracing"
	"github.com/csikit/csikit/middleware/validation"
	"github.com/csikit/csikit/secrets"
)

// The library's policy runs inside every method it registers, not in server options, so no way of
// composing a server can skip it: Register on a plain grpc.Server, on a server with interceptors of
// its own (they run outside the library's), NewServer, Serve and Run all give the same chain. Per
// method, outermost first:
//
//	[tracing span] -> panic recovery (attaching the request ID) -> logging -> [metrics]
//	-> status sanitising -> gate -> validation -> tracing attributes -> locking
//	-> Config.UnaryInterceptors -> handler (-> per-RPC error mapping)
//
// Recovery attaches the request ID (requestid.Ensure: the CO's, else a minted one) before anything
// inside it runs, so that a recovered panic is reported with the call's ID; sanitising runs inside
// logging so that the log shows the message the CO gets. The gate answers what needs no handler: a
// request that could not be decoded (INVALID_ARGUMENT naming the field, where gRPC alone would
// answer INTERNAL before any interceptor ran and log nothing; see ServerCodec) and an RPC the
// plugin does not serve (UNIMPLEMENTED naming the RPC and the interface or capability). The chain
// is walked without allocating (unaryChain), where grpc-go's chaining builds a closure per
// interceptor on every call.

// Register adds the plugin's services to a gRPC server: Identity always, the others when their
// backend is configured. Each method is registered with the library's interceptor chain around it,
// so validation, locking, logging and redaction run however the server is composed; interceptors
// of the server itself run outside them. Serve and Run do this for you.
func (d *Plugin) Register(s grpc.ServiceRegistrar) {
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
		s.RegisterService(d.wrap(&vgpb.Controller_ServiceDesc), &volumeGroupServer{d: d, b: &d.b})
	}
	if d.b.buckets != nil {
		d.registerCOSI(s)
	}
}

// wrap returns a copy of a generated service descriptor whose handlers run the library's chain.
// Every method must have an rpcTable entry (TestRPCTableCoversEveryMethod).
func (d *Plugin) wrap(desc *grpc.ServiceDesc) *grpc.ServiceDesc {
	log := d.loggerFor(service(desc.ServiceName))
	out := *desc
	out.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		out.Methods[i] = grpc.MethodDesc{MethodName: m.MethodName, Handler: d.unaryHandler(d.spec(desc, m.MethodName), log, m.Handler)}
	}
	out.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, st := range desc.Streams {
		out.Streams[i] = st
		out.Streams[i].Handler = d.streamHandler(d.spec(desc, st.StreamName), log, st)
	}
	return &out
}

// spec finds a method's table entry; a method without one is a library bug caught by tests, and is
// served UNIMPLEMENTED rather than without policy.
func (d *Plugin) spec(desc *grpc.ServiceDesc, method string) *rpcSpec {
	if s, ok := rpcTable[rpc(method)]; ok && s.carries(desc.ServiceName) {
		return s
	}
	return &rpcSpec{name: rpc(method), service: service(desc.ServiceName), unknown: true, unsupported: codes.InvalidArgument}
}

// frontUnary and frontStream are the interceptors before the gate, the same for every method but
// for the redactor, which is the service's (redactorFor).
// Metrics, when on, sit inside recovery (a panic is counted as INTERNAL and the in-flight gauge
// stays balanced) and outside sanitising, the gate, validation and locking (the code recorded is
// the one the CO gets, UNIMPLEMENTED, INVALID_ARGUMENT and ABORTED included).
//
// There is no request ID interceptor of its own: recovery attaches the ID (requestid.Ensure, its
// default) before anything after it runs, so a separate interceptor in front of it would only look
// the ID up again, at the cost of one more level on every call.
func (d *Plugin) frontUnary(r *secrets.Redactor, log *zap.Logger) []grpc.UnaryServerInterceptor {
	ics := []grpc.UnaryServerInterceptor{
		recovery.UnaryServerInterceptor(recovery.WithLogger(log), recovery.WithScrubber(r.ScrubAny)),
		logging.UnaryServerInterceptor(log, logging.WithRedactor(r), logging.WithTraceID(tracing.TraceID)),
	}
	if span := tracing.UnarySpanInterceptor(d.cfg.TracerProvider); span != nil {
		// Outermost: every step, the log lines' trace_id included, runs inside the call's span.
		ics = append([]grpc.UnaryServerInterceptor{span}, ics...)
	}
	if d.metrics != nil {
		ics = append(ics, d.metrics.UnaryServerInterceptor())
	}
	return append(ics, sanitize.UnaryServerInterceptor(sanitize.WithScrubber(r.ScrubAny)))
}

func (d *Plugin) frontStream(r *secrets.Redactor, log *zap.Logger) []grpc.StreamServerInterceptor {
	ics := []grpc.StreamServerInterceptor{
		recovery.StreamServerInterceptor(recovery.WithLogger(log), recovery.WithScrubber(r.ScrubAny)),
		logging.StreamServerInterceptor(log, logging.WithRedactor(r), logging.WithTraceID(tracing.TraceID)),
	}
	if span := tracing.StreamSpanInterceptor(d.cfg.TracerProvider); span != nil {
		ics = append([]grpc.StreamServerInterceptor{span}, ics...)
	}
	if d.metrics != nil {
		ics = append(ics, d.metrics.StreamServerInterceptor())
	}
	return append(ics, sanitize.StreamServerInterceptor(sanitize.WithScrubber(r.ScrubAny)))
}

// loggerFor is the logger of a wire service's calls. A COSI service's carries the wire version
// the call came in on (cosi_version: v1alpha1 or v1alpha2) on every line, the panic report's
// included: one backend serves both versions on one socket, and their sidecars call differently.
// The field is encoded once here, so a call pays nothing for it.
func (d *Plugin) loggerFor(svc service) *zap.Logger {
	switch svc {
	case svcCOSIIdentityV1alpha1, svcCOSIProvisionerV1alpha1:
		return d.log.With(zap.String("cosi_version", string(bucket.V1Alpha1)))
	case svcCOSIIdentityV1alpha2, svcCOSIProvisionerV1alpha2:
		return d.log.With(zap.String("cosi_version", string(bucket.V1Alpha2)))
	}
	return d.log
}

// redactorFor is the redactor of a service's calls: every COSI call hides the values of
// secret-looking keys whatever Config.RedactSecretLookingKeys says, since COSI's protos mark no
// field secret and BucketClass parameters carry passwords as readily as StorageClass ones.
func (d *Plugin) redactorFor(svc service) *secrets.Redactor {
	if svc.isCOSI() {
		return d.cosiRedactor
	}
	return d.redactor
}

// gate is the UNIMPLEMENTED answer for an RPC the plugin does not serve, or nil.
func (d *Plugin) gate(s *rpcSpec) error {
	if s.unknown {
		return status.Errorf(codes.Unimplemented, "%s is not served by this version of csikit", s.name)
	}
	if !d.b.serves(s) {
		var names []string
		for _, t := range s.serves {
			names = append(names, t.String())
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

func (d *Plugin) unaryHandler(s *rpcSpec, log *zap.Logger, h grpc.MethodHandler) grpc.MethodHandler {
	ics := d.frontUnary(d.redactorFor(s.service), log)
	ics = append(ics, gateUnary(s.name, d.gate(s)),
		d.rules.UnaryServerInterceptor(validation.WithResponseChecks(d.cfg.CheckResponses)),
		// Valid requests only: the span gets the request's resource IDs (nothing when not
		// recording, and never a secret).
		tracing.UnaryServerInterceptor())
	var inner []grpc.UnaryServerInterceptor
	if s.locks != nil {
		inner = append(inner, locking.UnaryServerInterceptor(d.locker, s.locks))
	}
	var ours grpc.UnaryServerInterceptor
	if d.cfg.BackendTimeout > 0 && s.name != rpcProbe {
		ours = d.boundedChain(s.name, newUnaryChain(ics, nil), newUnaryChain(inner, d.cfg.UnaryInterceptors))
	} else {
		ours = newUnaryChain(append(ics, inner...), d.cfg.UnaryInterceptors).intercept
	}
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

func (d *Plugin) streamHandler(s *rpcSpec, log *zap.Logger, desc grpc.StreamDesc) grpc.StreamHandler {
	front := chainStream(d.frontStream(d.redactorFor(s.service), log))
	inner := chainStream(append([]grpc.StreamServerInterceptor{
		d.rules.StreamServerInterceptor(validation.WithResponseChecks(d.cfg.CheckResponses)),
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

// unaryChain runs the library's own interceptors around a call, the first outermost, and the
// configured ones (Config.UnaryInterceptors) inside them. grpc-go's way of chaining builds a closure
// per interceptor on every call; this chain walks its list with an index kept in a per-call state
// that is recycled, so composing costs no allocation. That relies on what every library
// interceptor does and a user's may not: it calls its handler at most once at a time, on its own
// goroutine, before it returns (a second call after the first returned is fine: the index is put
// back). The configured interceptors are composed the ordinary way, so they may do anything.
type unaryChain struct {
	ics  []grpc.UnaryServerInterceptor
	user grpc.UnaryServerInterceptor // nil when none is configured
	runs sync.Pool                   // *unaryRun
}

func newUnaryChain(ours, user []grpc.UnaryServerInterceptor) *unaryChain {
	c := &unaryChain{ics: ours}
	if len(user) > 0 {
		c.user = chainUnary(user)
	}
	c.runs.New = func() any {
		r := &unaryRun{c: c}
		// Bound once per state, not per call: a method value is an allocation.
		r.next = r.step
		return r
	}
	return c
}

// unaryRun is one call's walk through a unaryChain.
type unaryRun struct {
	c     *unaryChain
	next  grpc.UnaryHandler // r.step
	info  *grpc.UnaryServerInfo
	final grpc.UnaryHandler
	i     int // the interceptor step runs next
}

// intercept is the chain as one grpc.UnaryServerInterceptor.
func (c *unaryChain) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) (any, error) {
	r := c.runs.Get().(*unaryRun)
	r.info, r.final, r.i = info, final, 0
	resp, err := r.step(ctx, req)
	// A panic skips this: the state is then dropped, not recycled, which is safe.
	r.info, r.final = nil, nil
	c.runs.Put(r)
	return resp, err
}

// step runs interceptor r.i, handing it r.next for the rest of the chain, or the handler after
// the last one.
func (r *unaryRun) step(ctx context.Context, req any) (any, error) {
	i := r.i
	if i == len(r.c.ics) {
		if r.c.user != nil {
			return r.c.user(ctx, req, r.info, r.final)
		}
		return r.final(ctx, req)
	}
	r.i = i + 1
	resp, err := r.c.ics[i](ctx, req, r.info, r.next)
	r.i = i
	return resp, err
}

// chainUnary composes interceptors into one, the first outermost, as grpc-go does: a closure per
// interceptor and call, which lets an interceptor call its handler in any way it likes.
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
