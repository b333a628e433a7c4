package flushprobe

import "testing"

func TestProbeTimesAFlush(t *testing.T) {
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 3 {
		d, err := p.Once()
		if err != nil {
			t.Fatal(err)
		}
		if d <= 0 {
			t.Fatalf("flush %d took %v, want a positive duration", i, d)
		}
	}
}
