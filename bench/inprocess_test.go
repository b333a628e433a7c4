package bench

import (
	"context"
	"io"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// captured is a grpc.ServiceRegistrar that keeps what is registered, so a benchmark can call a
// service's generated method handler directly: the exact server-side path of a call, decoding
// included, without the transport.
type captured map[string]struct {
	desc *grpc.ServiceDesc
	impl any
}

func (c captured) RegisterService(desc *grpc.ServiceDesc, impl any) {
	c[desc.ServiceName] = struct {
		desc *grpc.ServiceDesc
		impl any
	}{desc, impl}
}

// unaryCall is one prepared in-process call: the generated handler of one method, the service
// implementation, and the interceptor (nil for none).
type unaryCall struct {
	handler     grpc.MethodHandler
	impl        any
	interceptor grpc.UnaryServerInterceptor
}

func (u unaryCall) call(ctx context.Context, wire []byte) (any, error) {
	dec := func(m any) error { return proto.Unmarshal(wire, m.(proto.Message)) }
	return u.handler(u.impl, ctx, dec, u.interceptor)
}

// controllerMethod finds method of the csi.v1.Controller service registered by register.
func controllerMethod(tb testing.TB, register func(grpc.ServiceRegistrar), method string) (grpc.MethodHandler, any) {
	tb.Helper()
	c := captured{}
	register(c)
	svc, ok := c["csi.v1.Controller"]
	if !ok {
		tb.Fatal("no csi.v1.Controller service registered")
	}
	for _, m := range svc.desc.Methods {
		if m.MethodName == method {
			return m.Handler, svc.impl
		}
	}
	tb.Fatalf("no method %s", method)
	return nil, nil
}

// chain composes interceptors the way grpc.ChainUnaryInterceptor does: the first is outermost,
// and each call builds the handler for the next one.
func chain(is ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(is) {
	case 0:
		return nil
	case 1:
		return is[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return is[0](ctx, req, info, nextHandler(is, 1, info, handler))
	}
}

func nextHandler(is []grpc.UnaryServerInterceptor, i int, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) grpc.UnaryHandler {
	if i == len(is) {
		return final
	}
	return func(ctx context.Context, req any) (any, error) {
		return is[i](ctx, req, info, nextHandler(is, i+1, info, final))
	}
}

func registerBare(s grpc.ServiceRegistrar) { csi.RegisterControllerServer(s, bareServer{}) }

// inProcessCalls are the server-side paths compared without the network. Loggers write to
// io.Discard: this measures CPU and allocations, not the disk.
//
//   - bare: the generated handler calling the hand-written server.
//   - gocsi: gocsi's chain (request ID, logging of request and response, request validation,
//     serial volume access) around the same hand-written server.
//   - csikit-chain: csikit's interceptors (middlewareChain, zap JSON at info) around the same
//     hand-written server: the interceptors alone.
//   - csikit: the driver's own registered Controller method (its chain runs inside) and the
//     backend: everything csikit adds (interceptors, capability checks, request conversion).
//   - csikit-debug: the same with the logger at debug (redacted request and response logged).
//   - gocsi-nolog and csikit-nolog: both without logging (gocsi's chain without its logging
//     interceptor; csikit with a nil Logger), the rest unchanged.
func inProcessCalls(tb testing.TB) map[string]unaryCall {
	bareH, bareImpl := controllerMethod(tb, registerBare, "ControllerPublishVolume")
	info := newCsikit(tb, zapJSON(io.Discard, zapcore.InfoLevel))
	debug := newCsikit(tb, zapJSON(io.Discard, zapcore.DebugLevel))
	dH, dImpl := controllerMethod(tb, info.Register, "ControllerPublishVolume")
	ddH, ddImpl := controllerMethod(tb, debug.Register, "ControllerPublishVolume")
	nolog := newCsikit(tb, nil)
	nH, nImpl := controllerMethod(tb, nolog.Register, "ControllerPublishVolume")
	gocsiLog := logrusLines{newLogrus(io.Discard)}
	var gocsiNoLog []grpc.UnaryServerInterceptor
	for i, ic := range gocsiInterceptors(gocsiLog) {
		if i != 1 { // gocsiInterceptors puts logging second
			gocsiNoLog = append(gocsiNoLog, ic)
		}
	}
	return map[string]unaryCall{
		"bare":         {bareH, bareImpl, nil},
		"gocsi":        {bareH, bareImpl, chain(gocsiInterceptors(gocsiLog)...)},
		"csikit-chain": {bareH, bareImpl, chain(middlewareChain(zapJSON(io.Discard, zapcore.InfoLevel))...)},
		"csikit":       {dH, dImpl, nil},
		"csikit-debug": {ddH, ddImpl, nil},
		"gocsi-nolog":  {bareH, bareImpl, chain(gocsiNoLog...)},
		"csikit-nolog": {nH, nImpl, nil},
	}
}

func mustMarshal(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	wire, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return wire
}

func publishContextOf(resp any) map[string]string {
	if r, ok := resp.(*csi.ControllerPublishVolumeResponse); ok {
		return r.GetPublishContext()
	}
	return nil
}

// inProcessNames orders the paths of inProcessCalls; BenchmarkInProcessChainInterleaved relies on
// it.
var inProcessNames = []string{"bare", "gocsi", "csikit-chain", "csikit", "csikit-debug", "gocsi-nolog", "csikit-nolog"}

// BenchmarkInProcessChain runs one ControllerPublishVolume through each server-side path without
// the network: decode, interceptors, handler.
func BenchmarkInProcessChain(b *testing.B) {
	wire := mustMarshal(b, publishRequest())
	calls := inProcessCalls(b)
	for _, name := range inProcessNames {
		c := calls[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.call(ctx, wire); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInProcessChainInterleaved runs the paths of BenchmarkInProcessChain in turn inside
// one benchmark (see interleaveFuncs) and reports each one's mean time per call, what each
// adds to bare, and gocsi's added time over csikit's, with and without logging.
func BenchmarkInProcessChainInterleaved(b *testing.B) {
	wire := mustMarshal(b, publishRequest())
	calls := inProcessCalls(b)
	names := inProcessNames
	ways := make([]namedFunc, len(names))
	ctx := context.Background()
	for i, name := range names {
		c := calls[name]
		ways[i] = namedFunc{name, func() {
			if _, err := c.call(ctx, wire); err != nil {
				b.Fatal(err)
			}
		}}
	}
	per := interleaveFuncs(b, ways)
	for i := 1; i < len(names); i++ {
		b.ReportMetric(per[i]-per[0], names[i]+"-added-ns")
	}
	b.ReportMetric((per[1]-per[0])/(per[3]-per[0]), "gocsi/csikit-added")
	b.ReportMetric((per[5]-per[0])/(per[6]-per[0]), "gocsi/csikit-added-nolog")
}
