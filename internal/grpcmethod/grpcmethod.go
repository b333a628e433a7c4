// Package grpcmethod names RPCs the way csikit's messages and logs do. Every status message the
// library writes has one shape, "<RPC>: <what happened>", with the RPC's short name, so an
// operator reading a Kubernetes event sees which call failed without the service prefix.
package grpcmethod

import "strings"

// Short turns "/csi.v1.Controller/CreateVolume" into "CreateVolume" without allocating; a name
// without a slash is returned as it is.
func Short(fullMethod string) string {
	if i := strings.LastIndexByte(fullMethod, '/'); i >= 0 {
		return fullMethod[i+1:]
	}
	return fullMethod
}

// Message is the one shape of a library-written status message: "<RPC>: <what>".
func Message(fullMethod, what string) string { return Short(fullMethod) + ": " + what }
