package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
)

// timeoutErr is a net.Error of a client library that timed out on its own.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "request timed out" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// Contexts a backend can be called with: the caller still waiting, the caller's deadline passed,
// the caller gone, Config.BackendTimeout passed.
func liveCtx() context.Context { return context.Background() }

func expiredCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	t.Cleanup(cancel)
	return ctx
}

func cancelledCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func boundPassedCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithDeadlineCause(context.Background(), time.Unix(0, 0), errBackendTimeout)
	t.Cleanup(cancel)
	return ctx
}

// faultCase is a backend error, the context the backend saw, and the code it must become.
type faultCase struct {
	name string
	ctx  context.Context
	err  error
	want codes.Code
}

func syscallErr(op string, errno syscall.Errno) error { return os.NewSyscallError(op, errno) }

// faultCases is the classification rule, case by case. Every RPC of every service must answer
// each of these with the same code (TestTransientFaultsAreTheSameOnEveryRPC).
func faultCases(t *testing.T) []faultCase {
	dialRefused := &net.OpError{Op: "dial", Net: "tcp", Err: syscallErr("connect", syscall.ECONNREFUSED)}
	readReset := &net.OpError{Op: "read", Net: "tcp", Err: syscallErr("read", syscall.ECONNRESET)}
	readDeadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	return []faultCase{
		// Transient faults of the backend or the way to it: UNAVAILABLE.
		{"the sentinel", liveCtx(), fmt.Errorf("rgw: %w", driver.ErrUnavailable), codes.Unavailable},
		{"connection refused, in a dial", liveCtx(), fmt.Errorf("create subvolume: %w", dialRefused), codes.Unavailable},
		{"connection refused, in an HTTP request", liveCtx(), &url.Error{Op: "Put", URL: "http://rgw/admin/user", Err: dialRefused}, codes.Unavailable},
		{"connection refused, bare errno", liveCtx(), fmt.Errorf("mon: %w", syscall.ECONNREFUSED), codes.Unavailable},
		{"connection reset", liveCtx(), fmt.Errorf("list: %w", readReset), codes.Unavailable},
		{"broken pipe", liveCtx(), syscallErr("write", syscall.EPIPE), codes.Unavailable},
		{"host unreachable", liveCtx(), syscallErr("connect", syscall.EHOSTUNREACH), codes.Unavailable},
		{"network unreachable", liveCtx(), syscallErr("connect", syscall.ENETUNREACH), codes.Unavailable},
		{"kernel connection timeout", liveCtx(), syscallErr("connect", syscall.ETIMEDOUT), codes.Unavailable},
		{"connection cut mid-message", liveCtx(), fmt.Errorf("decode answer: %w", io.ErrUnexpectedEOF), codes.Unavailable},
		{"peer closed before answering an HTTP request", liveCtx(), &url.Error{Op: "Get", URL: "http://rgw/", Err: io.EOF}, codes.Unavailable},
		{"peer closed during a read", liveCtx(), &net.OpError{Op: "read", Net: "tcp", Err: io.EOF}, codes.Unavailable},
		{"a closed connection used", liveCtx(), fmt.Errorf("send: %w", net.ErrClosed), codes.Unavailable},
		{"name resolution timed out", liveCtx(), &net.DNSError{Err: "i/o timeout", Name: "rgw", IsTimeout: true}, codes.Unavailable},
		{"name resolution failed for now", liveCtx(), &net.DNSError{Err: "server misbehaving", Name: "rgw", IsTemporary: true}, codes.Unavailable},
		{"an upstream UNAVAILABLE wrapped", liveCtx(), fmt.Errorf("upstream: %w", status.Error(codes.Unavailable, "down")), codes.Unavailable},

		// Timeouts: the backend's own is UNAVAILABLE, never INTERNAL; the caller's deadline stays
		// DEADLINE_EXCEEDED.
		{"the backend's own context deadline", liveCtx(), fmt.Errorf("wait for clone: %w", context.DeadlineExceeded), codes.Unavailable},
		{"a read deadline", liveCtx(), readDeadline, codes.Unavailable},
		{"a client library's timeout", liveCtx(), fmt.Errorf("admin ops: %w", timeoutErr{}), codes.Unavailable},
		{"an upstream DEADLINE_EXCEEDED wrapped", liveCtx(), fmt.Errorf("upstream: %w", status.Error(codes.DeadlineExceeded, "slow")), codes.Unavailable},
		{"the backend's own cancellation", liveCtx(), fmt.Errorf("pool closed: %w", context.Canceled), codes.Unavailable},
		{"the caller's deadline passed", expiredCtx(t), fmt.Errorf("wait for clone: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"the caller's deadline passed during a read", expiredCtx(t), readDeadline, codes.DeadlineExceeded},
		{"the caller's deadline passed during a dial", expiredCtx(t), &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}, codes.DeadlineExceeded},
		{"the caller went away", cancelledCtx(), fmt.Errorf("wait for clone: %w", context.Canceled), codes.Canceled},
		{"Config.BackendTimeout passed", boundPassedCtx(t), fmt.Errorf("wait for clone: %w", context.DeadlineExceeded), codes.Unavailable},

		// Not faults: configuration or bugs stay INTERNAL (retried, but not a promise that trying
		// again helps).
		{"a name that does not resolve", liveCtx(), &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "rgw", IsNotFound: true}}, codes.Internal},
		{"an unsupported URL scheme", liveCtx(), &url.Error{Op: "Get", URL: "ftp://rgw", Err: errors.New(`unsupported protocol scheme "ftp"`)}, codes.Internal},
		{"io.EOF alone", liveCtx(), fmt.Errorf("parse state: %w", io.EOF), codes.Internal},
		{"no space is not transient", liveCtx(), syscallErr("write", syscall.ENOSPC), codes.Internal},
		{"a plain error", liveCtx(), errors.New("boom"), codes.Internal},
		{"an upstream INTERNAL wrapped", liveCtx(), fmt.Errorf("upstream: %w", status.Error(codes.Internal, "bug")), codes.Internal},

		// The backend's own word decides first.
		{"a sentinel beats a transient cause", liveCtx(), fmt.Errorf("%w: %w", driver.ErrResourceExhausted, dialRefused), codes.ResourceExhausted},
		{"a status returned as is keeps its code", liveCtx(), status.Error(codes.DeadlineExceeded, "clone still running"), codes.DeadlineExceeded},
	}
}

