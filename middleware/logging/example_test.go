package logging_test

import (
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/csikit/csikit/middleware/logging"
	"github.com/csikit/csikit/middleware/requestid"
	"github.com/csikit/csikit/secrets"
)

// One info line per call; at debug level the request and response too, with every secret value
// replaced and the keys kept. Put requestid before logging so every line carries the call's ID.
func ExampleUnaryServerInterceptor() {
	logger, err := zap.NewProduction()
	if err != nil {
		panic(err)
	}
	server := grpc.NewServer(grpc.ChainUnaryInterceptor(
		requestid.UnaryServerInterceptor(),
		logging.UnaryServerInterceptor(logger, logging.WithRedactor(secrets.NewRedactor(secrets.WithHeuristic(true)))),
	))
	defer server.Stop()
}
