package images

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/archive"
	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stall"
)

// scriptedHost has every base image and builds as its build function says.
type scriptedHost struct {
	build func(ctx context.Context, log io.Writer) error
	opts  backend.BuildOptions
}

func (e *scriptedHost) ImageID(context.Context, string) (string, error) { return "sha256:base", nil }
func (e *scriptedHost) Pull(context.Context, string, io.Writer) error {
	return errors.New("no pulls")
}
func (e *scriptedHost) Import(context.Context, io.Reader, string, []string) error {
	return errors.New("no imports")
}
func (e *scriptedHost) Load(context.Context, io.Reader) error { return errors.New("no loads") }
func (e *scriptedHost) Build(ctx context.Context, _ io.Reader, opts backend.BuildOptions, log io.Writer) (string, error) {
	e.opts = opts
	if err := e.build(ctx, log); err != nil {
		return "", err
	}
	return "sha256:built", nil
}

// TestBuildLimitsAndStall: every build gets the memory and CPU limits; a
// build that stops writing fails with the stall as its reason, one that
// keeps writing is not cut off.
func TestBuildLimitsAndStall(t *testing.T) {
	const limit = 200 * time.Millisecond
	silent := func(ctx context.Context, _ io.Writer) error {
		<-ctx.Done() // a step that hangs: the engine returns when the client goes
		return ctx.Err()
	}
	chatty := func(ctx context.Context, log io.Writer) error {
		for i := range 20 { // four times the limit in all, a line every twentieth of it
			if _, err := io.WriteString(log, "Step "+string(rune('a'+i))+"\n"); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(limit / 20):
			}
		}
		return nil
	}
	for _, tc := range []struct {
		name    string
		build   func(context.Context, io.Writer) error
		stalled bool
	}{
		{"silent", silent, true},
		{"writing", chatty, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := &scriptedHost{build: tc.build}
			b := Builder{Host: eng, Name: "relb", Memory: 3 << 30, CPUs: 1.5, Stall: limit}
			var log strings.Builder
			id, err := b.buildContext(context.Background(), archive.New(), []byte("FROM debian:bookworm-slim\n"),
				backend.BuildOptions{Tag: "relb:x-complex_proto"}, &log)
			var st *stall.Error
			if got := errors.As(err, &st); got != tc.stalled {
				t.Fatalf("buildContext = %q, %v; stalled %v, want %v", id, err, got, tc.stalled)
			}
			if tc.stalled && !strings.Contains(err.Error(), "the build of relb:x-complex_proto stalled: no output for 200ms (GRPC_BUILD_STALL)") {
				t.Errorf("the reason is %q", err)
			}
			if eng.opts.Memory != 3<<30 || eng.opts.CPUs != 1.5 {
				t.Errorf("the build ran with memory %d and %v CPUs, want the builder's limits", eng.opts.Memory, eng.opts.CPUs)
			}
		})
	}
}
