//go:build !linux

package rgwdriver

import "net"

// quickACK is a no-op where TCP_QUICKACK does not exist (see quickack_linux.go).
func quickACK(c net.Conn) net.Conn { return c }
