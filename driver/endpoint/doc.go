// Package endpoint parses CSI_ENDPOINT and COSI_ENDPOINT values and listens on
// them safely.
//
// A CSI or COSI plugin is told where to listen by an environment variable
// whose value is a unix socket, written in one of the forms sidecars and
// deployment manifests use in practice:
//
//	unix:///var/lib/kubelet/plugins/example.com/csi.sock
//	unix:/var/lib/kubelet/plugins/example.com/csi.sock
//	/var/lib/kubelet/plugins/example.com/csi.sock
//
// [Parse] accepts those, and tcp://host:port only when the caller opts in
// with [ParseOptions.AllowTCP] (plugin.Config.AllowTCP for a driver): a TCP
// endpoint has no file permissions in front of it and is meant for debugging
// only. A unix: form must mean the same socket to grpc-go clients (which
// decode percent escapes) and to the Kubernetes sidecars (which do not), so
// '%', a query and a fragment are refused in it; a bare path is taken
// literally. Every rejection says what is
// wrong and how to fix it, because the person reading it is usually looking
// at a crash-looping pod.
//
// [Listen] binds the endpoint without ever destroying something that is not
// a socket: a stale socket left by a crashed plugin is replaced, a socket
// that a live process still serves is refused, and anything else at the path
// (a regular file, a directory, a symbolic link) is refused and left alone.
// The socket file gets the requested mode (0660 by default) and, optionally,
// owner, and is removed again when the listener is closed.
package endpoint
