// Command go_vtconnect is the connect-go server of the benchmark with
// vtprotobuf marshalling: a unary helloworld.Greeter/SayHello that echoes the
// request's inner message, served by net/http over unencrypted HTTP/2 (h2c),
// where messages are encoded and decoded by the protoc-gen-go-vtproto
// generated MarshalVT/UnmarshalVT methods (see codec.go). Connect handlers
// speak the gRPC, gRPC-Web and Connect protocols; the benchmark's clients use
// gRPC.
package main

import (
	"context"
	"errors"
	"log"
	"math"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"connectrpc.com/connect"

	pb "github.com/grpcbench/grpcbench/servers/go_vtconnect/helloworld"
	"github.com/grpcbench/grpcbench/servers/go_vtconnect/helloworld/helloworldconnect"
)

const addr = ":50051"

// greeter implements helloworldconnect.GreeterHandler.
type greeter struct {
	helloworldconnect.UnimplementedGreeterHandler
}

// SayHello returns the request's inner message unchanged.
func (g *greeter) SayHello(_ context.Context, req *connect.Request[pb.HelloRequest]) (*connect.Response[pb.HelloReply], error) {
	return connect.NewResponse(&pb.HelloReply{Response: req.Msg.GetRequest()}), nil
}

// setWorkers sets GOMAXPROCS by the benchmark's rule
// (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS rounded up, at most
// the CPUs the process may run on, 1 when unset or empty; an invalid value
// ends the server with status 2. The runtime's own cgroup-aware default
// (Go 1.25+) never goes below 2, so under --cpus=1 it would run 2 Ps on one
// core's quota.
func setWorkers() {
	n := 1
	if s := os.Getenv("GRPC_SERVER_CPUS"); s != "" {
		cpus, err := strconv.ParseFloat(s, 64)
		if err != nil || !(cpus > 0) || math.IsInf(cpus, 0) {
			log.Printf("grpcbench-server: GRPC_SERVER_CPUS=%q is not a positive number", s)
			os.Exit(2)
		}
		n = int(min(math.Ceil(cpus), float64(runtime.NumCPU())))
	}
	runtime.GOMAXPROCS(n)
	log.Printf("grpcbench-server: workers=%d", n)
}

func main() {
	setWorkers()

	mux := http.NewServeMux()
	// The generated constructor returns the service's path prefix and a plain
	// net/http handler; WithCodec swaps in the vtprotobuf codec, as
	// vtprotobuf's README shows for Connect.
	mux.Handle(helloworldconnect.NewGreeterHandler(&greeter{}, connect.WithCodec(vtCodec{})))

	// gRPC clients without TLS need HTTP/2 prior knowledge (h2c), which
	// net/http serves natively since Go 1.24.
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Addr:      addr,
		Handler:   mux,
		Protocols: p,
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		// Drain in-flight requests, but do not let a stuck client hold the exit.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			log.Printf("shutdown: %v", err)
			srv.Close()
		}
	}()

	log.Printf("server listening at %v", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("failed to serve: %v", err)
	}
	// ListenAndServe returns as soon as Shutdown begins; wait for the drain.
	<-stopped
	log.Print("server stopped")
}
