package probe

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// greeter is how a test server answers SayHello, and (nil: as grpc-go
// does, UNIMPLEMENTED) methods it does not have.
type greeter struct {
	sayHello func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error)
	unknown  grpc.StreamHandler
	// creds are the server's transport credentials; nil serves h2c.
	creds credentials.TransportCredentials
}

func echo(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	reply := sc.NewResponse()
	reply.Set(sc.Method.Output().Fields().ByNumber(1), req.Get(sc.Method.Input().Fields().ByNumber(1)))
	return reply, nil
}

func notFound(any, grpc.ServerStream) error {
	return status.Error(codes.NotFound, "no such method")
}

// serve starts an in-process grpc-go server of the complex_proto
// scenario's Greeter and returns its address and the scenario.
func serve(t *testing.T, g greeter) (string, *scenario.Scenario) {
	t.Helper()
	sc, err := scenario.Load(context.Background(), filepath.Join("..", "..", "..", "scenarios", "complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if g.unknown != nil {
		opts = append(opts, grpc.UnknownServiceHandler(g.unknown))
	}
	if g.creds != nil {
		opts = append(opts, grpc.Creds(g.creds))
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
				return g.sayHello(sc, req)
			},
		}},
	}, struct{}{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	return lis.Addr().String(), sc
}

func conform(t *testing.T, g greeter) Verdict {
	t.Helper()
	addr, sc := serve(t, g)
	v, err := Conform(context.Background(), Server{Target: addr}, sc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestConformPassesASpecServer(t *testing.T) {
	v := conform(t, greeter{sayHello: echo})
	if !v.Passed || len(v.Warnings) != 0 {
		t.Errorf("verdict %+v: want passed without warnings", v)
	}
}

// TestConformWarnsOfNotFound is grpcxx's case: an unknown method answered
// at once with NOT_FOUND is a deviation, not a failure.
func TestConformWarnsOfNotFound(t *testing.T) {
	v := conform(t, greeter{sayHello: echo, unknown: notFound})
	if !v.Passed {
		t.Fatalf("verdict %+v: a server that answers an unknown method NOT_FOUND was kept out (%s)", v, v.Failures())
	}
	if len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "NotFound (5)") || !strings.Contains(v.Warnings[0], "Unimplemented (12)") {
		t.Errorf("warnings %q: want one naming NotFound (5) and Unimplemented (12)", v.Warnings)
	}
}

// TestConformKeepsOutWhatInvalidatesABenchmark: a deviation elsewhere
// does not excuse a failure, and the failures stay failures.
func TestConformKeepsOutWhatInvalidatesABenchmark(t *testing.T) {
	unknownMethodWait = 200 * time.Millisecond
	t.Cleanup(func() { unknownMethodWait = 5 * time.Second })
	wrongEcho := func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		reply, _ := echo(sc, req)
		hello := reply.Mutable(sc.Method.Output().Fields().ByNumber(1)).Message()
		hello.Set(hello.Descriptor().Fields().ByName("name"), protoreflect.ValueOfString("changed"))
		return reply, nil
	}
	failing := func(*scenario.Scenario, *dynamicpb.Message) (*dynamicpb.Message, error) {
		return nil, status.Error(codes.NotFound, "no greeting")
	}
	var inFlight atomic.Int32
	refusesConcurrency := func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		defer inFlight.Add(-1)
		if inFlight.Add(1) > 1 {
			return nil, status.Error(codes.ResourceExhausted, "one call at a time")
		}
		time.Sleep(time.Millisecond)
		return echo(sc, req)
	}
	hangs := func(_ any, stream grpc.ServerStream) error {
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	answersOK := func(_ any, stream grpc.ServerStream) error {
		return stream.SendMsg(&emptypb.Empty{})
	}
	for name, tt := range map[string]struct {
		g       greeter
		failing string
	}{
		"changed echo":                    {greeter{sayHello: wrongEcho, unknown: notFound}, "echo"},
		"error status":                    {greeter{sayHello: failing, unknown: notFound}, "echo"},
		"refused concurrent calls":        {greeter{sayHello: refusesConcurrency}, "concurrent"},
		"unknown method hangs":            {greeter{sayHello: echo, unknown: hangs}, "unknown method"},
		"unknown method answered with OK": {greeter{sayHello: echo, unknown: answersOK}, "unknown method"},
	} {
		t.Run(name, func(t *testing.T) {
			v := conform(t, tt.g)
			if v.Passed {
				t.Fatalf("verdict %+v: passed", v)
			}
			if !strings.Contains(v.Failures(), tt.failing) {
				t.Errorf("failures %q do not name the %s check", v.Failures(), tt.failing)
			}
		})
	}
}
