// Command go_vtconnect is the connect-go server of the benchmark with
// vtprotobuf marshalling: a unary helloworld.Greeter/SayHello that echoes the
// request's inner message and helloworld.StreamingGreeter's streaming echoes,
// served by net/http over unencrypted HTTP/2 (h2c) or TLS, where messages are encoded and decoded by the protoc-gen-go-vtproto
// generated MarshalVT/UnmarshalVT methods (see codec.go). Connect handlers
// speak the gRPC, gRPC-Web and Connect protocols; the benchmark's clients use
// gRPC.
package main

import (
	"context"
	"errors"
	"io"
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

// streamer implements helloworldconnect.StreamingGreeterHandler with
// connect-go's streaming handler types; the bidirectional PingPong needs
// HTTP/2, which the server speaks with or without TLS.
type streamer struct {
	helloworldconnect.UnimplementedStreamingGreeterHandler
}

// PingPong echoes each request as it comes and ends, OK, at the client's
// half-close.
func (s *streamer) PingPong(_ context.Context, stream *connect.BidiStream[pb.HelloRequest, pb.HelloReply]) error {
	for {
		in, err := stream.Receive()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&pb.HelloReply{Response: in.GetRequest()}); err != nil {
			return err
		}
	}
}

// ServerStream sends the request's inner message back `replies` times.
func (s *streamer) ServerStream(_ context.Context, req *connect.Request[pb.RepliesRequest], stream *connect.ServerStream[pb.HelloReply]) error {
	for range req.Msg.GetReplies() {
		if err := stream.Send(&pb.HelloReply{Response: req.Msg.GetRequest()}); err != nil {
			return err
		}
	}
	return nil
}

// ClientStream reads every request until the client half-closes and answers
// with the last one's inner message (an empty reply when none came).
func (s *streamer) ClientStream(_ context.Context, stream *connect.ClientStream[pb.HelloRequest]) (*connect.Response[pb.HelloReply], error) {
	reply := &pb.HelloReply{}
	for stream.Receive() {
		reply = &pb.HelloReply{Response: stream.Msg().GetRequest()}
	}
	if err := stream.Err(); err != nil {
		return nil, err
	}
	return connect.NewResponse(reply), nil
}

// tlsFiles returns the certificate chain and key files to serve TLS with
// (docs/adding-a-server.md#tls), or ok false for plaintext; one set without
// the other ends the server with status 2.
func tlsFiles() (cert, key string, ok bool) {
	cert, key = os.Getenv("GRPC_TLS_CERT"), os.Getenv("GRPC_TLS_KEY")
	switch {
	case cert != "" && key == "":
		log.Print("grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not")
		os.Exit(2)
	case cert == "" && key != "":
		log.Print("grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not")
		os.Exit(2)
	}
	return cert, key, cert != ""
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
	cert, key, useTLS := tlsFiles()

	mux := http.NewServeMux()
	// The generated constructor returns the service's path prefix and a plain
	// net/http handler; WithCodec swaps in the vtprotobuf codec, as
	// vtprotobuf's README shows for Connect.
	mux.Handle(helloworldconnect.NewGreeterHandler(&greeter{}, connect.WithCodec(vtCodec{})))
	mux.Handle(helloworldconnect.NewStreamingGreeterHandler(&streamer{}, connect.WithCodec(vtCodec{})))

	// gRPC clients without TLS need HTTP/2 prior knowledge (h2c), which
	// net/http serves natively since Go 1.24; over TLS it offers h2 by ALPN.
	p := new(http.Protocols)
	p.SetHTTP1(true)
	if useTLS {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
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

	log.Printf("server listening at %v (TLS: %t)", addr, useTLS)
	if err := serve(srv, cert, key, useTLS); !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("failed to serve: %v", err)
	}
	// Serving returns as soon as Shutdown begins; wait for the drain.
	<-stopped
	log.Print("server stopped")
}

// serve runs srv until it is shut down: TLS from the given files, as
// net/http's ListenAndServeTLS loads them, or plaintext.
func serve(srv *http.Server, cert, key string, useTLS bool) error {
	if useTLS {
		return srv.ListenAndServeTLS(cert, key)
	}
	return srv.ListenAndServe()
}
