package pagetoken

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// cursors returns test cursors of every length from 0 to 300 bytes in three
// flavours: ASCII, arbitrary binary, and UTF-8 with multi-byte runes.
func cursors() []string {
	rng := rand.New(rand.NewPCG(1, 2))
	var out []string
	for n := 0; n <= 300; n++ {
		ascii := make([]byte, n)
		bin := make([]byte, n)
		for i := range n {
			ascii[i] = byte('a' + rng.IntN(26))
			bin[i] = byte(rng.UintN(256))
		}
		var u strings.Builder
		for u.Len() < n {
			r := []rune{'é', '日', '🙂', 'x'}[rng.IntN(4)]
			if u.Len()+utf8.RuneLen(r) > n {
				r = 'x'
			}
			u.WriteRune(r)
		}
		out = append(out, string(ascii), string(bin), u.String())
	}
	return out
}

func checkTokenShape(t *testing.T, token string) {
	t.Helper()
	if token == "" {
		t.Fatal("empty token")
	}
	if len(token) > MaxTokenLen {
		t.Fatalf("token of %d bytes exceeds %d", len(token), MaxTokenLen)
	}
	if _, err := base64.RawURLEncoding.DecodeString(token); err != nil || strings.ContainsAny(token, "=+/") {
		t.Fatalf("token %q is not unpadded URL-safe base64", token)
	}
}

func TestRoundTrip(t *testing.T) {
	c := New(testKey)
	scopes := []string{"", "vol-1", "snap-9"}
	for i, cur := range cursors() {
		scope := scopes[i%len(scopes)]
		token, err := c.Encode("ListSnapshots", scope, cur)
		if err != nil {
			t.Fatalf("Encode(%d bytes): %v", len(cur), err)
		}
		checkTokenShape(t, token)
		got, err := c.Decode(token, "ListSnapshots", scope)
		if err != nil {
			t.Fatalf("Decode(%d-byte cursor): %v", len(cur), err)
		}
		if got != cur {
			t.Fatalf("round trip of %d bytes: got %q, want %q", len(cur), got, cur)
		}
	}
}

func TestInlineOrOverflow(t *testing.T) {
	tests := []struct {
		cursorLen int
		version   byte
		stored    int
	}{
		{0, versionInline, 0},
		{MaxInlineCursor, versionInline, 0},
		{MaxInlineCursor + 1, versionHandle, 1},
		{MaxCursorLen, versionHandle, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.cursorLen), func(t *testing.T) {
			c := New(testKey)
			token, err := c.Encode("ListVolumes", "", strings.Repeat("k", tt.cursorLen))
			if err != nil {
				t.Fatal(err)
			}
			checkTokenShape(t, token)
			raw, _ := base64.RawURLEncoding.DecodeString(token)
			if raw[0] != tt.version {
				t.Errorf("version byte %d, want %d", raw[0], tt.version)
			}
			if n := c.store.len(); n != tt.stored {
				t.Errorf("overflow store holds %d, want %d", n, tt.stored)
			}
		})
	}
}

func TestEncodeRejectsHugeCursor(t *testing.T) {
	c := New(testKey)
	_, err := c.Encode("ListVolumes", "", strings.Repeat("x", MaxCursorLen+1))
	if err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want a cursor-length error", err)
	}
	if n := c.store.len(); n != 0 {
		t.Errorf("a refused cursor was stored")
	}
}

