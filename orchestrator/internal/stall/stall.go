// Package stall ends a step that has stopped making progress: a build, a
// pull or an image copy that writes nothing for a while is taken to hang,
// and one that runs past its total limit (output dribbled out keeps the
// first watch happy for ever) is cut off too; its context is cancelled
// with a reason, so that the run fails that step and goes on rather than
// waiting with its lock held.
package stall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Error says that a step wrote nothing for its limit, or, when Total is
// set, that it ran for its total limit.
type Error struct {
	What  string
	Limit time.Duration
	Total bool
}

func (e *Error) Error() string {
	if e.Total {
		return fmt.Sprintf("%s ran out of time: still going after %s (GRPC_BUILD_TIMEOUT)", e.What, e.Limit)
	}
	return fmt.Sprintf("%s stalled: no output for %s (GRPC_BUILD_STALL)", e.What, e.Limit)
}

// Watch is a step under watch.
type Watch struct {
	timer, deadline *time.Timer
	limit           time.Duration
	ctx             context.Context
	cancel          context.CancelCauseFunc
}

// Guard watches a step: the context it returns is cancelled with an
// *Error when limit passes without output written through the Watch's
// Writer, or when total passes whatever it wrote; 0 watches nothing. Stop
// ends the watch.
func Guard(ctx context.Context, limit, total time.Duration, what string) (context.Context, *Watch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Watch{limit: limit, ctx: ctx, cancel: cancel}
	if limit > 0 {
		w.timer = time.AfterFunc(limit, func() { cancel(&Error{What: what, Limit: limit}) })
	}
	if total > 0 {
		w.deadline = time.AfterFunc(total, func() { cancel(&Error{What: what, Limit: total, Total: true}) })
	}
	return ctx, w
}

// Writer passes what it is given to dst, and counts it as progress.
func (w *Watch) Writer(dst io.Writer) io.Writer { return progress{w, dst} }

// Stop ends the watch.
func (w *Watch) Stop() {
	for _, t := range []*time.Timer{w.timer, w.deadline} {
		if t != nil {
			t.Stop()
		}
	}
	w.cancel(nil)
}

// Err is err, or the stall that caused it: a step cut off by the watch
// fails with a "context canceled" of its own, which says nothing.
func (w *Watch) Err(err error) error {
	if err == nil {
		return nil
	}
	var stalled *Error
	if errors.As(context.Cause(w.ctx), &stalled) {
		return stalled
	}
	return err
}

type progress struct {
	w   *Watch
	dst io.Writer
}

func (p progress) Write(b []byte) (int, error) {
	if p.w.timer != nil && len(b) > 0 {
		p.w.timer.Reset(p.w.limit)
	}
	return p.dst.Write(b)
}
