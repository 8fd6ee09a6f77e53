package ghz

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// TestTailLoadsPastTheWindow: with a tail, ghz goes on loading the server
// after the window, and those calls are not in it.
func TestTailLoadsPastTheWindow(t *testing.T) {
	res, after := loadtest.CallsAfterWindow(t, Run)
	if res.OK == 0 || after <= 8 {
		t.Errorf("%d OK calls in the window, %d calls after it; want some, and more than the 8 in flight", res.OK, after)
	}
}

// TestGHZOverTLS: ghz verifies the chain against the run's CA.
func TestGHZOverTLS(t *testing.T) { loadtest.LoadsOverTLS(t, Run) }

// firstConns is a listener that serves its first n connections and
// leaves every later one unanswered (a server too busy to finish a
// handshake), until the test ends.
type firstConns struct {
	net.Listener
	n, accepted int
	mu          sync.Mutex
	held        []net.Conn
}

func (l *firstConns) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil || l.accepted < l.n {
			l.accepted++
			return nc, err
		}
		l.mu.Lock()
		l.held = append(l.held, nc)
		l.mu.Unlock()
	}
}

func (l *firstConns) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, nc := range l.held {
		nc.Close()
	}
	return l.Listener.Close()
}

// TestFailedTailIsANote: the tail is a ghz run of its own, on new
// connections; when it completes no call, the window's figures stand,
// with a note saying so.
func TestFailedTailIsANote(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up's two connections and the measurement's two.
	loadtest.StartServerOn(t, &firstConns{Listener: inner, n: 4}, "complex_proto", loadtest.Echo)
	res, err := Run(context.Background(), load.Spec{Target: inner.Addr().String(), ScenarioDir: loadtest.ScenarioDir("complex_proto"), Kind: scenario.Unary,
		Connections: 2, Concurrency: 8, Warmup: 200 * time.Millisecond, Duration: 500 * time.Millisecond, Tail: 400 * time.Millisecond})
	if err != nil {
		t.Fatalf("a failed tail failed the run: %v", err)
	}
	if res.OK == 0 || len(res.Notes) == 0 || !strings.Contains(res.Notes[len(res.Notes)-1], "load after the window failed") {
		t.Errorf("%d OK calls, notes %q: want the window's calls and a note on the tail", res.OK, res.Notes)
	}
}
