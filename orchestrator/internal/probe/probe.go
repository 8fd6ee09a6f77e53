// Package probe checks that a server answers gRPC: a successful SayHello,
// not an open TCP port, is what makes a server ready.
package probe

import (
	"context"
	"errors"
	"fmt"
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

// Ready calls SayHello on the server with the scenario's request until it
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
		err = conn.Invoke(callCtx, scenario.FullMethod, sc.Request, sc.NewResponse(), grpc.WaitForReady(true))
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
				return attempt, fmt.Errorf("no successful %s within %s after %d attempts; last error: %w", scenario.FullMethod, timeout, attempt, err)
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
