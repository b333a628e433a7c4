package drivertest

import (
	"testing"

	"google.golang.org/grpc"

	"github.com/csikit/csikit/driver/drivertest/internal/serve"
	"github.com/csikit/csikit/driver/plugin"
)

// Server is a plugin served on a fresh unix socket for the length of one test, in the manner of
// httptest.Server: NewServer starts it and the test's cleanup closes it.
type Server struct {
	// Plugin is the plugin built from the Config.
	Plugin *plugin.Plugin
	// Socket is the path of the unix socket, short enough for a socket address (108 bytes).
	Socket string
	// Endpoint is Socket in CSI_ENDPOINT (and COSI_ENDPOINT) form: "unix://" + Socket.
	Endpoint string
	// Conn is a client connection to the plugin, for the client of any service it serves
	// (csi.NewControllerClient(s.Conn), ...). Close closes it.
	Conn *grpc.ClientConn

	srv *serve.Server
	// The blank field keeps Server incomparable: each one is a running plugin, not a value.
	_ [0]func()
}

// NewServer builds the plugin of cfg with plugin.New and serves it on a fresh unix socket until
// the test ends or Close is called. Everything the plugin logs is captured at debug level, beside
// cfg.Logger when that is set, for Logs: the requests and answers, redacted, which is what a
// secret canary searches. The socket is in the test's temporary directory, or in a fresh one
// under the system's when that path would be too long for a unix socket. A Config that
// plugin.New refuses fails the test.
func NewServer(t testing.TB, cfg plugin.Config) *Server {
	t.Helper()
	srv := serve.New(t, cfg)
	return &Server{Plugin: srv.Plugin, Socket: srv.Socket, Endpoint: srv.Endpoint, Conn: srv.Conn, srv: srv}
}

// Logs returns everything the plugin has logged so far, one JSON object per line, at debug level.
func (s *Server) Logs() string { return s.srv.Logs() }

// Close closes Conn, stops serving, lets the calls in flight finish (up to the Config's
// ShutdownTimeout) and removes the socket. The test's cleanup calls it; calling it again does
// nothing. It fails the test when Serve ended with an error.
func (s *Server) Close() { s.srv.Close() }
