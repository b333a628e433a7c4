package requestid

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	middleware "github.com/grpc-ecosystem/go-grpc-middleware/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Metadata keys an incoming ID is taken from, in order of preference.
const (
	// MetadataKey is the conventional request ID header.
	MetadataKey = "x-request-id"
	// GocsiMetadataKey is the key gocsi-based clients and plugins use.
	GocsiMetadataKey = "csi.requestid"
)

// MaxLen is the longest incoming ID accepted; a longer one is replaced by a
// minted ID, so that a caller cannot bloat every log line of the call.
const MaxLen = 64

var (
	// prefix tells processes apart: 6 random bytes, 10 base32 characters.
	prefix  = newPrefix()
	counter atomic.Uint64
)

func newPrefix() string {
	var b [6]byte
	// crypto/rand.Read does not fail; it crashes the program instead.
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// New mints a request ID unique within this process and, with overwhelming
// probability, across processes: a random per-process prefix, "-", and a
// decimal counter. It costs one allocation.
func New() string {
	var buf [mintedLen]byte
	return string(mint(&buf))
}

// mintedLen bounds a minted ID: the 10-character prefix, "-", and a counter of at most 20 digits.
const mintedLen = 31

// mint writes a new ID into buf and returns the bytes written.
func mint(buf *[mintedLen]byte) []byte {
	b := append(buf[:0], prefix...)
	b = append(b, '-')
	return strconv.AppendUint(b, counter.Add(1), 10)
}

type ctxKey struct{}

// idCtx carries the ID. It is a context.WithValue specialised to one string,
// so that attaching the ID costs one allocation instead of two (WithValue
// boxes the string) and FromContext costs none.
type idCtx struct {
	context.Context
	id string
}

// newMinted returns a copy of ctx carrying a newly minted ID: two allocations,
// the context and the ID's string.
func newMinted(ctx context.Context) *idCtx {
	return &idCtx{Context: ctx, id: New()}
}

// Value returns the idCtx itself for the package's key: returning a pointer
// does not allocate, where returning the string would box it.
func (c *idCtx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return c
	}
	return c.Context.Value(key)
}

func (c *idCtx) String() string {
	return fmt.Sprintf("%v.WithRequestID(%q)", c.Context, c.id)
}

// NewContext returns a copy of ctx carrying id, which FromContext returns.
func NewContext(ctx context.Context, id string) context.Context {
	return &idCtx{Context: ctx, id: id}
}

// FromContext returns the request ID carried by ctx, or "" if there is none.
func FromContext(ctx context.Context) string {
	if c, ok := ctx.Value(ctxKey{}).(*idCtx); ok {
		return c.id
	}
	return ""
}

// Ensure returns ctx and its request ID if it already carries one. Otherwise
// it takes the ID from the incoming gRPC metadata (MetadataKey, then
// GocsiMetadataKey) when it is sane, or mints one with New, and returns a
// context carrying it.
func Ensure(ctx context.Context) (context.Context, string) {
	ctx, id, _ := ensure(ctx)
	return ctx, id
}

// ensure is Ensure that also reports whether it attached a new ID.
func ensure(ctx context.Context) (context.Context, string, bool) {
	if id := FromContext(ctx); id != "" {
		return ctx, id, false
	}
	if id := fromMetadata(ctx); id != "" {
		return NewContext(ctx, id), id, true
	}
	c := newMinted(ctx)
	return c, c.id, true
}

func fromMetadata(ctx context.Context) string {
	for _, key := range [...]string{MetadataKey, GocsiMetadataKey} {
		if vs := metadata.ValueFromIncomingContext(ctx, key); len(vs) > 0 && sane(vs[0]) {
			return vs[0]
		}
	}
	return ""
}

// sane reports whether an incoming ID is safe to put in every log line and
// error message of the call: 1 to MaxLen bytes of printable ASCII.
func sane(id string) bool {
	if id == "" || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// UnaryServerInterceptor attaches a request ID to the context of every unary
// call, as Ensure does.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, _ = Ensure(ctx)
		return handler(ctx, req)
	}
}

// StreamServerInterceptor attaches a request ID to the context of every
// streaming call, as Ensure does.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, _, attached := ensure(ss.Context())
		if !attached {
			return handler(srv, ss)
		}
		w := middleware.WrapServerStream(ss)
		w.WrappedContext = ctx
		return handler(srv, w)
	}
}
