package sigv4

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// TestHexBody checks the streaming payload hash of small and large bodies.
func TestHexBody(t *testing.T) {
	for _, size := range []int{1000, 3 << 20} {
		data := bytes.Repeat([]byte("q"), size)
		sum := sha256.Sum256(data)
		cases := []struct {
			rule string
			body []byte
			want error
		}{
			{"the signed body passes", data, nil},
			{"a changed body fails at its end", append(bytes.Clone(data[:size-1]), 'r'), s3err.ErrContentSHA256Mismatch},
			{"a body changed at its start fails at its end", append([]byte("r"), data[1:]...), s3err.ErrContentSHA256Mismatch},
			{"a shorter body fails at its end", data[:size-1], s3err.ErrContentSHA256Mismatch},
			{"a longer body fails at its end", append(bytes.Clone(data), 'q'), s3err.ErrContentSHA256Mismatch},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d bytes", tc.rule, size), func(t *testing.T) {
				b := newHexBody(io.NopCloser(bytes.NewReader(tc.body)), sum, nil)
				got, err := io.ReadAll(b)
				if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Fatalf("ReadAll = %d bytes, %v; want %v", len(got), err, tc.want)
				}
				if !errors.Is(b.Err(), tc.want) && tc.want != nil {
					t.Errorf("Err() = %v", b.Err())
				}
				if _, again := b.Read(make([]byte, 1)); tc.want != nil && !errors.Is(again, tc.want) {
					t.Errorf("the error is not sticky: %v", again)
				}
				if err := b.Close(); err != nil {
					t.Error(err)
				}
			})
		}
	}
}
