package h2

// A connection's socket: reads that wait on the runtime's poller, and a
// write that never blocks. On Linux both are raw system calls on the
// non-blocking socket. The runtime's ordinary system call path wakes its
// monitor thread (sysmon) whenever the process was idle: with one call in
// flight that is once per round trip, a futex wake in the reader and the
// monitor's own sleeps and wake-ups, all on the client's core. A raw call
// skips that path; on a non-blocking socket it cannot block, which is what
// a raw call must not do.

import (
	"io"
	"net"
	"os"
	"syscall"
)

type sock struct {
	nc net.Conn
	// rc is nil where raw calls are not available (another system, a
	// transport that is not a socket): reads are then nc's, and tryWrite
	// writes nothing.
	rc syscall.RawConn
	// The buffers and results of the raw calls live here, and their
	// callbacks are method values made once: a call allocates nothing. The
	// read side is the reader goroutine's; the write side belongs to
	// whoever holds the connection's write turn (conn.writing).
	rbuf, wbuf      []byte
	rn, wn          int
	rerrno          syscall.Errno
	readFn, writeFn func(fd uintptr) bool
}

func newSock(nc net.Conn) *sock {
	s := &sock{nc: nc}
	s.useRaw()
	return s
}

// Read reads what the server sent, waiting for it on the runtime's poller.
// Errors are those of net.Conn's Read: io.EOF at the end, the deadline's,
// the system call's.
func (s *sock) Read(p []byte) (int, error) {
	if s.rc == nil || len(p) == 0 {
		return s.nc.Read(p)
	}
	s.rbuf = p
	err := s.rc.Read(s.readFn)
	s.rbuf = nil
	switch {
	case err != nil: // closed, or past the read deadline
		return 0, err
	case s.rerrno != 0:
		return 0, os.NewSyscallError("read", s.rerrno)
	case s.rn == 0:
		return 0, io.EOF
	}
	return s.rn, nil
}

// tryWrite writes what the socket takes at once, without waiting, and says
// how much that was. A failed write took nothing: the writer goroutine's
// blocking write meets the error again and reports it.
func (s *sock) tryWrite(p []byte) int {
	if s.rc == nil || len(p) == 0 {
		return 0
	}
	s.wbuf, s.wn = p, 0
	_ = s.rc.Write(s.writeFn) // its error (a closed socket) is the blocking write's to report
	s.wbuf = nil
	return s.wn
}
