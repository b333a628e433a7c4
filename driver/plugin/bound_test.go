package plugin

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestBoundedAnswers: what a bounded call answers when the backend is in time, when the
// caller's own context ends first, and when the backend panics.
func TestBoundedAnswers(t *testing.T) {
	d := &Plugin{cfg: Config{BackendTimeout: time.Hour}, log: zap.NewNop()}
	release := make(chan struct{})
	defer close(release)
	hang := func(context.Context) (any, error) {
		<-release
		return "late", nil
	}
	tests := []struct {
		name string
		ctx  context.Context
		call func(context.Context) (any, error)
		want codes.Code
	}{
		{"in time: the backend's answer", liveCtx(), func(context.Context) (any, error) {
			return nil, status.Error(codes.NotFound, "gone")
		}, codes.NotFound},
		{"the caller's deadline passed first", expiredCtx(t), hang, codes.DeadlineExceeded},
		{"the caller went away first", cancelledCtx(), hang, codes.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.bounded(tc.ctx, rpcCreateVolume, tc.call); status.Code(err) != tc.want {
				t.Fatalf("bounded = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("a panic in time is raised on the caller's goroutine", func(t *testing.T) {
		boom := errors.New("boom")
		defer func() {
			if p := recover(); p != boom {
				t.Fatalf("recovered %v, want the backend's panic", p)
			}
		}()
		_, _ = d.bounded(liveCtx(), rpcCreateVolume, func(context.Context) (any, error) { panic(boom) })
		t.Fatal("bounded returned after the backend panicked")
	})
	t.Run("the bound's context ends with its own cause", func(t *testing.T) {
		short := &Plugin{cfg: Config{BackendTimeout: time.Millisecond}, log: zap.NewNop()}
		seen := make(chan error, 1)
		_, err := short.bounded(liveCtx(), rpcCreateVolume, func(ctx context.Context) (any, error) {
			<-ctx.Done()
			seen <- context.Cause(ctx)
			return nil, mapError(ctx, rpcCreateVolume, ctx.Err()) // as a handler does
		})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("bounded = %v, want UNAVAILABLE", err)
		}
		if cause := <-seen; cause != errBackendTimeout {
			t.Fatalf("the backend's context ended with %v, want errBackendTimeout", cause)
		}
	})
}