func TestTransientFaultClassification(t *testing.T) {
	for _, tc := range faultCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			got := mapError(tc.ctx, rpcCreateVolume, tc.err)
			if status.Code(got) != tc.want {
				t.Fatalf("mapError(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestRealNetworkFaultsAreUnavailable: the errors the standard library really returns, not
// hand-built ones, for a backend that is down or drops the connection.
func TestRealNetworkFaultsAreUnavailable(t *testing.T) {
	closedPort := func() string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		lis.Close()
		return addr
	}
	// A server that accepts and closes at once, and one that accepts and never answers.
	serve := func(handle func(net.Conn)) string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lis.Close() })
		go func() {
			for {
				c, err := lis.Accept()
				if err != nil {
					return
				}
				handle(c)
			}
		}()
		return lis.Addr().String()
	}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	closes := serve(func(c net.Conn) { c.Close() })
	hangs := serve(func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, c)
	})

	_, dialErr := net.Dial("tcp", closedPort())
	_, httpRefused := http.Get("http://" + closedPort() + "/")
	_, httpClosed := http.Get("http://" + closes + "/")
	_, httpTimeout := (&http.Client{Timeout: time.Millisecond}).Get("http://" + hangs + "/")
	conn, err := net.Dial("tcp", hangs)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now())
	_, readTimeout := conn.Read(make([]byte, 1))

	for name, err := range map[string]error{
		"dial refused": dialErr, "HTTP refused": httpRefused, "HTTP connection closed": httpClosed,
		"HTTP client timeout": httpTimeout, "read deadline": readTimeout,
	} {
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if got := mapError(context.Background(), rpcCreateBucket, err); status.Code(got) != codes.Unavailable {
			t.Errorf("%s (%T %v): %v, want UNAVAILABLE", name, err, err, got)
		}
	}
}

// TestTransientFaultsAreTheSameOnEveryRPC is the differential check of the CSI, volume-group and
// COSI paths: they share one mapper but each RPC has its own table entry, and no entry may turn
// a fault into a different code (above all, none into a code a sidecar takes as final).
func TestTransientFaultsAreTheSameOnEveryRPC(t *testing.T) {
	terminalForCOSI := []codes.Code{codes.InvalidArgument, codes.AlreadyExists, codes.OutOfRange, codes.Unimplemented}
	for _, tc := range faultCases(t) {
		if tc.want != codes.Unavailable && tc.want != codes.DeadlineExceeded && tc.want != codes.Canceled {
			continue
		}
		for r, spec := range rpcTable {
			got := status.Code(mapError(tc.ctx, r, tc.err))
			if got != tc.want {
				t.Errorf("%s: %s answers %v, %s answers %v", tc.name, rpcCreateVolume, tc.want, r, got)
			}
			if spec.service.isCOSI() {
				for _, c := range terminalForCOSI {
					if got == c {
						t.Errorf("%s: %s answers %v, which the COSI sidecar takes as final", tc.name, r, got)
					}
				}
			}
		}
	}
}
