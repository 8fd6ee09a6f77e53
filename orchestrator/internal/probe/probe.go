// Package probe checks that a server answers gRPC: a successful call,
// not an open TCP port, is what makes a server ready.
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// retryEvery is the pause between two attempts.
const retryEvery = 200 * time.Millisecond

// callTimeout bounds one attempt, so that a server that accepts connections
// but never answers is retried rather than waited on.
const callTimeout = 2 * time.Second

// firstAnswer makes a call of the scenario's method and waits for its first
// answer: a whole unary call, the first reply of a stream.
func firstAnswer(ctx context.Context, conn *grpc.ClientConn, sc *scenario.Scenario) error {
	if sc.Kind == scenario.Unary {
		return conn.Invoke(ctx, sc.FullMethod(), sc.Request, sc.NewResponse(), grpc.WaitForReady(true))
	}
	st, err := newStream(ctx, conn, sc, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	if err := st.SendMsg(sc.Request); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	err = st.RecvMsg(sc.NewResponse())
	if errors.Is(err, io.EOF) {
		return nil // the stream ended with OK
	}
	return err
}

// Ready calls the scenario's method on the server with the scenario's request until it
// answers at the gRPC level, or timeout passes: OK, or any status but
// Unavailable and DeadlineExceeded (what a server that is still starting
// gives). Over TLS, a server that answers a connection with something a
// verified TLS handshake does not accept (plaintext, a wrong certificate)
// is up too. Whether the answer is right is the conformance gate's
// question. It returns the number of attempts made and, on failure, the
// last error.
func Ready(ctx context.Context, s Server, sc *scenario.Scenario, timeout time.Duration) (int, error) {
	conn, err := s.dial()
	if err != nil {
		return 0, err
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		callCtx, cancelCall := context.WithTimeout(ctx, callTimeout)
		err = firstAnswer(callCtx, conn, sc)
		cancelCall()
		if code := status.Code(err); ctx.Err() == nil && code != codes.Unavailable && code != codes.DeadlineExceeded {
			return attempt, nil
		}
		if ctx.Err() == nil && s.answersWithoutTLS(ctx) {
			return attempt, nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return attempt, fmt.Errorf("no successful %s within %s after %d attempts; last error: %w", sc.FullMethod(), timeout, attempt, err)
			}
			return attempt, ctx.Err()
		case <-time.After(retryEvery):
		}
	}
}

// RoundTrip is the median time of n TCP handshakes with target: the
// network's round trip to a server on another machine, without the
// server's own work in it.
func RoundTrip(ctx context.Context, target string, n int) (time.Duration, error) {
	var times []time.Duration
	var d net.Dialer
	for range n {
		start := time.Now()
		c, err := d.DialContext(ctx, "tcp", target)
		if err != nil {
			return 0, fmt.Errorf("connect to %s: %w", target, err)
		}
		times = append(times, time.Since(start))
		c.Close()
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
