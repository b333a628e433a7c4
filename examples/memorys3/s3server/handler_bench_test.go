package s3server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/minio/minio-go/v7"
)

// capturedRequest is a request exactly as a client sent it: replayed to a handler without a
// network, it measures the server side alone.
type capturedRequest struct {
	method, host, requestURI string
	header                   http.Header
	body                     []byte
}

// captureRequests serves ours and keeps the PUT and GET requests it sees.
type captureRequests struct {
	h    http.Handler
	mu   sync.Mutex
	reqs []capturedRequest
}

func (c *captureRequests) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.reqs = append(c.reqs, capturedRequest{method: r.Method, host: r.Host, requestURI: r.RequestURI, header: r.Header.Clone(), body: body})
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	c.h.ServeHTTP(w, r)
}

func (c *captureRequests) last(b *testing.B) capturedRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.reqs) == 0 {
		b.Fatal("no request captured")
	}
	return c.reqs[len(c.reqs)-1]
}

// replay builds a fresh request from cr; the header map is cloned because the layer strips
// signing headers from it.
func (cr capturedRequest) replay(b *testing.B, u *url.URL) *http.Request {
	return &http.Request{
		Method: cr.method, URL: u, Host: cr.host, RequestURI: cr.requestURI,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: cr.header.Clone(), Body: io.NopCloser(bytes.NewReader(cr.body)),
		ContentLength: int64(len(cr.body)), RemoteAddr: "127.0.0.1:1",
	}
}

// discardWriter is a ResponseWriter that keeps nothing but the status, so the replay measures
// the handlers, not a recorder's buffering.
type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// SetReadDeadline and SetWriteDeadline accept the deadlines the layer sets as a connection
// does: without them http.ResponseController answers each with a new error, which costs the
// replay allocations a served request does not make.
func (d *discardWriter) SetReadDeadline(time.Time) error  { return nil }
func (d *discardWriter) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkHandler replays one request captured from a real client to each handler directly,
// without HTTP or a client, to measure what the SigV4 and authorisation layer adds on the
// server per request, in time and allocations (run with -benchmem; compare the sub-benchmarks
// gofakes3 and sigv4+authz, and profile the latter with -cpuprofile / -memprofile):
//
//	go test -run '^$' -bench BenchmarkHandler -benchmem ./examples/memorys3/s3server
func BenchmarkHandler(b *testing.B) {
	srv, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, benchBucket); err != nil {
		b.Fatal(err)
	}
	acc, err := srv.GrantAccess(ctx, "bench", map[string]Mode{benchBucket: ReadWrite})
	if err != nil {
		b.Fatal(err)
	}
	capture := &captureRequests{h: srv}
	hs := httptest.NewServer(capture)
	b.Cleanup(hs.Close)
	target := &benchTarget{url: hs.URL, creds: acc.Credentials, backend: srv.backend}

	alone := func() http.Handler {
		return gofakes3.New(srv.backend, gofakes3.WithTimeSkewLimit(0)).Server()
	}
	for _, sz := range benchSizes {
		body := bytes.Repeat([]byte("0123456789abcdef"), sz.n/16)
		clients := []struct {
			name string
			send func(b *testing.B)
		}{
			{"PUT-signed", func(b *testing.B) {
				c := benchAWS(target)
				if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(benchBucket), Key: aws.String("put"), Body: bytes.NewReader(body)}); err != nil {
					b.Fatal(err)
				}
			}},
			{"PUT-unsigned", func(b *testing.B) {
				minioPut(b, target, body, minio.PutObjectOptions{DisableContentSha256: true})(b, target)
			}},
			{"PUT-aws-chunked", func(b *testing.B) { minioPut(b, target, body, minio.PutObjectOptions{})(b, target) }},
			{"GET", func(b *testing.B) {
				c := benchAWS(target)
				out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(benchBucket), Key: aws.String("put")})
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, out.Body)
				out.Body.Close()
			}},
		}
		for _, cl := range clients {
			cl.send(b)
			cr := capture.last(b)
			u, err := url.ParseRequestURI(cr.requestURI)
			if err != nil {
				b.Fatal(err)
			}
			for _, h := range []struct {
				name string
				h    http.Handler
			}{{"gofakes3", alone()}, {"sigv4+authz", srv}} {
				b.Run(cl.name+"/"+sz.name+"/"+h.name, func(b *testing.B) {
					w := &discardWriter{h: http.Header{}}
					b.ReportAllocs()
					b.SetBytes(int64(len(cr.body)))
					for b.Loop() {
						clear(w.h)
						w.code = 0
						h.h.ServeHTTP(w, cr.replay(b, u))
						if w.code != 0 && w.code != http.StatusOK {
							b.Fatalf("status %d", w.code)
						}
					}
				})
			}
		}
	}
}
