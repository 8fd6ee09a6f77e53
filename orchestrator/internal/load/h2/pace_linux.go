package h2

// The pacer's fine sleep on Linux: the runtime's timers wait in epoll_wait,
// whose timeout is in whole milliseconds (golang/go#53824), so a timer
// fires up to a millisecond late, 0.5 ms at the median. A timerfd(2) the
// runtime's poller waits on wakes it as the timer expires: its reader is
// woken within microseconds, with no thread of its own.

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fineTimer is a timerfd read through the runtime's poller.
type fineTimer struct {
	fd  int
	f   *os.File
	buf [8]byte
}

// newFineTimer is a fine timer; nil where the system has none, and the
// pacer then sleeps on the runtime's timers.
func newFineTimer() *fineTimer {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &fineTimer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep waits d.
func (t *fineTimer) sleep(d time.Duration) {
	if t == nil {
		time.Sleep(d)
		return
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	if unix.TimerfdSettime(t.fd, 0, &spec, nil) != nil {
		time.Sleep(d)
		return
	}
	_, _ = t.f.Read(t.buf[:]) // the expiry count; it returns once the timer expired
}

func (t *fineTimer) close() {
	if t != nil {
		t.f.Close()
	}
}
