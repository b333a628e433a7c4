package rgwdriver

import (
	"net"
	"syscall"
)

// quickACK makes conn acknowledge every segment at once. RGW's beast frontend (Pacific) writes an
// answer's headers and body in separate small writes without TCP_NODELAY, so on a kept-alive
// connection the body waits for the ACK of the headers, which Linux delays by 40 ms: every admin
// or S3 call with a body cost 40 ms more than its work, most of a COSI grant's time. Linux turns
// quick ACKs off again by itself, so they are turned on before every read.
type quickACKConn struct {
	*net.TCPConn
	raw syscall.RawConn
}

func quickACK(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &quickACKConn{TCPConn: tc, raw: raw}
}

func (c *quickACKConn) Read(p []byte) (int, error) {
	_ = c.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1) // best effort
	})
	return c.TCPConn.Read(p)
}
