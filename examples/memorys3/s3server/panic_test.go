package s3server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// panickyBackend panics in GetObject with value, as a bug in a store might with whatever it
// had at hand.
type panickyBackend struct {
	gofakes3.Backend
	value any
}

func (b *panickyBackend) GetObject(string, string, *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	panic(b.value)
}

func (b *panickyBackend) PutObject(string, string, map[string]string, io.Reader, int64, *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	panic(b.value)
}

// runtimeError is the value of a runtime panic.
func runtimeError() (v any) {
	defer func() { v = recover() }()
	s := []int{1}
	i := 5
	_ = s[i]
	return nil
}

// TestPanicsAnswerInternalError: a panic in the store is answered 500 InternalError, closing
// the connection, and logged as one JSON line that names the request and what the runtime
// said (or the panic's type), never the panic's value, which may hold anything.
func TestPanicsAnswerInternalError(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		value func(secret string) any
		want  string
	}{
		{"a panic with a value", func(secret string) any { return "leaked " + secret }, `"panic":"string"`},
		{"a runtime error", func(string) any { return runtimeError() }, `"panic":"runtime error: index out of range [5] with length 1"`},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			var logs bytes.Buffer
			logger := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&logs), zap.DebugLevel))
			pb := &panickyBackend{}
			f := newFixture(t, false, Config{Logger: logger, instrument: func(b gofakes3.Backend) gofakes3.Backend {
				pb.Backend = b
				return pb
			}})
			c := f.bucketWithAccount("bkt", "r", ReadOnly)
			if _, err := f.srv.backend.PutObject("bkt", "k", map[string]string{}, strings.NewReader("v"), 1, nil); err != nil {
				t.Fatal(err)
			}
			secret := c.SecretAccessKey
			pb.value = tc.value(secret)
			resp, err := http.DefaultClient.Do(signedRequest(t, f, c, http.MethodGet, "/bkt/k", nil, "", time.Now(), nil))
			if err != nil {
				t.Fatal(err)
			}
			if code := codeOf(t, resp); resp.StatusCode != http.StatusInternalServerError || code != "InternalError" || !resp.Close {
				t.Fatalf("got %d %s (Connection: close %v), want 500 InternalError closing the connection", resp.StatusCode, code, resp.Close)
			}
			resp.Body.Close()
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if strings.Contains(l, "panicked") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !json.Valid([]byte(lines[0])) || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("log lines about the panic: %q, want one JSON line with %s", lines, tc.want)
			}
			if strings.Contains(logs.String(), secret) {
				t.Fatal("the log holds the key's secret")
			}
		})
	}
}

// FuzzRange: no Range header makes the server fail (a panic is answered 500); the seeds are
// the forms gofakes3 parses, at the edges of int64.
func FuzzRange(f *testing.F) {
	for _, s := range []string{"bytes=1-9223372036854775807", "bytes=0-9223372036854775806", "bytes=-9223372036854775807",
		"bytes=--9223372036854775808", "bytes=9223372036854775807-", "bytes=4611686018427387904-9223372036854775807",
		"bytes=0-0", "bytes=5-", "bytes=-3", "bytes=3-1", "bytes=1-2,3-4", "bytes= 1 - 9223372036854775807 ", "items=0-1", ""} {
		f.Add(s, true)
		f.Add(s, false)
	}
	pf := newProbeFixture(f, Config{})
	f.Fuzz(func(t *testing.T, rng string, head bool) {
		if strings.ContainsAny(rng, "\r\n\x00") {
			return // not a header value an HTTP server would pass on
		}
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		rec := pf.serve(pf.signed(t, "ro", method, "/bkt/k", "", http.Header{"Range": {rng}}, nil))
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s with Range %q: %d %s", method, rng, rec.Code, rec.Body.String())
		}
	})
}

// TestAPanicInACommitReleasesTheCommitLock: a panic while the store commits (a PUT) leaves
// the commit lock free, so the Go API can still change grants.
func TestAPanicInACommitReleasesTheCommitLock(t *testing.T) {
	pb := &panickyBackend{value: "store bug"}
	srv, err := New(Config{instrument: func(b gofakes3.Backend) gofakes3.Backend {
		pb.Backend = b
		return pb
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	f := &fixture{t: t, srv: srv, hs: hs, forms: map[string]int{}}
	c := f.bucketWithAccount("bkt", "w", WriteOnly)
	resp := do(t, signedRequest(t, f, c, http.MethodPut, "/bkt/k", []byte("v"), "", time.Now(), nil))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("PUT into a panicking store: %d %s", resp.StatusCode, resp.body)
	}
	done := make(chan error, 1)
	go func() { done <- srv.RevokeAccess(context.Background(), AccountID("w")) }()
	select {
	case err := <-done:
		hs.Close()
		_ = srv.Close()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		// The server is left as it is: closing it would wait for the stuck revoke.
		t.Fatal("RevokeAccess did not return: the commit lock is still held")
	}
}
