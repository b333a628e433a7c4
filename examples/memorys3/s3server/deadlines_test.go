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

// TestDeadlinesAreMovedSparingly: without a body, a request's deadlines move at most once per
// slack (an eighth of the idle timeout), and each time far enough ahead that after any
// progress the connection still has at least the idle timeout, and at most an eighth more.
// Reads and writes at arbitrary times are checked against that invariant.
func TestDeadlinesAreMovedSparingly(t *testing.T) {
	const idle = 80 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	d := &deadlines{rc: http.NewResponseController(rec), idle: idle}
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
			if last.Before(now.Add(idle)) || last.After(now.Add(idle+idle/8)) {
				t.Fatalf("at %v the %s deadline is %v ahead, want between the idle timeout and an eighth more",
					now.Sub(start), name, last.Sub(now))
			}
		}
	}
	if len(rec.write) > writes/3 || len(rec.read) > reads/3 {
		t.Fatalf("%d reads and %d writes moved the deadlines %d and %d times", reads, writes, len(rec.read), len(rec.write))
	}
}

// TestABodyIsHeldToItsRateAfterItsGrace drives a body's read deadline through paced reads (a
// read every second, each bringing the bytes of its phase) and finds when the connection
// would be cut: when the deadline set before a read falls before the next bytes come. A body
// above the rate is never cut and moves the deadline at most once per slack; a body that
// trickles from the start is cut an interval after its grace, at most a slack later; one that
// slows down after its grace is cut within an interval and a slack of slowing down, however
// much it sent before.
func TestABodyIsHeldToItsRateAfterItsGrace(t *testing.T) {
	const (
		idle     = 80 * time.Second
		interval = 20 * time.Second
		quota    = 1000 // bytes an interval: 50 a second
		pace     = time.Second
		slack    = interval / 8
	)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := start.Add(idle)
	for _, tc := range []struct {
		rule string
		// perRead is what the read at t brings.
		perRead func(t time.Time) int64
		// cutFrom and cutBy bound when the connection is cut; zero: never within the run.
		cutFrom, cutBy time.Time
	}{
		{"a body at four times the rate is never cut", func(time.Time) int64 { return 200 }, time.Time{}, time.Time{}},
		{"a body that trickles from its start is cut an interval after its grace", func(time.Time) int64 { return 1 },
			grace.Add(interval), grace.Add(interval + slack)},
		{"a body that slows down after its grace is cut within an interval of it", func(t time.Time) int64 {
			if t.Before(grace.Add(3 * interval)) {
				return 10_000 // far above the rate: no credit for later
			}
			return 1
		}, grace.Add(3 * interval), grace.Add(4*interval + slack)},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			d := &deadlines{rc: http.NewResponseController(rec), idle: idle, interval: interval, quota: quota}
			var got int64
			reads := 0
			var cut time.Time
			for now := start; now.Before(grace.Add(10 * interval)); now = now.Add(pace) {
				d.bodyRead(now, got)
				reads++
				if dl := rec.read[len(rec.read)-1]; dl.Before(now.Add(pace)) {
					cut = dl
					break
				}
				got += tc.perRead(now)
			}
			switch {
			case tc.cutFrom.IsZero() && !cut.IsZero():
				t.Fatalf("cut %v after its start", cut.Sub(start))
			case tc.cutFrom.IsZero():
				if len(rec.read) > reads/3 {
					t.Fatalf("%d reads moved the read deadline %d times", reads, len(rec.read))
				}
			case cut.IsZero():
				t.Fatalf("never cut in %v", 10*interval+idle)
			case cut.Before(tc.cutFrom) || cut.After(tc.cutBy):
				t.Fatalf("cut %v after its start, want from %v to %v", cut.Sub(start), tc.cutFrom.Sub(start), tc.cutBy.Sub(start))
			}
		})
	}
}
