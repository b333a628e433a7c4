package requestid

import (
	"context"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func TestNew(t *testing.T) {
	id := New()
	p, n, ok := strings.Cut(id, "-")
	if !ok || p != prefix || len(p) != 10 || n == "" {
		t.Fatalf("New() = %q, want %q-<counter>", id, prefix)
	}
	if !sane(id) {
		t.Fatalf("New() = %q is not a sane ID", id)
	}
	if New() == id {
		t.Fatal("two calls to New returned the same ID")
	}
}

func TestNewUniqueAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 2000
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ids[g] = append(ids[g], New())
			}
		}()
	}
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("duplicate ID %q", id)
			}
			seen[id] = true
		}
	}
}

func TestPrefixDiffersPerProcess(t *testing.T) {
	// Each process draws its own prefix; two draws colliding would mean the
	// randomness is broken.
	if a, b := newPrefix(), newPrefix(); a == b {
		t.Fatalf("two prefixes are both %q", a)
	}
}

func TestEnsure(t *testing.T) {
	long := strings.Repeat("x", MaxLen)
	tests := []struct {
		name string
		md   metadata.MD // incoming metadata; nil means none
		have string      // ID already on the context
		want string      // "" means a freshly minted ID
	}{
		{name: "nothing: minted"},
		{name: "x-request-id", md: metadata.Pairs(MetadataKey, "abc-123"), want: "abc-123"},
		{name: "gocsi key", md: metadata.Pairs(GocsiMetadataKey, "42"), want: "42"},
		{name: "x-request-id preferred", md: metadata.Pairs(GocsiMetadataKey, "42", MetadataKey, "abc"), want: "abc"},
		{name: "first value of several", md: metadata.Pairs(MetadataKey, "one", MetadataKey, "two"), want: "one"},
		{name: "64 bytes kept", md: metadata.Pairs(MetadataKey, long), want: long},
		{name: "printable punctuation kept", md: metadata.Pairs(MetadataKey, "a b~!{}"), want: "a b~!{}"},
		{name: "65 bytes replaced", md: metadata.Pairs(MetadataKey, long+"x")},
		{name: "empty replaced", md: metadata.Pairs(MetadataKey, "")},
		{name: "control character replaced", md: metadata.Pairs(MetadataKey, "a\nb")},
		{name: "non-ASCII replaced", md: metadata.Pairs(MetadataKey, "ré")},
		{name: "bad preferred key falls back", md: metadata.Pairs(MetadataKey, "a\x7fb", GocsiMetadataKey, "7"), want: "7"},
		{name: "other keys ignored", md: metadata.Pairs("request-id", "abc")},
		{name: "existing context ID kept", md: metadata.Pairs(MetadataKey, "abc"), have: "outer", want: "outer"},
		{name: "mixed-case key from a hand-built MD", md: metadata.MD{"X-Request-Id": {"abc"}}, want: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.md != nil {
				ctx = metadata.NewIncomingContext(ctx, tt.md)
			}
			if tt.have != "" {
				ctx = NewContext(ctx, tt.have)
			}
			got, id := Ensure(ctx)
			if FromContext(got) != id {
				t.Fatalf("Ensure returned ID %q but its context carries %q", id, FromContext(got))
			}
			if tt.want != "" {
				if id != tt.want {
					t.Fatalf("Ensure ID = %q, want %q", id, tt.want)
				}
				return
			}
			if !strings.HasPrefix(id, prefix+"-") {
				t.Fatalf("Ensure ID = %q, want a minted one", id)
			}
		})
	}
}

func TestContext(t *testing.T) {
	if got := FromContext(context.Background()); got != "" {
		t.Fatalf("FromContext(Background) = %q, want empty", got)
	}
	type otherKey struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx := NewContext(parent, "outer")
	if got := FromContext(ctx); got != "outer" {
		t.Fatalf("FromContext = %q, want outer", got)
	}
	if got := FromContext(NewContext(ctx, "inner")); got != "inner" {
		t.Fatalf("FromContext of a nested context = %q, want inner", got)
	}
	if got := ctx.Value(otherKey{}); got != "v" {
		t.Fatalf("other values lost: %v", got)
	}
	if got := FromContext(context.WithValue(ctx, otherKey{}, "w")); got != "outer" {
		t.Fatalf("FromContext through WithValue = %q, want outer", got)
	}
	if !strings.Contains(ctx.(interface{ String() string }).String(), `WithRequestID("outer")`) {
		t.Fatalf("String() = %q", ctx)
	}
	// Cancellation passes through, also to contexts derived from ours.
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	cancel()
	<-ctx.Done()
	<-child.Done()
	if ctx.Err() != context.Canceled {
		t.Fatalf("Err = %v, want Canceled", ctx.Err())
	}
}

