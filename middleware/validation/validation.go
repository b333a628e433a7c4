// Package validation answers a message that breaks its protocol's field rules with a gRPC
// status naming the field.
//
// Its built-in rules are the CSI spec's. A [Config] adds those of other protocols.
//
// It applies, to every field of every csi.v1 message, nested ones included:
//
//   - size limits: strings <= 128 bytes, map<string, string> <= 4 KiB in total, with the spec's
//     overrides (NodeGetInfoResponse.node_id <= 256 bytes; every path field, that is every string
//     field whose name ends in "_path" (staging_target_path, target_path, volume_path,
//     volume_publish_path), <= 4096 bytes (PATH_MAX) and absolute; mount_flags <= 4 KiB in
//     total);
//   - REQUIRED fields, from a table generated from csi.proto's comments (required_gen.go, run
//     `go generate`) adjusted by hand in one place (exceptions.go), under one principle: strict
//     where the real COs comply; lenient, named and tested where a widely used CO or csi-sanity
//     deviates harmlessly (an empty accessibility_requirements, as HashiCorp Nomad sends it, counts
//     as absent);
//   - VolumeCapability, VolumeContentSource, CapacityRange, Topology, TopologyRequirement and the
//     capability messages' rules; no negative numbers; suggested names without banned control
//     characters; secret map keys and values; the plugin name of GetPluginInfoResponse.
//
// Messages never echo a field value (values may be secret). Map keys may be named.
//
// InvalidUTF8 names the field of an undecodable request whose string is not valid UTF-8, for the
// decode step that runs before any interceptor.
//
// Responses are checked too: the interceptors check the size limits of every response
// (ResponseSizes), and with WithResponseChecks every rule (Response).
//
// The rules are a value, Rules, compiled once per message type; checking a valid request
// allocates nothing for generated messages. CSIRules is csi.v1 alone, what the package-level
// functions and interceptors use. NewRules adds the packages and fields a Config names (volume
// groups, COSI): the caller owns those tables.
package validation

//go:generate go run ./internal/gen

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Request checks a request message with CSIRules (see Rules.Request).
func Request(m proto.Message) error { return CSIRules().Request(m) }

// Response checks a message the plugin is about to send with CSIRules (see Rules.Response).
func Response(m proto.Message) error { return CSIRules().Response(m) }

// ResponseSizes checks the size limits of a message the plugin is about to send with CSIRules
// (see Rules.ResponseSizes).
func ResponseSizes(m proto.Message) error { return CSIRules().ResponseSizes(m) }

// orCSI is r, or CSIRules when r is nil or the zero Rules, so that neither checks nothing.
func (r *Rules) orCSI() *Rules {
	if r == nil || r.plans == nil {
		return CSIRules()
	}
	return r
}

// Request checks a request message. It returns nil when the message is valid or is not of a
// package r checks, else a gRPC status error: INVALID_ARGUMENT, except a negative
// starting_offset of GetMetadataAllocated and GetMetadataDelta, which is OUT_OF_RANGE as the
// spec's error tables say. The message names the RPC, the field and what is
// wrong with it (the limit, for a size):
//
//	CreateVolume: volume_capabilities[1].access_mode.mode: required field is missing
//	CreateVolume: name: 300 bytes, the limit is 128
func (r *Rules) Request(m proto.Message) error {
	if m == nil {
		return nil
	}
	pm := m.ProtoReflect()
	p := r.orCSI().planFor(pm.Descriptor())
	if p == nil {
		return nil
	}
	if v := checkMessage(pm, p); v != nil {
		return status.Error(v.code, v.message(p.name))
	}
	return nil
}

// Response checks a message the plugin is about to send. A violation is a bug in the plugin,
// reported as INTERNAL:
//
//	CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_id: required field is missing
func (r *Rules) Response(m proto.Message) error {
	if m == nil {
		return nil
	}
	pm := m.ProtoReflect()
	p := r.orCSI().planFor(pm.Descriptor())
	if p == nil {
		return nil
	}
	if v := checkMessage(pm, p); v != nil {
		return status.Error(codes.Internal, v.responseMessage(p.name))
	}
	return nil
}

