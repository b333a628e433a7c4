package cephfs

import (
	"errors"
	"syscall"
	"testing"

	"github.com/csikit/csikit/driver"
)

// TestClassify: the transient faults of a cluster become UNAVAILABLE, never a code the CO
// treats as final; an errno with no meaning of its own stays as it is (INTERNAL).
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		want  error
	}{
		{syscall.ENOENT, driver.ErrNotFound},
		{syscall.ETIMEDOUT, driver.ErrUnavailable},
		{syscall.ENOTCONN, driver.ErrUnavailable},
		{syscall.ECONNREFUSED, driver.ErrUnavailable},
		{syscall.EAGAIN, driver.ErrUnavailable},
		{syscall.ENOTSUP, driver.ErrUnavailable},
		{syscall.EPERM, driver.ErrPermissionDenied},
		{syscall.EACCES, driver.ErrPermissionDenied},
		{syscall.EDQUOT, driver.ErrResourceExhausted},
		{syscall.ENOTEMPTY, driver.ErrInUse},
		{syscall.EINVAL, nil},
	} {
		for _, sign := range []int{1, -1} { // librados returns negative errnos
			err := classify(&errnoError{errors.New("ceph"), sign * int(tc.errno)})
			if tc.want == nil {
				for _, s := range []error{driver.ErrNotFound, driver.ErrUnavailable, driver.ErrInvalidArgument} {
					if errors.Is(err, s) {
						t.Errorf("%v: classified as %v", tc.errno, s)
					}
				}
				continue
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("%v (%d): %v, want %v", tc.errno, sign, err, tc.want)
			}
		}
	}
}
