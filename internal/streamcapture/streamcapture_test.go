package streamcapture

import (
	"errors"
	"testing"

	"google.golang.org/grpc"
)

type fake struct {
	grpc.ServerStream
	msgs []string
	err  error
}

func (f *fake) RecvMsg(m any) error {
	if len(f.msgs) == 0 {
		return f.err
	}
	*(m.(*string)) = f.msgs[0]
	f.msgs = f.msgs[1:]
	return nil
}

func TestFirstIsTheFirstMessageReceived(t *testing.T) {
	s := New(&fake{msgs: []string{"request", "second"}, err: errors.New("eof")})
	if s.First() != nil {
		t.Fatal("First before any message must be nil")
	}
	var a, b, c string
	if err := s.RecvMsg(&a); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.RecvMsg(&c); err == nil {
		t.Fatal("the wrapped stream's error must come through")
	}
	if got := *(s.First().(*string)); got != "request" {
		t.Fatalf("First = %q, want the first message", got)
	}
}
