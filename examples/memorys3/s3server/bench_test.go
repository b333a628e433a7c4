package s3server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// benchTarget is one server under benchmark: ours (SigV4 + authorisation + gofakes3) or
// gofakes3 alone, each with its backend so GET objects can be seeded without a client.
type benchTarget struct {
	name    string
	url     string
	backend gofakes3.Backend
	creds   Credentials
	forms   *formRecorder
}

// formRecorder notes the x-amz-content-sha256 forms of PUTs, to prove each benchmark sends
// the form its name says.
type formRecorder struct {
	mu    sync.Mutex
	forms map[string]int
}

func (r *formRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPut {
			form := req.Header.Get("X-Amz-Content-Sha256")
			if len(form) == 64 {
				form = "hex"
			}
			r.mu.Lock()
			r.forms[form]++
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	})
}

func (r *formRecorder) reset() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.forms
	r.forms = map[string]int{}
	return old
}

const benchBucket = "bench"

// ourTarget is a Server with a bucket and a key.
func ourTarget(b *testing.B, name string) *benchTarget {
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
	t := &benchTarget{name: name, backend: srv.backend, creds: acc.Credentials, forms: &formRecorder{forms: map[string]int{}}}
	hs := httptest.NewServer(t.forms.wrap(srv))
	b.Cleanup(hs.Close)
	t.url = hs.URL
	return t
}

// benchTargets are gofakes3 alone (first: the baseline) and gofakes3 behind the layer.
func benchTargets(b *testing.B) []*benchTarget {
	b.Helper()
	ours := ourTarget(b, "sigv4+authz")

	mem := s3mem.New()
	if err := mem.CreateBucket(benchBucket); err != nil {
		b.Fatal(err)
	}
	alone := &benchTarget{name: "gofakes3", backend: mem, creds: ours.creds, forms: &formRecorder{forms: map[string]int{}}}
	hs2 := httptest.NewServer(alone.forms.wrap(gofakes3.New(mem).Server()))
	b.Cleanup(hs2.Close)
	alone.url = hs2.URL
	return []*benchTarget{alone, ours}
}

// benchAWS is aws-sdk-go-v2 with the default checksum settings over plain HTTP, where it
// signs the hex SHA-256 of each body (and sends a CRC32 header).
func benchAWS(t *benchTarget) *s3.Client {
	return s3.New(s3.Options{
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenSupported,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenSupported,
		Region:                     DefaultRegion,
		BaseEndpoint:               aws.String(t.url),
		UsePathStyle:               true,
		Retryer:                    aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: t.creds.AccessKeyID, SecretAccessKey: t.creds.SecretAccessKey}, nil
		}),
	})
}

var benchSizes = []struct {
	name string
	n    int
}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}}

// request is one measured S3 call against a target.
type request func(b *testing.B, t *benchTarget)