func TestDecodeRejects(t *testing.T) {
	c := New(testKey)
	other := New([]byte("another key, another plugin....."))
	random1, random2 := New(nil), New(nil)
	short := "vol-0042"
	long := strings.Repeat("L", 100)
	mint := func(c *Codec, listing, scope, cur string) string {
		tok, err := c.Encode(listing, scope, cur)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, cur := range []string{short, long, ""} {
		tok := mint(c, "ListSnapshots", "vol-1", cur)
		tests := []struct {
			name           string
			codec          *Codec
			token          string
			listing, scope string
		}{
			{"other listing", c, tok, "ListVolumes", "vol-1"},
			{"other scope", c, tok, "ListSnapshots", "vol-2"},
			{"no scope", c, tok, "ListSnapshots", ""},
			{"listing and scope shifted", c, mint(c, "ListSnapshot", "svol-1", cur), "ListSnapshots", "vol-1"},
			{"other key", other, tok, "ListSnapshots", "vol-1"},
			{"from another codec", c, mint(other, "ListSnapshots", "vol-1", cur), "ListSnapshots", "vol-1"},
			{"random keys differ", random1, mint(random2, "ListSnapshots", "vol-1", cur), "ListSnapshots", "vol-1"},
			{"empty", c, "", "ListSnapshots", "vol-1"},
			{"too long", c, tok + strings.Repeat("A", MaxTokenLen), "ListSnapshots", "vol-1"},
			{"padding", c, tok + "=", "ListSnapshots", "vol-1"},
			{"newline inside", c, tok[:5] + "\n" + tok[5:], "ListSnapshots", "vol-1"},
			{"carriage return at end", c, tok + "\r", "ListSnapshots", "vol-1"},
			{"std alphabet", c, strings.NewReplacer("-", "+", "_", "/").Replace(tok) + "+", "ListSnapshots", "vol-1"},
			{"garbage", c, "not a token at all!", "ListSnapshots", "vol-1"},
			{"plain cursor", c, short, "ListSnapshots", "vol-1"},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/cursor=%d", tt.name, len(cur)), func(t *testing.T) {
				got, err := tt.codec.Decode(tt.token, tt.listing, tt.scope)
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Decode = %q, %v; want ErrInvalid", got, err)
				}
				if got != "" {
					t.Errorf("cursor %q returned with an error", got)
				}
			})
		}
	}
}

func TestSameKeyReplicas(t *testing.T) {
	a, b := New(testKey), New(testKey)
	tok, err := a.Encode("ListVolumes", "", "vol-7")
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := b.Decode(tok, "ListVolumes", ""); err != nil || cur != "vol-7" {
		t.Errorf("replica with the same key: %q, %v", cur, err)
	}
	// Long cursors live in one process; the replica refuses them cleanly.
	tok, err = a.Encode("ListVolumes", "", strings.Repeat("v", 200))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Decode(tok, "ListVolumes", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("replica accepted another process's overflow handle: %v", err)
	}
}

func TestKeyIsCopied(t *testing.T) {
	key := append([]byte(nil), testKey...)
	c := New(key)
	tok, _ := c.Encode("ListVolumes", "", "v")
	key[0] ^= 1
	if _, err := c.Decode(tok, "ListVolumes", ""); err != nil {
		t.Fatalf("changing the caller's key slice changed the codec: %v", err)
	}
}

// TestTamper flips every bit of every raw byte (re-encoded, so the base64 is
// valid) and replaces every character by every other base64 character, and
// truncates at every length. None of it may decode.
func TestTamper(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	c := New(testKey)
	for _, cur := range []string{"", "vol-1", strings.Repeat("m", MaxInlineCursor), strings.Repeat("o", 150)} {
		tok, err := c.Encode("ListVolumes", "", cur)
		if err != nil {
			t.Fatal(err)
		}
		reject := func(what, bad string) {
			t.Helper()
			if got, err := c.Decode(bad, "ListVolumes", ""); !errors.Is(err, ErrInvalid) {
				t.Fatalf("cursor len %d, %s: Decode(%q) = %q, %v; want ErrInvalid", len(cur), what, bad, got, err)
			}
		}
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		for i := range raw {
			for bit := range 8 {
				mod := bytes.Clone(raw)
				mod[i] ^= 1 << bit
				reject(fmt.Sprintf("byte %d bit %d", i, bit), base64.RawURLEncoding.EncodeToString(mod))
			}
		}
		for i := range len(tok) {
			for _, r := range alphabet {
				if byte(r) == tok[i] {
					continue
				}
				reject(fmt.Sprintf("char %d", i), tok[:i]+string(r)+tok[i+1:])
			}
		}
		for n := range len(tok) {
			reject(fmt.Sprintf("truncated to %d", n), tok[:n])
		}
		reject("raw byte dropped", base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]))
		reject("raw byte added", base64.RawURLEncoding.EncodeToString(append(bytes.Clone(raw), 0)))
		if got, err := c.Decode(tok, "ListVolumes", ""); err != nil || got != cur {
			t.Fatalf("the untouched token no longer decodes: %q, %v", got, err)
		}
	}
}

