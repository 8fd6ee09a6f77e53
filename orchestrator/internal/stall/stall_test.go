package stall

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestSilenceEndsTheStep: a step that writes nothing is cancelled with
// the reason, and its own error is replaced by it.
func TestSilenceEndsTheStep(t *testing.T) {
	ctx, w := Guard(context.Background(), 50*time.Millisecond, 0, "build of go_grpc")
	defer w.Stop()
	<-ctx.Done()
	err := w.Err(ctx.Err())
	var stalled *Error
	if !errors.As(err, &stalled) || !strings.Contains(err.Error(), "build of go_grpc stalled: no output for 50ms") {
		t.Errorf("Err = %v, want the stall", err)
	}
}

// TestOutputKeepsTheStepAlive: output written more often than the limit
// keeps the context alive, and passes through.
func TestOutputKeepsTheStepAlive(t *testing.T) {
	ctx, w := Guard(context.Background(), time.Second, 0, "pull")
	defer w.Stop()
	var log bytes.Buffer
	out := w.Writer(&log)
	for range 10 {
		if _, err := out.Write([]byte("Step\n")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cancelled although it wrote: %v", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if log.String() != strings.Repeat("Step\n", 10) {
		t.Errorf("log = %q", log.String())
	}
	failure := errors.New("exit status 1")
	if err := w.Err(failure); !errors.Is(err, failure) {
		t.Errorf("Err of a step that did not stall = %v, want its own error", err)
	}
}

// TestStopAndParent: Stop cancels without a stall, and a cancelled parent
// is not taken for one.
func TestStopAndParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, w := Guard(parent, time.Hour, time.Hour, "copy")
	cancel()
	<-ctx.Done()
	if err := w.Err(ctx.Err()); !errors.Is(err, context.Canceled) {
		t.Errorf("Err after the parent's end = %v, want context.Canceled", err)
	}
	w.Stop()
	_, off := Guard(context.Background(), 0, 0, "nothing")
	off.Stop()
}

// TestDribbleEndsAtTheTotal: output dribbled out more often than the stall
// limit keeps that watch quiet, and the total limit ends the step anyway.
func TestDribbleEndsAtTheTotal(t *testing.T) {
	start := time.Now()
	ctx, w := Guard(context.Background(), 100*time.Millisecond, 300*time.Millisecond, "the build of dribble")
	defer w.Stop()
	out := w.Writer(io.Discard)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			if _, err := out.Write([]byte(".")); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the dribbling step was never cut off")
		}
	}
	err := w.Err(ctx.Err())
	var cut *Error
	if !errors.As(err, &cut) || !cut.Total || err.Error() != "the build of dribble ran out of time: still going after 300ms (GRPC_BUILD_TIMEOUT)" {
		t.Errorf("Err = %v, want the total limit", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("cut off after %s, before its total limit", took)
	}
}
