package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// streamTimeout bounds one streaming call of the gate, so that a stream
// the server never ends fails with that reason.
var streamTimeout = 10 * time.Second

// resetGrace is how long the server has to act on a reset before the gate
// calls again.
const resetGrace = 200 * time.Millisecond

// conformStream is the gate of a streaming scenario: the call kind's rules
// (streamCall), many streams at once, and a stream the client resets
// mid-call, after which the server must still serve.
func conformStream(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario, v *Verdict) {
	v.Add(check(fmt.Sprintf("%s echo: %s", sc.Kind, streamRule(sc)), echoStreamCheck(ctx, conn, sc)))
	v.Add(check(fmt.Sprintf("%d concurrent streams on one connection", ConcurrentCalls), concurrentCheck(ctx, conn, sc, streamCall)))
	v.Add(check("stream reset mid-call, then served", resetCheck(ctx, conn, sc)))
}

// streamRule says what a call of the scenario must do, for the check's
// name.
func streamRule(sc *scenario.Scenario) string {
	switch sc.Kind {
	case scenario.BidiStreaming:
		return fmt.Sprintf("each of %d requests echoed in order, then OK after the half-close", sc.Sends)
	case scenario.ServerStreaming:
		return fmt.Sprintf("%d replies echoing the request, then OK", sc.Replies)
	default:
		return fmt.Sprintf("%d requests, then one reply echoing the last, OK", sc.Sends)
	}
}

// requests are what the gate sends on a stream: the scenario's request,
// but for a client stream every request but the last carries an empty
// hello, and on a bidi stream every other one does, so that an answer
// echoing another request than the rule's does not pass.
func requests(sc *scenario.Scenario) []*dynamicpb.Message {
	out := make([]*dynamicpb.Message, sc.Sends)
	field := sc.Method.Input().Fields().ByNumber(1)
	for i := range out {
		full := sc.Kind == scenario.ServerStreaming ||
			sc.Kind == scenario.ClientStreaming && i == sc.Sends-1 ||
			sc.Kind == scenario.BidiStreaming && i%2 == 0
		out[i] = sc.Request
		if !full {
			m := dynamicpb.NewMessage(sc.Method.Input())
			m.Set(field, m.NewField(field))
			out[i] = m
		}
	}
	return out
}

// newStream opens a stream of the scenario's method.
func newStream(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	desc := &grpc.StreamDesc{ClientStreams: sc.Method.IsStreamingClient(), ServerStreams: sc.Method.IsStreamingServer()}
	st, err := conn.NewStream(ctx, desc, sc.FullMethod(), opts...)
	if err != nil {
		return nil, fmt.Errorf("open the stream: %w", err)
	}
	return st, nil
}

// streamCall makes one call of the scenario's kind and checks it by the
// kind's rule: the replies' count and each reply field by field, in order,
// and grpc-status OK in the trailers.
func streamCall(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario, opts ...grpc.CallOption) error {
	ctx, cancel := context.WithTimeout(ctx, streamTimeout)
	defer cancel()
	st, err := newStream(ctx, conn, sc, opts...)
	if err != nil {
		return err
	}
	reqs := requests(sc)
	var replies []*dynamicpb.Message
	recv := func() error {
		reply := sc.NewResponse()
		err := st.RecvMsg(reply)
		if err == nil {
			replies = append(replies, reply)
		}
		return err
	}
	for i, req := range reqs {
		if err := st.SendMsg(req); err != nil {
			return fmt.Errorf("send request %d: %w", i+1, streamErr(ctx, st, err))
		}
		if sc.Kind != scenario.BidiStreaming {
			continue
		}
		// Ping-pong: the echo of each request before the next is sent.
		if err := recv(); err != nil {
			return fmt.Errorf("no echo of request %d of %d: %w", i+1, len(reqs), streamErr(ctx, st, err))
		}
	}
	if err := st.CloseSend(); err != nil {
		return fmt.Errorf("half-close: %w", err)
	}
	for {
		err := recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("after %d replies: %w", len(replies), streamErr(ctx, st, err))
		}
		if len(replies) > sc.Replies {
			return fmt.Errorf("more than the %d replies the call asks for", sc.Replies)
		}
	}
	if len(replies) != sc.Replies {
		return fmt.Errorf("%d replies, where the call asks for %d", len(replies), sc.Replies)
	}
	in, out := sc.Method.Input().Fields().ByNumber(1), sc.Method.Output().Fields().ByNumber(1)
	for i, reply := range replies {
		want := reqs[len(reqs)-1] // a client stream's last, a server stream's one
		if sc.Kind == scenario.BidiStreaming {
			want = reqs[i]
		}
		if err := sameFields(want.Get(in).Message(), reply.Get(out).Message()); err != nil {
			return fmt.Errorf("reply %d of %d: %w", i+1, len(replies), err)
		}
	}
	return nil
}

// streamErr names why a stream failed: the status the server ended it
// with, or that it never ended in time.
func streamErr(ctx context.Context, st grpc.ClientStream, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("the stream did not end within %s", streamTimeout)
	}
	if errors.Is(err, io.EOF) {
		// A send's io.EOF means the server ended the stream: RecvMsg says how.
		err = st.RecvMsg(struct{}{})
		if errors.Is(err, io.EOF) {
			return errors.New("the server ended the stream early with OK")
		}
	}
	return fmt.Errorf("grpc-status %s: %s", status.Code(err), status.Convert(err).Message())
}

func echoStreamCheck(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario) error {
	var header metadata.MD
	if err := streamCall(ctx, conn, sc, grpc.Header(&header)); err != nil {
		return err
	}
	if ct := header.Get("content-type"); len(ct) != 1 || !strings.HasPrefix(ct[0], "application/grpc") {
		return fmt.Errorf("content-type %q is not a gRPC one", ct)
	}
	return nil
}

// resetCheck opens a stream, sends its first request (and, for a stream of
// replies, reads the first), then cancels it, which resets the stream with
// RST_STREAM CANCEL; the server must then serve a whole call.
func resetCheck(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario) error {
	callCtx, cancel := context.WithTimeout(ctx, streamTimeout)
	st, err := newStream(callCtx, conn, sc)
	if err != nil {
		cancel()
		return err
	}
	err = st.SendMsg(requests(sc)[0])
	if err == nil && sc.Method.IsStreamingServer() {
		err = st.RecvMsg(sc.NewResponse())
	}
	cancel()
	if err != nil {
		return fmt.Errorf("before the reset: %w", streamErr(callCtx, st, err))
	}
	// A server the reset breaks may take a moment to show it (a crash, a
	// worker that dies): the next call waits for that moment.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(resetGrace):
	}
	if err := streamCall(ctx, conn, sc); err != nil {
		return fmt.Errorf("the call after the reset: %w", err)
	}
	return nil
}
