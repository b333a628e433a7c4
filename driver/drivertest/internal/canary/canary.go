// Package canary seeds every secret a test sends and reports where one leaks.
//
// It puts a fresh random value into every secret field of every request.
// A client interceptor does the injecting, so no call can be forgotten: whatever a spec calls
// carries a canary. Each response and error is searched for every value sent so far. The
// plugin's logs are searched with LogLeaks. The CSI specs and the volume-group specs of
// drivertest share it.
package canary

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/secrets"
)

// Key is the secrets key the canary adds. Keys are not secret; values are.
const Key = "csikit-canary"

// secretFields caches, per request type, the string map fields SecretFieldsOf finds
// (csi_secret or vg_csi_secret).
var secretFields sync.Map // protoreflect.FullName -> []protoreflect.FieldDescriptor

// SecretFieldsOf lists the string map fields of md that hold secrets (csi_secret or
// vg_csi_secret).
func SecretFieldsOf(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	if v, ok := secretFields.Load(md.FullName()); ok {
		return v.([]protoreflect.FieldDescriptor)
	}
	var out []protoreflect.FieldDescriptor
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		// secrets.IsSecretField is csikit's one definition of "secret": csi_secret and
		// vg_csi_secret alike, so the volume-group requests carry canaries too.
		if fd.IsMap() && fd.MapValue().Kind() == protoreflect.StringKind && secrets.IsSecretField(fd) {
			out = append(out, fd)
		}
	}
	secretFields.Store(md.FullName(), out)
	return out
}

// RequestsWithSecrets lists every request type of file that has a secrets field, sorted.
func RequestsWithSecrets(file protoreflect.FileDescriptor) []string {
	var out []string
	msgs := file.Messages()
	for i := range msgs.Len() {
		md := msgs.Get(i)
		if strings.HasSuffix(string(md.Name()), "Request") && len(SecretFieldsOf(md)) > 0 {
			out = append(out, string(md.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// Canary injects secrets and searches for them. It is safe for concurrent use.
type Canary struct {
	mu     sync.Mutex
	values map[string]string // value -> method that carried it
	sent   map[string]bool   // request types that carried a canary
	leaks  []string
}

// New returns a canary that has sent nothing yet.
func New() *Canary {
	return &Canary{values: map[string]string{}, sent: map[string]bool{}}
}

// Value returns a fresh random value (24 bytes, hex) attributed to method.
func (c *Canary) Value(method string) string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("drivertest: no randomness: %v", err)) // crypto/rand never fails on supported platforms
	}
	v := hex.EncodeToString(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values[v] = method
	return v
}

// Inject adds a canary to every secrets field of req, keeping what is there (the configured
// secrets, or a canary the spec placed under another key).
func (c *Canary) Inject(method string, req any) {
	m, ok := req.(proto.Message)
	if !ok {
		return
	}
	msg := m.ProtoReflect()
	fields := SecretFieldsOf(msg.Descriptor())
	if len(fields) == 0 {
		return
	}
	c.mu.Lock()
	c.sent[string(msg.Descriptor().Name())] = true
	c.mu.Unlock()
	for _, fd := range fields {
		// A new map: the request's map may be shared with csi-sanity's configured secrets.
		secrets := msg.NewField(fd).Map()
		msg.Get(fd).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			secrets.Set(k, v)
			return true
		})
		secrets.Set(protoreflect.ValueOfString(Key).MapKey(), protoreflect.ValueOfString(c.Value(method)))
		msg.Set(fd, protoreflect.ValueOfMap(secrets))
	}
}

// search records every canary value found in text.
func (c *Canary) search(method, where, text string) {
	if text == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for v, origin := range c.values {
		if strings.Contains(text, v) {
			c.leaks = append(c.leaks, fmt.Sprintf("the secret value sent with %s appears in the %s of %s", origin, where, method))
		}
	}
}

// Inspect records every canary value found in the answer or the error of method.
func (c *Canary) Inspect(method string, resp any, err error) {
	if err != nil {
		c.search(method, "error", err.Error())
		c.search(method, "status message", status.Convert(err).Message())
	}
	if m, ok := resp.(proto.Message); ok && m != nil && m.ProtoReflect().IsValid() {
		j, _ := protojson.Marshal(m)
		c.search(method, "response (JSON)", string(j))
		t, _ := prototext.Marshal(m)
		c.search(method, "response (text)", string(t))
	}
}

// Unary is a gRPC client interceptor: it injects into the request and inspects the answer.
func (c *Canary) Unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.Inject(method, req)
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		c.Inspect(method, nil, err)
	} else {
		c.Inspect(method, reply, nil)
	}
	return err
}

// Stream is a gRPC client stream interceptor: it injects into every message sent and inspects
// every message received.
func (c *Canary) Stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		c.Inspect(method, nil, err)
		return nil, err
	}
	return &canaryStream{ClientStream: s, c: c, method: method}, nil
}

type canaryStream struct {
	grpc.ClientStream
	c      *Canary
	method string
}

func (s *canaryStream) SendMsg(m any) error {
	s.c.Inject(s.method, m)
	return s.ClientStream.SendMsg(m)
}

func (s *canaryStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	switch {
	case errors.Is(err, io.EOF):
	case err != nil:
		s.c.Inspect(s.method, nil, err)
	default:
		s.c.Inspect(s.method, m, nil)
	}
	return err
}

// LogLeaks returns the log lines that contain a canary value, with the value masked.
func (c *Canary) LogLeaks(logs string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		for v, origin := range c.values {
			if strings.Contains(line, v) {
				out = append(out, fmt.Sprintf("the secret value sent with %s is logged: %s", origin, strings.ReplaceAll(line, v, "<canary>")))
			}
		}
	}
	return out
}

// AllValues returns every value sent so far.
func (c *Canary) AllValues() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.values))
	for v := range c.values {
		out = append(out, v)
	}
	return out
}

// Found returns what the canary found in answers and errors, in the order found, and the request
// types that carried a canary, sorted.
func (c *Canary) Found() (leaks, sent []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	leaks = slices.Clone(c.leaks)
	sent = make([]string, 0, len(c.sent))
	for name := range c.sent {
		sent = append(sent, name)
	}
	slices.Sort(sent)
	return leaks, sent
}
