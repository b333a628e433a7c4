package httpserve_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/csikit/csikit/driver/httpserve"
)

// A plugin serves its diagnostics beside the gRPC socket: metrics from its registry, liveness
// from its Probe, and readiness that it flips while starting and draining.
func Example() {
	var ready httpserve.Readiness
	s := &httpserve.Server{
		Gatherer:  prometheus.NewRegistry(),
		Probe:     func(context.Context) (bool, error) { return true, nil },
		Readiness: &ready,
	}
	// Serve(ctx, ":8080") in a plugin; a test listener here to learn the port.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ctx, lis) }()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	show := func(path string) {
		resp, err := client.Get("http://" + lis.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		fmt.Println(path, resp.StatusCode, string(body))
	}
	show("/healthz")
	show("/readyz") // still starting
	ready.SetReady(true)
	show("/readyz")

	stop() // as on SIGTERM: Serve shuts the HTTP server down and returns
	fmt.Println("stopped:", <-served)
	// Output:
	// /healthz 200 ok
	// /readyz 503 not ready
	// /readyz 200 ok
	// stopped: <nil>
}