func TestOverflowEviction(t *testing.T) {
	c := New(testKey)
	long := func(i int) string { return fmt.Sprintf("%0100d", i) }
	tokens := make([]string, OverflowEntries+1)
	for i := range tokens {
		tok, err := c.Encode("ListVolumes", "", long(i))
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = tok
	}
	if n := c.store.len(); n != OverflowEntries {
		t.Fatalf("store holds %d, want %d", n, OverflowEntries)
	}
	if _, err := c.Decode(tokens[0], "ListVolumes", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("evicted token: err = %v, want ErrInvalid", err)
	}
	for _, i := range []int{1, OverflowEntries / 2, OverflowEntries} {
		if got, err := c.Decode(tokens[i], "ListVolumes", ""); err != nil || got != long(i) {
			t.Errorf("token %d: %q, %v", i, got, err)
		}
	}
	// Decoding does not consume: a CO may retry the same page.
	if _, err := c.Decode(tokens[OverflowEntries], "ListVolumes", ""); err != nil {
		t.Errorf("second decode: %v", err)
	}
}

func TestOverflowExpiry(t *testing.T) {
	c := New(testKey)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	c.store.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	cur := strings.Repeat("e", 120)
	old, _ := c.Encode("ListVolumes", "", cur)
	advance(OverflowTTL - time.Second)
	young, _ := c.Encode("ListVolumes", "", cur+"2")
	if got, err := c.Decode(old, "ListVolumes", ""); err != nil || got != cur {
		t.Fatalf("before expiry: %q, %v", got, err)
	}
	advance(time.Second)
	if _, err := c.Decode(old, "ListVolumes", ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("expired token: err = %v, want ErrInvalid", err)
	}
	if got, err := c.Decode(young, "ListVolumes", ""); err != nil || got != cur+"2" {
		t.Errorf("unexpired token: %q, %v", got, err)
	}
	// The next Encode sweeps the expired entry out of memory.
	if _, err := c.Encode("ListVolumes", "", cur+"3"); err != nil {
		t.Fatal(err)
	}
	if n := c.store.len(); n != 2 {
		t.Errorf("store holds %d after the sweep, want 2", n)
	}
	// Inline tokens do not expire.
	inline, _ := c.Encode("ListVolumes", "", "short")
	advance(100 * OverflowTTL)
	if got, err := c.Decode(inline, "ListVolumes", ""); err != nil || got != "short" {
		t.Errorf("inline token after a long time: %q, %v", got, err)
	}
}

