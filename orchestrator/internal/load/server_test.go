package load

// A real grpc-go server for the engine's tests, built from a scenario's
// proto at run time, with its behaviour chosen per test.

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// handler answers one call; echo is the well-behaved one.
type handler func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error)

func echo(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	reply := sc.NewResponse()
	reply.Set(sc.Method.Output().Fields().ByNumber(1), req.Get(sc.Method.Input().Fields().ByNumber(1)))
	return reply, nil
}

func scenarioDir(name string) string {
	return filepath.Join("..", "..", "..", "scenarios", name)
}

// startServer serves the scenario's Greeter on a loopback port and returns
// its address.
func startServer(t *testing.T, scenarioName string, h handler, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, lis, scenarioDir(scenarioName), h, opts...)
	return lis.Addr().String()
}

// startServerDir is startServer for the scenario in dir.
func startServerDir(t *testing.T, dir string, h handler, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, lis, dir, h, opts...)
	return lis.Addr().String()
}

// startCountingServer is startServer on a listener that counts the
// connections it accepts.
func startCountingServer(t *testing.T, scenarioName string, h handler, opts ...grpc.ServerOption) (string, *countingListener) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &countingListener{Listener: inner}
	serveOn(t, lis, scenarioDir(scenarioName), h, opts...)
	return inner.Addr().String(), lis
}

// countingListener counts the connections accepted through it.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return nc, err
}

// serveOn serves the Greeter of the scenario in dir on lis until the test
// ends.
func serveOn(t *testing.T, lis net.Listener, dir string, h handler, opts ...grpc.ServerOption) {
	t.Helper()
	sc, err := scenario.Load(context.Background(), dir)
	if err != nil {
		lis.Close()
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
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
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
}
