package s3server

import (
	"fmt"
	"math"
	"testing"
)

// TestRequestIDString: request IDs print as S3 clients have always seen them, 16 upper-case
// hex digits, without fmt on the request path.
func TestRequestIDString(t *testing.T) {
	for _, id := range []uint64{0, 1, 0xABC, 1 << 40, math.MaxUint64} {
		if got, want := requestID(id).String(), fmt.Sprintf("%016X", id); got != want {
			t.Errorf("requestID(%d) = %q, want %q", id, got, want)
		}
	}
}
