// Package loadtest is what the load tools' tests share: a real grpc-go
// server built from a scenario's proto at run time, with its behaviour
// chosen per test, and checks every tool must pass.
package loadtest

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Handler answers one call; Echo is the well-behaved one.
type Handler func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error)

func Echo(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	reply := sc.NewResponse()
	reply.Set(sc.Method.Output().Fields().ByNumber(1), req.Get(sc.Method.Input().Fields().ByNumber(1)))
	return reply, nil
}

// ScenarioDir is the folder of the repository's scenario name.
func ScenarioDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "scenarios", name)
}

// StartServer serves the scenario's Greeter on a loopback port and returns
// its address.
func StartServer(t *testing.T, scenarioName string, h Handler, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, lis, ScenarioDir(scenarioName), unary(h), opts...)
	return lis.Addr().String()
}

// StartServerDir is StartServer for the scenario in dir.
func StartServerDir(t *testing.T, dir string, h Handler, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, lis, dir, unary(h), opts...)
	return lis.Addr().String()
}

// StartServerOn is StartServer on a listener of the test's own.
func StartServerOn(t *testing.T, lis net.Listener, scenarioName string, h Handler, opts ...grpc.ServerOption) {
	t.Helper()
	serveOn(t, lis, ScenarioDir(scenarioName), unary(h), opts...)
}

// StartCountingServer is StartServer on a listener that counts the
// connections it accepts.
func StartCountingServer(t *testing.T, scenarioName string, h Handler, opts ...grpc.ServerOption) (string, *CountingListener) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &CountingListener{Listener: inner}
	serveOn(t, lis, ScenarioDir(scenarioName), unary(h), opts...)
	return inner.Addr().String(), lis
}

// CountingListener counts the connections accepted through it.
type CountingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *CountingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return nc, err
}

// Accepted is the number of connections accepted so far.
func (l *CountingListener) Accepted() int64 { return l.accepted.Load() }

// register adds a scenario's service to a server.
type register func(srv *grpc.Server, sc *scenario.Scenario)

// unary registers the Greeter, answering SayHello with h.
func unary(h Handler) register {
	return func(srv *grpc.Server, sc *scenario.Scenario) {
		srv.RegisterService(&grpc.ServiceDesc{
			ServiceName: scenario.Service,
			HandlerType: (*any)(nil),
			Methods: []grpc.MethodDesc{{
				MethodName: scenario.Method,
				Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
					req := dynamicpb.NewMessage(sc.Method.Input())
					if err := dec(req); err != nil {
						return nil, err
					}
					return h(sc, req)
				},
			}},
		}, struct{}{})
	}
}

// StreamHandler serves one call of a streaming scenario's method; Streams
// is the well-behaved one.
type StreamHandler func(sc *scenario.Scenario, st grpc.ServerStream) error

// Streams serves a call of any streaming method as
// docs/adding-a-server.md#streaming says: each request echoed as it comes
// (bidi), `replies` echoes of the one request (server stream), or the last
// request echoed after the half-close (client stream).
func Streams(sc *scenario.Scenario, st grpc.ServerStream) error {
	in, out := sc.Method.Input().Fields().ByNumber(1), sc.Method.Output().Fields().ByNumber(1)
	reply := func(req *dynamicpb.Message) *dynamicpb.Message {
		r := sc.NewResponse()
		r.Set(out, req.Get(in))
		return r
	}
	last := dynamicpb.NewMessage(sc.Method.Input())
	for {
		req := dynamicpb.NewMessage(sc.Method.Input())
		err := st.RecvMsg(req)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		last = req
		switch sc.Kind {
		case scenario.BidiStreaming:
			if err := st.SendMsg(reply(req)); err != nil {
				return err
			}
		case scenario.ServerStreaming:
			for range sc.Replies {
				if err := st.SendMsg(reply(req)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if sc.Kind == scenario.ClientStreaming {
		return st.SendMsg(reply(last))
	}
	return nil
}

// StartStreamServer serves the method of the streaming scenario in dir
// with h on a loopback port and returns its address and the scenario.
func StartStreamServer(t testing.TB, dir string, h StreamHandler, opts ...grpc.ServerOption) (string, *scenario.Scenario) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var served *scenario.Scenario
	serveOn(t, lis, dir, func(srv *grpc.Server, sc *scenario.Scenario) {
		served = sc
		srv.RegisterService(&grpc.ServiceDesc{
			ServiceName: string(sc.Method.Parent().FullName()),
			HandlerType: (*any)(nil),
			Streams: []grpc.StreamDesc{{
				StreamName:    string(sc.Method.Name()),
				Handler:       func(_ any, st grpc.ServerStream) error { return h(sc, st) },
				ClientStreams: sc.Method.IsStreamingClient(),
				ServerStreams: sc.Method.IsStreamingServer(),
			}},
		}, struct{}{})
	}, opts...)
	return lis.Addr().String(), served
}

// serveOn serves the scenario in dir on lis, as reg registers it, until
// the test ends.
func serveOn(t testing.TB, lis net.Listener, dir string, reg register, opts ...grpc.ServerOption) {
	t.Helper()
	sc, err := scenario.Load(context.Background(), dir)
	if err != nil {
		lis.Close()
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	reg(srv, sc)
	served := make(chan struct{})
	go func() {
		defer close(served)
		// nil after Stop; anything else ends the server under the test.
		if err := srv.Serve(lis); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
}

// CallsAfterWindow runs a load with a tail against a server that notes
// when calls arrive, and returns the result and how many calls arrived
// after its window.
func CallsAfterWindow(t *testing.T, run func(context.Context, load.Spec) (load.Result, error)) (load.Result, int) {
	t.Helper()
	var mu sync.Mutex
	var arrivals []time.Time
	addr := StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		return Echo(sc, req)
	})
	res, err := run(context.Background(), load.Spec{Target: addr, ScenarioDir: ScenarioDir("complex_proto"), Kind: scenario.Unary,
		Connections: 2, Concurrency: 8, Warmup: 200 * time.Millisecond, Duration: 500 * time.Millisecond, Tail: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	after := 0
	for _, a := range arrivals {
		if a.After(res.End) {
			after++
		}
	}
	return res, after
}
