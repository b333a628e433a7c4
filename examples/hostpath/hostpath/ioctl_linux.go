package hostpath

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func ioctlGetUint64(fd int, req uint, out *uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(out)))
	if errno != 0 {
		return errno
	}
	return nil
}
