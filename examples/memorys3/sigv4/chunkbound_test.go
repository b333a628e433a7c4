package sigv4

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// testCharge is a Charge with a limit that remembers the most it held.
type testCharge struct{ limit, held, peak int64 }

func (c *testCharge) Take(n int64) bool {
	if c.held+n > c.limit {
		return false
	}
	c.held += n
	c.peak = max(c.peak, c.held)
	return true
}

func (c *testCharge) Give(n int64) { c.held -= n }

// untouchable fails the test if anything reads it: what follows a chunk header that must be
// refused unread.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("the chunk's data was read")
	return 0, io.EOF
}

// signedStream encodes chunks (and the final empty one) as a signed aws-chunked body.
func signedStream(chunks ...[]byte) []byte {
	seed, _ := hex.DecodeString(sig64)
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	s := newChunkSigner(NewKey("A", "S").signingKey(at, "us-east-1", "s3"), at, "us-east-1", "s3", seed)
	var b bytes.Buffer
	for _, c := range append(chunks, nil) {
		sig := s.next(c)
		fmt.Fprintf(&b, "%x;chunk-signature=%x\r\n%s\r\n", len(c), sig, c)
	}
	return b.Bytes()
}

// signedBody decodes stream as a Body that declared decoded bytes, with the signer of
// signedStream.
func signedBody(stream io.Reader, decoded int64) *Body {
	seed, _ := hex.DecodeString(sig64)
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	cr := newChunkReader(stream, nil, decoded)
	cr.signer = newChunkSigner(NewKey("A", "S").signingKey(at, "us-east-1", "s3"), at, "us-east-1", "s3", seed)
	return &Body{src: cr, chunks: cr, closer: io.NopCloser(nil), length: decoded}
}

// TestChunksAreBoundedByTheDeclaredLength: a chunk larger than what
// x-amz-decoded-content-length leaves is refused at its header, before any of its data is
// read, signed or not: a signed chunk is held whole until its signature checks, so its header
// alone decided how much the server would hold (up to MaxSignedChunk, whatever the declared
// length).
func TestChunksAreBoundedByTheDeclaredLength(t *testing.T) {
	for _, tc := range []struct {
		rule   string
		signed bool
		head   string
	}{
		{"a signed chunk of 16 MiB in a body of 10 bytes", true, fmt.Sprintf("%x;chunk-signature=%s\r\n", MaxSignedChunk, sig64)},
		{"a signed chunk of 11 bytes in a body of 10 bytes", true, "b;chunk-signature=" + sig64 + "\r\n"},
		{"an unsigned chunk of 11 bytes in a body of 10 bytes", false, "b\r\n"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			cr := newChunkReader(io.MultiReader(strings.NewReader(tc.head), untouchable{t}), nil, 10)
			if tc.signed {
				seed, _ := hex.DecodeString(sig64)
				at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
				cr.signer = newChunkSigner(NewKey("A", "S").signingKey(at, "us-east-1", "s3"), at, "us-east-1", "s3", seed)
			}
			n, err := cr.Read(make([]byte, 64))
			if n != 0 || !errors.Is(err, s3err.ErrIncompleteBody) {
				t.Fatalf("read %d bytes, %v; want IncompleteBody", n, err)
			}
		})
	}
	t.Run("chunks that add up to the declared length are decoded", func(t *testing.T) {
		data := bytes.Repeat([]byte("d"), 10)
		got, err := io.ReadAll(signedBody(bytes.NewReader(signedStream(data[:4], data[4:])), 10))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("decoded %q, %v", got, err)
		}
	})
}

// TestSignedChunkBuffersAreCharged: the buffer a signed chunk is held in until its signature
// checks is charged to the Body's Charge before it grows, given back when the body ends (or
// on Release, for a body abandoned midway), and a chunk the Charge has no room for fails the
// body with SlowDown without handing out any of it.
func TestSignedChunkBuffersAreCharged(t *testing.T) {
	const size = 300 << 10
	data := bytes.Repeat([]byte("c"), size)
	stream := signedStream(data)
	t.Run("charged while held, given back at the end", func(t *testing.T) {
		c := &testCharge{limit: 1 << 30}
		b := signedBody(bytes.NewReader(stream), size)
		b.ChargeTo(c)
		got, err := io.ReadAll(b)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("decoded %d bytes, %v", len(got), err)
		}
		// Grown by doubling from 64 KiB to the chunk's size: at most the old and the new
		// buffer at once, each no larger than the chunk.
		if c.peak < size || c.peak > 2*size {
			t.Errorf("a chunk of %d bytes was charged at most %d", size, c.peak)
		}
		if c.held != 0 {
			t.Errorf("%d bytes still charged after the body ended", c.held)
		}
	})
	t.Run("no room: SlowDown, nothing handed out", func(t *testing.T) {
		c := &testCharge{limit: size / 2}
		b := signedBody(bytes.NewReader(stream), size)
		b.ChargeTo(c)
		got, err := io.ReadAll(b)
		if len(got) != 0 || !errors.Is(err, s3err.ErrSlowDown) {
			t.Fatalf("read %d bytes, %v; want nothing and SlowDown", len(got), err)
		}
		b.Release()
		if c.held != 0 {
			t.Errorf("%d bytes still charged after Release", c.held)
		}
	})
	t.Run("abandoned midway: Release gives back", func(t *testing.T) {
		c := &testCharge{limit: 1 << 30}
		b := signedBody(bytes.NewReader(stream[:len(stream)/2]), size)
		b.ChargeTo(c)
		if _, err := io.ReadAll(b); !errors.Is(err, s3err.ErrIncompleteBody) {
			t.Fatalf("a body cut short: %v, want IncompleteBody", err)
		}
		if c.held == 0 {
			t.Fatal("the half-read chunk's buffer was not charged")
		}
		b.Release()
		b.Release()
		if c.held != 0 {
			t.Errorf("%d bytes still charged after Release", c.held)
		}
	})
}
