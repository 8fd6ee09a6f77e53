package h2

import (
	"syscall"
	"unsafe"
)

// useRaw turns on raw reads and writes for a socket.
func (s *sock) useRaw() {
	sc, ok := s.nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	s.rc = rc
	s.readFn, s.writeFn = s.rawRead, s.rawWrite
}

// rawRead is one read(2); false asks the poller to wait for bytes.
func (s *sock) rawRead(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.rbuf[0])), uintptr(len(s.rbuf)))
		switch errno {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			s.rn, s.rerrno = int(n), 0
		default:
			s.rn, s.rerrno = 0, errno
		}
		return true
	}
}

// rawWrite is one write(2) that never waits: what the socket did not take
// is left to the caller.
func (s *sock) rawWrite(fd uintptr) bool {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&s.wbuf[0])), uintptr(len(s.wbuf)))
		if errno == syscall.EINTR {
			continue
		}
		if errno == 0 {
			s.wn = int(n)
		}
		return true
	}
}
