package endpoint_test

import (
	"context"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/csikit/csikit/driver/endpoint"
)

// TestGRPCClientReachesServer: the plugin and a grpc-go client given the same
// string must meet on the same socket, in every form Parse accepts. (Before
// '%' was refused in unix: URLs, unix:///a%41.sock was a case where they did
// not, or where the sidecars and grpc-go did not.)
func TestGRPCClientReachesServer(t *testing.T) {
	tests := []struct {
		name string
		// The endpoint is form + the test's directory + suffix.
		form, suffix string
	}{
		{"plain", "unix://", "/csi.sock"},
		{"space", "unix://", "/a b.sock"},
		{"single slash form", "unix:", "/csi.sock"},
		{"upper-case scheme", "UNIX://", "/csi.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A short directory: t.TempDir can exceed the socket path limit.
			dir := shortTempDir(t)
			raw := tt.form + dir + tt.suffix
			ep, err := endpoint.Parse(raw, endpoint.ParseOptions{})
			if err != nil {
				t.Fatalf("Parse(%q): %v", raw, err)
			}
			serveHealth(t, ep)
			// Both the user's string and the canonical form must reach it.
			for _, target := range []string{raw, ep.String()} {
				checkHealth(t, target)
			}
		})
	}
}

func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ep")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serveHealth(t *testing.T, ep endpoint.Endpoint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lis, err := endpoint.Listen(ctx, ep, endpoint.ListenOptions{})
	if err != nil {
		t.Fatalf("Listen(%s): %v", ep, err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
}

func checkHealth(t *testing.T, target string) {
	t.Helper()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient(%q): %v", target, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// WaitForReady turns "nothing listens at the path grpc-go chose" into a
	// deadline error that names the path it dialled, instead of a fast
	// UNAVAILABLE that hides it.
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("grpc-go client dialling %q did not reach the server: %v", target, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health status %v, want SERVING", resp.GetStatus())
	}
}
