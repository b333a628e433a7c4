package plugin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// boundedChain is the chain of a plugin with Config.BackendTimeout: outer (everything up to the
// tracing attributes) runs on the call's goroutine, inner (locking, Config.UnaryInterceptors)
// and the handler on a goroutine of their own with a bounded context. The bound sits outside
// locking on purpose: when it passes, the CO is answered at once while the backend call, and the
// locks it holds, go on until the backend returns, so no second call on the same resource starts
// beside a first one that is still running in the backend.
//
// The final handler is captured here, not taken from outer's chain: a unaryChain's per-call state
// is recycled when the call returns, which may be before the backend does.
func (d *Plugin) boundedChain(r rpc, outer, inner *unaryChain) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) (any, error) {
		return outer.intercept(ctx, req, info, func(ctx context.Context, req any) (any, error) {
			return d.bounded(ctx, r, func(ctx context.Context) (any, error) {
				return inner.intercept(ctx, req, info, final)
			})
		})
	}
}

// Where a bounded call stands; the first of the backend's return and the bound to move it out
// of boundRunning decides which side answers.
const (
	boundRunning int32 = iota
	boundReturned
	boundAnswered
)

// boundResult is what a bounded call's goroutine hands back.
type boundResult struct {
	resp     any
	err      error
	panicked bool
	panicVal any
}

// bounded runs call on its own goroutine with a context that ends after Config.BackendTimeout
// (cause errBackendTimeout) and returns its answer, or, if the context ends first, answers for
// it: UNAVAILABLE for the bound, DEADLINE_EXCEEDED or CANCELLED when the caller's own context
// ended. A panic in time is re-raised here, where the recovery interceptor reports it; a late
// answer or panic is logged by the goroutine (its code only: the message may quote the request).
func (d *Plugin) bounded(ctx context.Context, r rpc, call func(context.Context) (any, error)) (any, error) {
	start := time.Now()
	bctx, cancel := context.WithTimeoutCause(ctx, d.cfg.BackendTimeout, errBackendTimeout)
	var state atomic.Int32
	done := make(chan boundResult, 1)
	d.backendCalls.add()
	go func() {
		defer d.backendCalls.done()
		defer cancel()
		var res boundResult
		defer func() {
			if p := recover(); p != nil {
				res = boundResult{panicked: true, panicVal: p}
			}
			if state.CompareAndSwap(boundRunning, boundReturned) {
				done <- res
				return
			}
			took := zap.Duration("took", time.Since(start))
			if res.panicked {
				d.log.Error("a backend call panicked after the CO had been answered", zap.String("rpc", string(r)), took)
				return
			}
			d.log.Warn("a backend call returned after the CO had been answered", zap.String("rpc", string(r)), took,
				zap.Stringer("code", status.Code(res.err)))
		}()
		res.resp, res.err = call(bctx)
	}()
	select {
	case res := <-done:
		return res.unwrap()
	case <-bctx.Done():
	}
	if !state.CompareAndSwap(boundRunning, boundAnswered) {
		// The backend returned just as the bound passed: its answer is the truer one.
		return (<-done).unwrap()
	}
	code := callEnded(bctx)
	if code == codes.Unavailable {
		return nil, status.Errorf(code, "%s: the backend did not answer within %v (Config.BackendTimeout); "+
			"the call goes on and holds its resources until the backend returns, so a retry before then is ABORTED", r, d.cfg.BackendTimeout)
	}
	return nil, status.Error(code, fmt.Sprintf("%s: %v before the backend answered", r, context.Cause(bctx)))
}

// callCount counts calls in progress and tells when none is left.
type callCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (c *callCount) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.idle = make(chan struct{})
	}
	c.n++
}

func (c *callCount) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 {
		close(c.idle)
		c.idle = nil
	}
}

func (c *callCount) running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// wait returns once no call is in progress (0) or when ctx ends (the number still running).
func (c *callCount) wait(ctx context.Context) int {
	c.mu.Lock()
	idle := c.idle
	c.mu.Unlock()
	if idle == nil {
		return 0
	}
	select {
	case <-idle:
		return 0
	case <-ctx.Done():
		return c.running()
	}
}

func (res boundResult) unwrap() (any, error) {
	if res.panicked {
		panic(res.panicVal)
	}
	return res.resp, res.err
}