func TestUnaryServerInterceptor(t *testing.T) {
	tests := []struct {
		name string
		md   metadata.MD
		want string
	}{
		{name: "from metadata", md: metadata.Pairs(MetadataKey, "abc"), want: "abc"},
		{name: "minted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.md != nil {
				ctx = metadata.NewIncomingContext(ctx, tt.md)
			}
			var got string
			_, err := UnaryServerInterceptor()(ctx, "req", &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"},
				func(ctx context.Context, req any) (any, error) {
					got = FromContext(ctx)
					return nil, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if got == "" || (tt.want != "" && got != tt.want) {
				t.Fatalf("handler saw ID %q, want %q", got, tt.want)
			}
		})
	}
}

type fakeStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *fakeStream) Context() context.Context { return s.ctx }

func TestStreamServerInterceptor(t *testing.T) {
	tests := []struct {
		name     string
		ctx      context.Context
		want     string
		wantSame bool // the handler gets the original stream
	}{
		{name: "from metadata", ctx: metadata.NewIncomingContext(context.Background(), metadata.Pairs(GocsiMetadataKey, "9")), want: "9"},
		{name: "minted", ctx: context.Background()},
		{name: "already attached", ctx: NewContext(context.Background(), "outer"), want: "outer", wantSame: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := &fakeStream{ctx: tt.ctx}
			var got string
			var same bool
			err := StreamServerInterceptor()(nil, ss, &grpc.StreamServerInfo{FullMethod: "/x.Y/Z"},
				func(srv any, s grpc.ServerStream) error {
					got = FromContext(s.Context())
					same = s == grpc.ServerStream(ss)
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if got == "" || (tt.want != "" && got != tt.want) {
				t.Fatalf("handler saw ID %q, want %q", got, tt.want)
			}
			if same != tt.wantSame {
				t.Fatalf("handler got the original stream: %v, want %v", same, tt.wantSame)
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = New()
	}
}

// BenchmarkEnsureMint is the common case: no ID in the metadata, so one is
// minted and attached.
func BenchmarkEnsureMint(b *testing.B) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("user-agent", "csi-provisioner", ":authority", "unix"))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Ensure(ctx)
	}
}

func BenchmarkEnsureFromMetadata(b *testing.B) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("user-agent", "csi-provisioner", MetadataKey, "abc-123"))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Ensure(ctx)
	}
}

func BenchmarkFromContext(b *testing.B) {
	ctx := context.WithValue(NewContext(context.Background(), "abc"), struct{}{}, 1)
	b.ReportAllocs()
	for b.Loop() {
		_ = FromContext(ctx)
	}
}

func BenchmarkUnaryServerInterceptor(b *testing.B) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("user-agent", "csi-provisioner"))
	icpt := UnaryServerInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}
	handler := func(ctx context.Context, req any) (any, error) { return nil, nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = icpt(ctx, nil, info, handler)
	}
}

// TestEnsureMintsWithTwoAllocations: minting and attaching an ID cost the context and the ID's
// string, and the ID stays what was minted.
func TestEnsureMintsWithTwoAllocations(t *testing.T) {
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { _, _ = Ensure(ctx) }); n != 2 {
		t.Errorf("Ensure without an ID: %v allocations, want 2", n)
	}
	got, id := Ensure(ctx)
	if !strings.HasPrefix(id, prefix+"-") || !sane(id) || FromContext(got) != id {
		t.Fatalf("Ensure minted %q, context carries %q", id, FromContext(got))
	}
	// Later mints must not change an ID handed out before.
	kept := strings.Clone(id)
	for range 10 {
		_, _ = Ensure(ctx)
	}
	if id != kept || FromContext(got) != kept {
		t.Fatalf("minted ID changed from %q to %q", kept, id)
	}
}