// ResponseSizes checks only the size limits of a message the plugin is about to send: strings
// (128 bytes, or the field's own limit: 256 for NodeGetInfoResponse.node_id, 4096 for paths),
// maps (4 KiB in total) and totalled lists, nested ones included. A violation is a bug in the
// plugin, reported as INTERNAL in Response's form:
//
//	CreateVolume: plugin bug: CreateVolumeResponse.volume.volume_id: 300 bytes, the limit is 128
//
// The interceptors run it on every response: a CO may refuse or truncate an oversized value it
// stores (an ID, a context), so the breach must not reach it, and a walk of a response that
// checks only lengths costs little beside the call.
func (r *Rules) ResponseSizes(m proto.Message) error {
	if m == nil {
		return nil
	}
	pm := m.ProtoReflect()
	p := r.orCSI().planFor(pm.Descriptor())
	if p == nil {
		return nil
	}
	if v := checkSizes(pm, p); v != nil {
		return status.Error(codes.Internal, v.responseMessage(p.name))
	}
	return nil
}

type options struct {
	rules     *Rules
	responses bool
}

// Option configures the interceptors.
type Option func(*options)

// WithResponseChecks turns checking the handler's responses against every rule on or off
// (Response). Default off: the rules beyond the size limits (required fields, names, topology
// keys, ...) describe the plugin's own output, so checking them belongs in tests and staging. The
// size limits are checked either way (ResponseSizes). A response that breaks a checked rule is
// replaced by an INTERNAL error saying so.
func WithResponseChecks(on bool) Option {
	return func(c *options) { c.responses = on }
}

func newOptions(r *Rules, opts []Option) options {
	c := options{rules: r.orCSI()}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// checkResponse is Response or ResponseSizes, as the option says.
func (c options) checkResponse(m proto.Message) error {
	if c.responses {
		return c.rules.Response(m)
	}
	return c.rules.ResponseSizes(m)
}

// UnaryServerInterceptor is Rules.UnaryServerInterceptor with CSIRules.
func UnaryServerInterceptor(opts ...Option) grpc.UnaryServerInterceptor {
	return CSIRules().UnaryServerInterceptor(opts...)
}

// StreamServerInterceptor is Rules.StreamServerInterceptor with CSIRules.
func StreamServerInterceptor(opts ...Option) grpc.StreamServerInterceptor {
	return CSIRules().StreamServerInterceptor(opts...)
}

// UnaryServerInterceptor rejects a request that breaks r before the handler runs, and a response
// past a size limit (or, with response checks on, breaking any rule) after it.
func (r *Rules) UnaryServerInterceptor(opts ...Option) grpc.UnaryServerInterceptor {
	c := newOptions(r, opts)
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if m, ok := req.(proto.Message); ok {
			if err := c.rules.Request(m); err != nil {
				return nil, err
			}
		}
		resp, err := handler(ctx, req)
		if err != nil {
			return resp, err
		}
		if m, ok := resp.(proto.Message); ok {
			if verr := c.checkResponse(m); verr != nil {
				return nil, verr
			}
		}
		return resp, nil
	}
}

// StreamServerInterceptor checks, against r, every message the handler receives (RecvMsg returns the
// violation, which a generated handler returns as the call's status) and every message it sends
// against the size limits, or with response checks on against every rule (SendMsg refuses to
// send it, and the call ends with the violation).
func (r *Rules) StreamServerInterceptor(opts ...Option) grpc.StreamServerInterceptor {
	c := newOptions(r, opts)
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		cs := &checkedStream{ServerStream: ss, c: c}
		err := handler(srv, cs)
		if cs.bad != nil {
			return cs.bad
		}
		return err
	}
}

type checkedStream struct {
	grpc.ServerStream
	c   options
	bad error // first invalid response; SendMsg runs on the handler's goroutine
}

func (s *checkedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok {
		return s.c.rules.Request(pm)
	}
	return nil
}

func (s *checkedStream) SendMsg(m any) error {
	if pm, ok := m.(proto.Message); ok {
		if err := s.c.checkResponse(pm); err != nil {
			if s.bad == nil {
				s.bad = err
			}
			return err
		}
	}
	return s.ServerStream.SendMsg(m)
}
