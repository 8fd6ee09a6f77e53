package probe

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// serveStream starts an in-process server of a streaming scenario's
// method and returns its address and the scenario.
func serveStream(t *testing.T, name string, h loadtest.StreamHandler) (string, *scenario.Scenario) {
	t.Helper()
	return loadtest.StartStreamServer(t, loadtest.ScenarioDir(name), h)
}

var streamScenarios = []string{"stream_pingpong", "stream_server", "stream_client"}

func TestConformPassesASpecStreamingServer(t *testing.T) {
	for _, name := range streamScenarios {
		t.Run(name, func(t *testing.T) {
			addr, sc := serveStream(t, name, loadtest.Streams)
			if _, err := Ready(context.Background(), Server{Target: addr}, sc, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			v, err := Conform(context.Background(), Server{Target: addr}, sc)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Passed || len(v.Warnings) != 0 || len(v.Checks) != 4 {
				t.Errorf("verdict %+v: want 4 checks passed without warnings", v)
			}
		})
	}
}

// TestConformKeepsOutStreamsThatBreakTheRules: each misbehaviour fails the
// check that names it.
func TestConformKeepsOutStreamsThatBreakTheRules(t *testing.T) {
	t.Cleanup(func() { streamTimeout = 10 * time.Second })
	oneShort := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		sc2 := *sc
		sc2.Replies--
		return loadtest.Streams(&sc2, st)
	}
	neverEnds := func(_ *scenario.Scenario, st grpc.ServerStream) error {
		<-st.Context().Done()
		return st.Context().Err()
	}
	// echoes the first request of the stream, whatever came after.
	firstOnly := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		var first *dynamicpb.Message
		for {
			req := dynamicpb.NewMessage(sc.Method.Input())
			if err := st.RecvMsg(req); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return err
			}
			if first == nil {
				first = req
			}
			if sc.Kind == scenario.BidiStreaming {
				r := sc.NewResponse()
				r.Set(sc.Method.Output().Fields().ByNumber(1), first.Get(sc.Method.Input().Fields().ByNumber(1)))
				if err := st.SendMsg(r); err != nil {
					return err
				}
			}
		}
		if sc.Kind == scenario.BidiStreaming {
			return nil
		}
		r := sc.NewResponse()
		r.Set(sc.Method.Output().Fields().ByNumber(1), first.Get(sc.Method.Input().Fields().ByNumber(1)))
		return st.SendMsg(r)
	}
	// serves until a call of it is reset, then refuses every call.
	var broken atomic.Bool
	diesOnReset := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		if broken.Load() {
			return status.Error(codes.Unavailable, "down since a reset")
		}
		err := loadtest.Streams(sc, st)
		if status.Code(err) == codes.Canceled || errors.Is(st.Context().Err(), context.Canceled) {
			broken.Store(true)
		}
		return err
	}
	abortsMidway := func(sc *scenario.Scenario, st grpc.ServerStream) error {
		if sc.Method.IsStreamingServer() {
			if err := st.SendMsg(sc.NewResponse()); err != nil {
				return err
			}
		}
		return status.Error(codes.Internal, "broken on purpose")
	}
	for _, tc := range []struct {
		name, scenario string
		h              loadtest.StreamHandler
		failing        string
		serves         bool
	}{
		{"a reply short", "stream_server", oneShort, "9 replies, where the call asks for 10", false},
		{"never ends", "stream_server", neverEnds, "did not end within", false},
		{"no echo", "stream_pingpong", neverEnds, "no echo of request 1 of 10", false},
		{"client stream never answered", "stream_client", neverEnds, "did not end within", false},
		{"echoes the first", "stream_client", firstOnly, "reply 1 of 1: answer is not the echo", false},
		{"echoes the first (bidi)", "stream_pingpong", firstOnly, "reply 2 of 10: answer is not the echo", false},
		{"error status", "stream_server", abortsMidway, "grpc-status Internal: broken on purpose", false},
		{"down after a reset", "stream_pingpong", diesOnReset, "then served: the call after the reset", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Streams that hang fail fast; a server that serves must not
			// time out on a busy machine, which would look like a reset.
			streamTimeout = 2 * time.Second
			if tc.serves {
				streamTimeout = 10 * time.Second
			}
			broken.Store(false)
			addr, sc := serveStream(t, tc.scenario, tc.h)
			v, err := Conform(context.Background(), Server{Target: addr}, sc)
			if err != nil {
				t.Fatal(err)
			}
			if v.Passed || !strings.Contains(v.Failures(), tc.failing) {
				t.Errorf("verdict passed=%v, failures %q: want a failure saying %q", v.Passed, v.Failures(), tc.failing)
			}
		})
	}
}