func TestConcurrent(t *testing.T) {
	c := New(nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				cur := fmt.Sprintf("g%d-%d-%s", g, i, strings.Repeat("z", i%150))
				scope := fmt.Sprint(g)
				tok, err := c.Encode("ListVolumes", scope, cur)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := c.Decode(tok, "ListVolumes", scope)
				if err != nil || got != cur {
					t.Errorf("Decode: %q, %v; want %q", got, err, cur)
					return
				}
				if _, err := c.Decode(tok, "ListSnapshots", scope); !errors.Is(err, ErrInvalid) {
					t.Errorf("wrong listing accepted: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// fuzzCodec and minted are shared by all inputs of one fuzzing process, so
// that "minted" means minted by this codec in this run.
var (
	fuzzOnce   sync.Once
	fuzzCodec  *Codec
	mintedMu   sync.Mutex
	minted     = map[string]mintedToken{}
	seedTokens []string
)

type mintedToken struct{ listing, scope, cursor string }

func fuzzSetup(t testing.TB) {
	fuzzOnce.Do(func() {
		fuzzCodec = New(testKey)
		for _, m := range []mintedToken{
			{"ListVolumes", "", ""},
			{"ListVolumes", "", "vol-1"},
			{"ListSnapshots", "vol-1", "snap-1"},
			{"ListSnapshots", "", strings.Repeat("s", MaxInlineCursor)},
			{"ListVolumes", "", strings.Repeat("l", 200)},
			{"ListVolumeGroups", "", "\x00\xff日本"},
		} {
			tok, err := fuzzCodec.Encode(m.listing, m.scope, m.cursor)
			if err != nil {
				t.Fatal(err)
			}
			minted[tok] = m
			seedTokens = append(seedTokens, tok)
		}
	})
}

func FuzzDecode(f *testing.F) {
	fuzzSetup(f)
	for _, tok := range seedTokens {
		m := minted[tok]
		f.Add(tok, m.listing, m.scope)
		f.Add(tok, "ListVolumes", "vol-1")
		f.Add(tok[:len(tok)-1], m.listing, m.scope)
		f.Add(tok+"A", m.listing, m.scope)
	}
	f.Add("", "ListVolumes", "")
	f.Add("AQ", "ListVolumes", "")
	f.Add(strings.Repeat("_", 200), "ListVolumes", "")
	f.Fuzz(func(t *testing.T, token, listing, scope string) {
		fuzzSetup(t)
		cur, err := fuzzCodec.Decode(token, listing, scope)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if cur != "" {
				t.Fatalf("cursor %q returned with an error", cur)
			}
			return
		}
		mintedMu.Lock()
		m, ok := minted[token]
		mintedMu.Unlock()
		if !ok || m.listing != listing || m.scope != scope || m.cursor != cur {
			t.Fatalf("accepted a token it did not mint for (%q, %q): %q -> %q", listing, scope, token, cur)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("ListVolumes", "", "")
	f.Add("ListVolumes", "", "vol-1")
	f.Add("ListSnapshots", "vol-1", strings.Repeat("x", 79))
	f.Add("ListSnapshots", "", strings.Repeat("y", 80))
	f.Add("", "", "\x00\xff\xfe")
	f.Add("ListVolumes", "a", strings.Repeat("日", 100))
	c := New(testKey)
	f.Fuzz(func(t *testing.T, listing, scope, cursor string) {
		token, err := c.Encode(listing, scope, cursor)
		if len(cursor) > MaxCursorLen {
			if err == nil {
				t.Fatalf("accepted a %d-byte cursor", len(cursor))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if token == "" || len(token) > MaxTokenLen {
			t.Fatalf("token of %d bytes", len(token))
		}
		got, err := c.Decode(token, listing, scope)
		if err != nil || got != cursor {
			t.Fatalf("Decode = %q, %v; want %q", got, err, cursor)
		}
		if _, err := c.Decode(token, listing+"x", scope); !errors.Is(err, ErrInvalid) {
			t.Fatalf("accepted for another listing: %v", err)
		}
		if _, err := c.Decode(token, listing, scope+"x"); !errors.Is(err, ErrInvalid) {
			t.Fatalf("accepted for another scope: %v", err)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{36, 120} {
		b.Run(fmt.Sprintf("cursor=%d", n), func(b *testing.B) {
			c := New(testKey)
			cur := strings.Repeat("c", n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Encode("ListVolumes", "", cur); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{36, 120} {
		b.Run(fmt.Sprintf("cursor=%d", n), func(b *testing.B) {
			c := New(testKey)
			tok, err := c.Encode("ListVolumes", "", strings.Repeat("c", n))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Decode(tok, "ListVolumes", ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeForged(b *testing.B) {
	c := New(testKey)
	tok, _ := New(nil).Encode("ListVolumes", "", strings.Repeat("c", 36))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(tok, "ListVolumes", ""); err == nil {
			b.Fatal("accepted")
		}
	}
}
