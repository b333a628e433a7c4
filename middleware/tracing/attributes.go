package tracing

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/secrets"
)

// resourceFields are the request fields whose values become span attributes,
// by proto field name. The list is fixed, and unexported so no one can widen
// it at run time: a span leaves the process, so only identifiers an operator
// searches by are sent, never a field chosen by pattern. Only top-level,
// singular string fields are read.
var resourceFields = [...]protoreflect.Name{
	"volume_id",
	"snapshot_id",
	"source_volume_id",
	"node_id",
	"name",
	"group_snapshot_id",
	"volume_group_id",
	"bucket_id",
	"account_id",
}

// Attribute key prefixes. A field is named after the protocol of the request
// that carries it ("csi.volume_id", "cosi.bucket_id"), so that "name" says
// whether a volume or a bucket was created. Volume groups are a CSI
// extension and share the csi prefix.
const (
	CSIPrefix  = "csi."
	COSIPrefix = "cosi."
)

// resourceField is one allow-listed field of one message type.
type resourceField struct {
	fd  protoreflect.FieldDescriptor
	key attribute.Key
}

// plans caches the allow-listed fields per message descriptor, so a call
// looks its fields up once per type, not once per call.
var plans sync.Map // protoreflect.MessageDescriptor -> []resourceField

func planFor(md protoreflect.MessageDescriptor) []resourceField {
	if p, ok := plans.Load(md); ok {
		return p.([]resourceField)
	}
	prefix := CSIPrefix
	if pkg := string(md.ParentFile().Package()); pkg == "cosi" || strings.HasPrefix(pkg, "cosi.") ||
		strings.HasPrefix(pkg, "sigs.k8s.io.cosi.") {
		prefix = COSIPrefix
	}
	var p []resourceField
	fields := md.Fields()
	for _, name := range resourceFields {
		fd := fields.ByName(name)
		// A list or map of IDs is left out: its size is unbounded, and a
		// span attribute is meant to name the one resource of the call. A
		// secret field is left out whatever its name; the set of secret
		// fields is fixed, so the answer is kept in the plan.
		if fd == nil || fd.Kind() != protoreflect.StringKind || fd.Cardinality() == protoreflect.Repeated ||
			secrets.IsSecretField(fd) {
			continue
		}
		p = append(p, resourceField{fd: fd, key: attribute.Key(prefix + string(name))})
	}
	actual, _ := plans.LoadOrStore(md, p)
	return actual.([]resourceField)
}

// planCache remembers the plan of the first message type it is asked
// about, so that an interceptor that sees one type (the driver builds one
// per method) finds its plan without the look-up in plans.
type planCache struct{ first atomic.Pointer[typePlan] }

// typePlan is one message type's plan.
type typePlan struct {
	md     protoreflect.MessageDescriptor
	fields []resourceField
}

// plan is planFor(md), from c when c holds md's plan. A nil c only asks
// planFor.
func (c *planCache) plan(md protoreflect.MessageDescriptor) []resourceField {
	if c == nil {
		return planFor(md)
	}
	if p := c.first.Load(); p != nil && p.md == md {
		return p.fields
	}
	fields := planFor(md)
	if c.first.Load() == nil {
		c.first.CompareAndSwap(nil, &typePlan{md: md, fields: fields})
	}
	return fields
}

// Annotate adds the resource fields of req to span: the top-level string
// fields volume_id, snapshot_id, source_volume_id, node_id, name,
// group_snapshot_id, volume_group_id, bucket_id and account_id that are set,
// as "csi.<field>" ("cosi.<field>" for COSI requests), and never a field that
// secrets.IsSecretField reports. It does nothing when span is not recording
// or req is not a proto message. The interceptors call it; it is exported for
// handlers that trace work outside a gRPC call.
func Annotate(span trace.Span, req any) {
	if !span.IsRecording() {
		return
	}
	annotate(span, req, nil)
}

// annotate is Annotate for a recording span, with c to find the plan in.
func annotate(span trace.Span, req any, c *planCache) {
	pm, ok := req.(proto.Message)
	if !ok {
		return
	}
	m := pm.ProtoReflect()
	if !m.IsValid() {
		return
	}
	// The attributes are gathered in a pooled buffer and handed over in a
	// slice of their own, of the exact size: the OpenTelemetry API does not
	// say that a span copies what SetAttributes is given, and recognising the
	// SDK's span (which does copy) would link the SDK into every driver, with
	// or without tracing. That one small allocation per recording call with
	// resource fields is all it costs.
	bp := attrBufs.Get().(*attrBuf)
	n := 0
	for _, f := range c.plan(m.Descriptor()) {
		if !m.Has(f.fd) {
			continue
		}
		bp[n] = f.key.String(m.Get(f.fd).String())
		n++
	}
	if n > 0 {
		span.SetAttributes(slices.Clone(bp[:n])...)
	}
	clear(bp[:n])
	attrBufs.Put(bp)
}

// attrBuf holds the resource attributes of one call.
type attrBuf [len(resourceFields)]attribute.KeyValue

var attrBufs = sync.Pool{New: func() any { return new(attrBuf) }}

// setStatus marks the span as failed for the codes that mean the server
// failed (serverFault). The description is the code's name, not the error
// message: the message may not have been scrubbed yet at this depth of the
// chain. ServerOption's handler replaces it with the final, scrubbed message
// when the call ends; this is for spans started by something else.
func setStatus(span trace.Span, err error) {
	if c := status.Code(err); serverFault(c) {
		span.SetStatus(otelcodes.Error, c.String())
	}
}

// UnaryServerInterceptor adds the call's resource fields (see
// Annotate) to the current span and sets its status from the gRPC
// code. Put it after validation, so that only fields of a valid request are
// recorded. When the span is not recording (tracing off or not sampled) it
// only calls the handler: no allocation.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	var plans planCache
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		span := trace.SpanFromContext(ctx)
		if !span.IsRecording() {
			return handler(ctx, req)
		}
		annotate(span, req, &plans)
		resp, err := handler(ctx, req)
		if err != nil {
			setStatus(span, err)
		}
		return resp, err
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streaming calls: the
// resource fields are read from the first message the handler receives.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		span := trace.SpanFromContext(ss.Context())
		if !span.IsRecording() {
			return handler(srv, ss)
		}
		err := handler(srv, &annotatedStream{ServerStream: ss, span: span})
		if err != nil {
			setStatus(span, err)
		}
		return err
	}
}

// annotatedStream annotates the span with the first message received. Every
// streaming RPC of CSI and COSI sends one request and streams answers; a
// later message of a client stream would only repeat or overwrite the same
// identifiers.
type annotatedStream struct {
	grpc.ServerStream
	span trace.Span
	done bool
}

// RecvMsg receives m and, the first time, adds its resource fields to the span.
func (s *annotatedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && !s.done {
		s.done = true
		annotate(s.span, m, nil)
	}
	return err
}