// BenchmarkS3 compares the same client against gofakes3 alone and against gofakes3 behind the
// SigV4 and authorisation layer. Each iteration sends one request to each target, in
// alternating order, and times them apart: both see the same machine load, which on a shared
// machine varies more from second to second than the difference being measured. It reports
// the median latency per target, the added latency of each median over gofakes3's
// (%added-<target>), and the median of the per-iteration differences over gofakes3's median
// (%paired-<target>), which cancels load that changes between iterations. For signed payloads
// it also reports what the SHA-256 of the body alone costs, timed in the same iterations, over
// gofakes3's median (%sha256-floor): the part of the added latency no verifying server avoids.
//
//	go test -run '^$' -bench BenchmarkS3 -benchtime 300x -count 5 ./examples/memorys3/s3server
func BenchmarkS3(b *testing.B) {
	targets := benchTargets(b)
	ctx := context.Background()
	for _, sz := range benchSizes {
		body := bytes.Repeat([]byte("0123456789abcdef"), sz.n/16)
		forms := []struct {
			name string
			form string // the x-amz-content-sha256 every PUT must carry; "" for GET
			prep func(t *benchTarget) request
		}{
			{"PUT-signed", "hex", func(t *benchTarget) request {
				c := benchAWS(t)
				return func(b *testing.B, t *benchTarget) {
					if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(benchBucket), Key: aws.String("put"), Body: bytes.NewReader(body)}); err != nil {
						b.Fatal(err)
					}
				}
			}},
			{"PUT-unsigned", "UNSIGNED-PAYLOAD", func(t *benchTarget) request {
				return minioPut(b, t, body, minio.PutObjectOptions{DisableContentSha256: true})
			}},
			{"PUT-aws-chunked", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", func(t *benchTarget) request {
				return minioPut(b, t, body, minio.PutObjectOptions{})
			}},
			{"GET", "", func(t *benchTarget) request {
				// Seeded through the backend: the same object, without the checksum metadata
				// gofakes3 alone would keep from a client PUT and the client would then verify.
				if _, err := t.backend.PutObject(benchBucket, "get", map[string]string{"Content-Type": "application/octet-stream"},
					bytes.NewReader(body), int64(len(body)), nil); err != nil {
					b.Fatal(err)
				}
				c := benchAWS(t)
				return func(b *testing.B, t *benchTarget) {
					out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(benchBucket), Key: aws.String("get")})
					if err != nil {
						b.Fatal(err)
					}
					n, _ := io.Copy(io.Discard, out.Body)
					out.Body.Close()
					if n != int64(len(body)) {
						b.Fatalf("GET read %d bytes", n)
					}
				}
			}},
		}
		for _, fm := range forms {
			b.Run(fm.name+"/"+sz.name, func(b *testing.B) {
				reqs := make([]request, len(targets))
				lat := make([][]time.Duration, len(targets))
				for i, t := range targets {
					reqs[i] = fm.prep(t)
					reqs[i](b, t) // warm up connections and caches
					t.forms.reset()
					lat[i] = make([]time.Duration, 0, b.N)
				}
				// floor is the SHA-256 of the body alone, timed in the same iterations: the
				// least a server that verifies a signed payload must add.
				var floor []time.Duration
				if fm.form == "hex" {
					floor = make([]time.Duration, 0, b.N)
				}
				b.SetBytes(int64(sz.n) * int64(len(targets)))
				b.ResetTimer()
				for n := 0; n < b.N; n++ {
					for k := range targets {
						i := (k + n) % len(targets) // alternate who goes first
						start := time.Now()
						reqs[i](b, targets[i])
						lat[i] = append(lat[i], time.Since(start))
					}
					if floor != nil {
						start := time.Now()
						sha256.Sum256(body)
						floor = append(floor, time.Since(start))
					}
				}
				b.StopTimer()
				for i, t := range targets {
					if got := t.forms.reset(); fm.form != "" && got[fm.form] != b.N {
						b.Fatalf("%s: PUT forms %v, want %d of %s", t.name, got, b.N, fm.form)
					}
					b.ReportMetric(float64(median(lat[i]).Microseconds()), "µs/"+t.name)
				}
				base := float64(median(lat[0]))
				if floor != nil {
					b.ReportMetric(100*float64(median(floor))/base, "%sha256-floor")
				}
				for i, t := range targets[1:] {
					b.ReportMetric(100*(float64(median(lat[i+1]))-base)/base, "%added-"+t.name)
					// The pairs of one iteration ran back to back, under the same load: the
					// median of their differences shrugs off load that changes between pairs.
					diff := make([]time.Duration, len(lat[0]))
					for n := range diff {
						diff[n] = lat[i+1][n] - lat[0][n]
					}
					b.ReportMetric(100*float64(median(diff))/base, "%paired-"+t.name)
				}
			})
		}
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// minioPut prepares minio-go PUTs: over plain HTTP it streams aws-chunked with every chunk
// signed by default, and sends UNSIGNED-PAYLOAD with DisableContentSha256. (aws-sdk-go-v2
// cannot be made to send UNSIGNED-PAYLOAD over plain HTTP with its default checksums: its
// checksum step computes and signs the SHA-256 itself.)
func minioPut(b *testing.B, t *benchTarget, body []byte, opts minio.PutObjectOptions) request {
	mc, err := minio.New(strings.TrimPrefix(t.url, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(t.creds.AccessKeyID, t.creds.SecretAccessKey, ""), Region: DefaultRegion,
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	return func(b *testing.B, t *benchTarget) {
		if _, err := mc.PutObject(context.Background(), benchBucket, "minio", bytes.NewReader(body), int64(len(body)), opts); err != nil {
			b.Fatal(err)
		}
	}
}
