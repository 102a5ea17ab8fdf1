package remote

import (
	"net"
	"syscall"
	"unsafe"
)

// unread is how many bytes the kernel holds for conn that no one has
// read yet (0 when it cannot tell): a handshake that has not read its
// client's hello yet may have received it.
func unread(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	_ = rc.Control(func(fd uintptr) {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 {
			n = 0
		}
	})
	return int(n)
}
