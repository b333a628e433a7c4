package plugin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
)

// recorder is an interceptor that notes its name before and after calling its handler.
func recorder(name string, log *[]string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		*log = append(*log, name)
		resp, err := h(ctx, req)
		*log = append(*log, "/"+name)
		return resp, err
	}
}

var testInfo = &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/CreateVolume"}

// TestUnaryChainOrder: the library's interceptors run first outermost, then the configured ones,
// then the handler, and every interceptor sees the call's info, context and request.
func TestUnaryChainOrder(t *testing.T) {
	var log []string
	type key struct{}
	check := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info != testInfo || req != "req" || ctx.Value(key{}) != "v" {
			t.Errorf("interceptor got info %v, request %v, context value %v", info, req, ctx.Value(key{}))
		}
		return h(ctx, req)
	}
	c := newUnaryChain(
		[]grpc.UnaryServerInterceptor{recorder("a", &log), check, recorder("b", &log)},
		[]grpc.UnaryServerInterceptor{recorder("u1", &log), check, recorder("u2", &log)})
	ctx := context.WithValue(context.Background(), key{}, "v")
	for range 3 { // a recycled state runs the same way
		log = log[:0]
		resp, err := c.intercept(ctx, "req", testInfo, func(_ context.Context, req any) (any, error) {
			log = append(log, "handler")
			return req.(string) + "-done", nil
		})
		if resp != "req-done" || err != nil {
			t.Fatalf("chain returned %v, %v", resp, err)
		}
		if got, want := strings.Join(log, " "), "a b u1 u2 handler /u2 /u1 /b /a"; got != want {
			t.Fatalf("order %q, want %q", got, want)
		}
	}
}

// TestUnaryChainRepeatedHandlerCall: an interceptor that calls its handler a second time after
// the first returned (a retry) runs the rest of the chain again, from the right place.
func TestUnaryChainRepeatedHandlerCall(t *testing.T) {
	var log []string
	retry := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, err := h(ctx, req); err == nil {
			t.Error("first attempt succeeded, want the handler's failure")
		}
		return h(ctx, req)
	}
	attempts := 0
	c := newUnaryChain([]grpc.UnaryServerInterceptor{recorder("a", &log), retry, recorder("b", &log)}, nil)
	resp, err := c.intercept(context.Background(), "req", testInfo, func(context.Context, any) (any, error) {
		attempts++
		if attempts == 1 {
			return nil, errors.New("transient")
		}
		return "ok", nil
	})
	if resp != "ok" || err != nil || attempts != 2 {
		t.Fatalf("got %v, %v after %d attempts", resp, err, attempts)
	}
	if got, want := strings.Join(log, " "), "a b /b b /b /a"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
}

// TestUnaryChainPanicThenReuse: a panic recovered by an interceptor of the chain ends the call
// with that interceptor's answer, and the next call through the chain runs every step again.
func TestUnaryChainPanicThenReuse(t *testing.T) {
	var log []string
	recoverer := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				resp, err = nil, errors.New("recovered")
			}
		}()
		return h(ctx, req)
	}
	c := newUnaryChain([]grpc.UnaryServerInterceptor{recoverer, recorder("a", &log), recorder("b", &log)}, nil)
	panics := true
	handler := func(context.Context, any) (any, error) {
		if panics {
			panic("boom")
		}
		return "ok", nil
	}
	if _, err := c.intercept(context.Background(), "req", testInfo, handler); err == nil || err.Error() != "recovered" {
		t.Fatalf("panicking call: %v, want the recovered answer", err)
	}
	panics, log = false, log[:0]
	if resp, err := c.intercept(context.Background(), "req", testInfo, handler); resp != "ok" || err != nil {
		t.Fatalf("next call: %v, %v", resp, err)
	}
	if got, want := strings.Join(log, " "), "a b /b /a"; got != want {
		t.Fatalf("next call's order %q, want %q", got, want)
	}
}

// TestUnaryChainConcurrentCalls: calls in flight at once each walk their own state (run with
// -race).
func TestUnaryChainConcurrentCalls(t *testing.T) {
	pass := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	c := newUnaryChain([]grpc.UnaryServerInterceptor{pass, pass, pass}, []grpc.UnaryServerInterceptor{pass})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				want := g*1000 + i
				resp, err := c.intercept(context.Background(), want, testInfo, func(_ context.Context, req any) (any, error) {
					return req, nil
				})
				if resp != want || err != nil {
					t.Errorf("call %d got %v, %v", want, resp, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestUnaryChainWithoutInterceptors calls the handler alone.
func TestUnaryChainWithoutInterceptors(t *testing.T) {
	c := newUnaryChain(nil, nil)
	resp, err := c.intercept(context.Background(), "req", testInfo, func(_ context.Context, req any) (any, error) { return req, nil })
	if resp != "req" || err != nil {
		t.Fatalf("got %v, %v", resp, err)
	}
}
