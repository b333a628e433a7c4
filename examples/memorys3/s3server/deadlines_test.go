package s3server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that keeps the deadlines set on its connection.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	read, write []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error { d.read = append(d.read, t); return nil }
func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.write = append(d.write, t)
	return nil
}

// TestDeadlinesAreMovedSparingly: a request's deadlines move at most once per slack (an
// eighth of the idle timeout), and each time far enough ahead that after any progress the
// connection still has at least the idle timeout, and at most an eighth more; a read
// deadline at the body's deadline stays there. Reads and writes at arbitrary times are
// checked against that invariant.
func TestDeadlinesAreMovedSparingly(t *testing.T) {
	const idle = 80 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		bodyEnd time.Time
	}{{"no body deadline", time.Time{}}, {"a body deadline", start.Add(3 * idle)}} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			d := &deadlines{rc: http.NewResponseController(rec), idle: idle, bodyEnd: tc.bodyEnd}
			var reads, writes int
			// Progress every 3 s (30 times per slack of 10 s), then a pause of a slack and more.
			for now := start; now.Before(start.Add(5 * idle)); now = now.Add(3 * time.Second) {
				if now.Sub(start)%(2*idle) > idle+idle/2 {
					continue // a pause, longer than a slack
				}
				d.read(now)
				d.write(now)
				reads++
				writes++
				for name, set := range map[string][]time.Time{"read": rec.read, "write": rec.write} {
					last := set[len(set)-1]
					if name == "read" && !tc.bodyEnd.IsZero() && last.Equal(tc.bodyEnd) {
						continue // final
					}
					if last.Before(now.Add(idle)) || last.After(now.Add(idle+idle/8)) {
						t.Fatalf("at %v the %s deadline is %v ahead, want between the idle timeout and an eighth more",
							now.Sub(start), name, last.Sub(now))
					}
				}
			}
			if len(rec.write) > writes/3 || len(rec.read) > reads/3 {
				t.Fatalf("%d reads and %d writes moved the deadlines %d and %d times", reads, writes, len(rec.read), len(rec.write))
			}
			if !tc.bodyEnd.IsZero() && !rec.read[len(rec.read)-1].Equal(tc.bodyEnd) {
				t.Fatalf("past the body deadline the read deadline is %v, want the body deadline %v", rec.read[len(rec.read)-1], tc.bodyEnd)
			}
		})
	}
}
