package tracing_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/container-storage-interface/spec/lib/go/csi"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/middleware/tracing"
)

// A driver with tracing: the provider from the OTEL_* environment, the stats
// handler on the server, and the annotating interceptor after validation.
// Here a span is started by hand, as the stats handler would for a call, so
// the example runs without a network.
func Example() {
	// In a driver: tp, shutdown, err := otelenv.NewProvider(ctx)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	srv := grpc.NewServer(
		tracing.ServerOption(tp),
		grpc.ChainUnaryInterceptor( /* recovery, request ID, logging, validation, */ tracing.UnaryServerInterceptor()),
	)
	defer srv.Stop()

	ctx, span := tp.Tracer("example").Start(context.Background(), "csi.v1.Controller/CreateVolume")
	req := &csi.CreateVolumeRequest{Name: "pvc-1", Secrets: map[string]string{"password": "hunter2"}}
	_, _ = tracing.UnaryServerInterceptor()(ctx, req, &grpc.UnaryServerInfo{},
		func(ctx context.Context, _ any) (any, error) {
			fmt.Println("log fields:", len(tracing.LogFields(ctx)))
			return &csi.CreateVolumeResponse{}, nil
		})
	span.End()

	var attrs []string
	for _, kv := range exp.GetSpans()[0].Attributes {
		attrs = append(attrs, string(kv.Key)+"="+kv.Value.Emit())
	}
	sort.Strings(attrs)
	fmt.Println(attrs)
	// Output:
	// log fields: 2
	// [csi.name=pvc-1]
}
