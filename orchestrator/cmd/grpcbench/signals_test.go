package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scratch"
)

// TestIgnoredHangupStaysIgnored starts this test binary as a child that
// registers the run's signals and reports the first it receives: under
// `trap "" HUP` (what nohup does) a SIGHUP must not reach it, so the
// SIGTERM sent after it is the first; without the trap the SIGHUP is.
func TestIgnoredHangupStaysIgnored(t *testing.T) {
	if os.Getenv("GRPCBENCH_SIGNAL_CHILD") == "1" {
		signals := interrupts()
		os.Stdout.WriteString("ready\n")
		os.Stdout.WriteString((<-signals).String() + "\n")
		os.Exit(0)
	}
	// A test run under nohup would hand its ignored SIGHUP to every child,
	// and the terminal case would wait forever; catching it here means the
	// children start with the default, as from a terminal (exec resets a
	// caught signal, not an ignored one).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for _, tc := range []struct {
		name, trap string
		send       []syscall.Signal
		want       string
	}{
		{"nohup", `trap "" HUP;`, []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM}, "terminated"},
		{"terminal", "", []syscall.Signal{syscall.SIGHUP}, "hangup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.trap+` exec "$0" -test.run='^TestIgnoredHangupStaysIgnored$'`, os.Args[0])
			cmd.Env = append(os.Environ(), "GRPCBENCH_SIGNAL_CHILD=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// A child that never receives its signal fails the test, not the
			// whole package at its timeout.
			stuck := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
			defer stuck.Stop()
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				t.Fatalf("the child did not start: %q", lines.Text())
			}
			for _, sig := range tc.send {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			lines.Scan()
			if got := lines.Text(); got != tc.want {
				t.Errorf("the child received %q first, want %q", got, tc.want)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("the child: %v", err)
			}
		})
	}
}

// TestSecondInterruptRemovesTemporaries: the first signal cancels, the
// second removes the run's temporary folders and exits 130.
func TestSecondInterruptRemovesTemporaries(t *testing.T) {
	dir, _, err := scratch.Dir("grpcbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/checkout", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	signals := make(chan os.Signal, 2)
	signals <- os.Interrupt
	signals <- os.Interrupt
	cancelled, code := false, -1
	stopOn(signals, func() { cancelled = true }, func(c int) { code = c })
	if !cancelled || code != exitInterrupted {
		t.Errorf("cancelled %v, exit %d; want true, %d", cancelled, code, exitInterrupted)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the temporary folder %s is still there after the second interrupt (%v)", dir, err)
	}
}

// TestBrokenPipeIsNotASecondInterrupt: after the first signal, a SIGPIPE
// (the cleanup writing to the output whose reader is gone) does not end
// the cleanup; a real second signal still does.
func TestBrokenPipeIsNotASecondInterrupt(t *testing.T) {
	signals := make(chan os.Signal, 3)
	signals <- syscall.SIGPIPE
	signals <- syscall.SIGPIPE
	cancelled := make(chan struct{})
	exited := make(chan int, 1)
	go stopOn(signals, func() { close(cancelled) }, func(c int) { exited <- c })
	<-cancelled
	select {
	case code := <-exited:
		t.Fatalf("a broken pipe during the cleanup ended it: exit %d", code)
	case <-time.After(200 * time.Millisecond):
	}
	signals <- os.Interrupt
	select {
	case code := <-exited:
		if code != exitInterrupted {
			t.Errorf("exit %d after a second interrupt, want %d", code, exitInterrupted)
		}
	case <-time.After(5 * time.Second):
		t.Error("a second interrupt did not end the cleanup")
	}
}

// TestClosedOutputInterrupts: once the reader of stdout is gone
// (`grpcbench | head`), the next write stops the run like Ctrl-C, so the
// containers are removed, rather than killing the process on the spot.
func TestClosedOutputInterrupts(t *testing.T) {
	if os.Getenv("GRPCBENCH_SIGNAL_CHILD") == "pipe" {
		signals := interrupts()
		os.Stderr.WriteString("ready\n")
		for {
			if _, err := os.Stdout.WriteString("line\n"); err != nil {
				break
			}
		}
		os.Stderr.WriteString((<-signals).String() + "\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestClosedOutputInterrupts$")
	cmd.Env = append(os.Environ(), "GRPCBENCH_SIGNAL_CHILD=pipe")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(errs)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the child did not start: %q", lines.Text())
	}
	out.Close()
	lines.Scan()
	if got := lines.Text(); got != "broken pipe" {
		t.Errorf("the child received %q, want %q", got, "broken pipe")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the child, killed by the closed pipe instead of told: %v", err)
	}
}

// TestBrokenConnectionDoesNotInterrupt: a write to a connection whose
// peer is gone (a TLS close_notify to an API server that hung up: an exec
// stream's end) raises SIGPIPE too, which must not stop the run: only a
// closed stdout or stderr does. The SIGTERM sent after it is the first
// signal the child hears.
func TestBrokenConnectionDoesNotInterrupt(t *testing.T) {
	if os.Getenv("GRPCBENCH_SIGNAL_CHILD") == "socket" {
		signals := interrupts()
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			panic(err)
		}
		syscall.Close(fds[1])
		if _, err := syscall.Write(fds[0], []byte("x")); err != syscall.EPIPE {
			panic(fmt.Sprintf("write to a closed peer: %v, want EPIPE", err))
		}
		os.Stdout.WriteString("ready\n")
		os.Stdout.WriteString((<-signals).String() + "\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenConnectionDoesNotInterrupt$")
	cmd.Env = append(os.Environ(), "GRPCBENCH_SIGNAL_CHILD=socket")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("the child did not start: %q", lines.Text())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	lines.Scan()
	if got := lines.Text(); got != "terminated" {
		t.Errorf("the child received %q first, want %q", got, "terminated")
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the child: %v", err)
	}
}
