package plugin

import (
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/middleware/validation"
)

// A request that protobuf cannot decode (invalid UTF-8 in a string field, truncated or malformed
// wire data) is the caller's mistake, but gRPC answers it INTERNAL before any interceptor runs, and
// nothing is logged. ServerCodec decodes requests like gRPC's own codec and, when that fails,
// leaves an empty request carrying the reason in an unknown field of a reserved number instead of
// failing. The chain finds the mark after logging has seen the call and answers INVALID_ARGUMENT
// naming the field.

// decodeFailureField is the unknown-field number that carries a decode failure. 19000-19999 are
// reserved for protobuf implementations, so no CSI message can use it.
const decodeFailureField protowire.Number = 19999

// ServerCodec returns the server option that lets the library answer an undecodable request with
// INVALID_ARGUMENT naming the field, after logging it like any other call. NewServer, Serve and Run
// include it; add it to a server of your own that you Register the plugin on. Without it, gRPC
// answers such requests INTERNAL before any interceptor runs.
func ServerCodec() grpc.ServerOption { return grpc.ForceServerCodecV2(lenientCodec{}) }

// lenientCodec is gRPC's proto codec with failed decodes turned into marked empty messages.
type lenientCodec struct{}

func (lenientCodec) base() encoding.CodecV2 { return encoding.GetCodecV2("proto") }

func (c lenientCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base().Marshal(v) }

func (c lenientCodec) Name() string { return "proto" }

func (c lenientCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base().Unmarshal(data, v)
	m, ok := v.(proto.Message)
	if err == nil || !ok {
		return err
	}
	// The failure path may allocate: it is rare and the caller's fault.
	reason := describeDecodeFailure(data.Materialize(), m.ProtoReflect().Descriptor(), err)
	proto.Reset(m)
	mark := protowire.AppendTag(nil, decodeFailureField, protowire.BytesType)
	mark = protowire.AppendString(mark, reason)
	m.ProtoReflect().SetUnknown(mark)
	return nil
}

// decodeFailure returns the reason a request could not be decoded, or "" for a decoded one.
func decodeFailure(req any) string {
	m, ok := req.(proto.Message)
	if !ok {
		return ""
	}
	u := m.ProtoReflect().GetUnknown()
	if len(u) == 0 {
		return ""
	}
	num, typ, n := protowire.ConsumeTag(u)
	if n < 0 || num != decodeFailureField || typ != protowire.BytesType {
		return ""
	}
	s, n := protowire.ConsumeString(u[n:])
	if n < 0 {
		return ""
	}
	return s
}

// describeDecodeFailure names the field whose string is not valid UTF-8 (protobuf's own error does
// not), or else repeats protobuf's reason. It never quotes a field's value: a secret's bytes must
// not reach a log line or a status message.
func describeDecodeFailure(b []byte, md protoreflect.MessageDescriptor, err error) string {
	if bad := validation.InvalidUTF8(md, b); bad != nil {
		// The message starts with the RPC, which undecodable puts first already.
		msg := status.Convert(bad).Message()
		if rpc, ok := strings.CutSuffix(string(md.Name()), "Request"); ok {
			msg = strings.TrimPrefix(msg, rpc+": ")
		}
		return msg
	}
	return fmt.Sprintf("malformed protobuf data (%v)", err)
}
