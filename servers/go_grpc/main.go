// Command go_grpc is the grpc-go server of the benchmark: a unary
// helloworld.Greeter/SayHello that echoes the request's inner message, and
// helloworld.StreamingGreeter's streams, in the style of grpc-go's
// route_guide example.
package main

import (
	"context"
	"errors"
	"io"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	pb "github.com/grpcbench/grpcbench/servers/go_grpc/helloworld"
)

const addr = ":50051"

// server implements helloworld.GreeterServer.
type server struct {
	pb.UnimplementedGreeterServer
}

// SayHello returns the request's inner message unchanged.
func (s *server) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	return &pb.HelloReply{Response: in.GetRequest()}, nil
}

// streamingServer implements helloworld.StreamingGreeterServer.
type streamingServer struct {
	pb.UnimplementedStreamingGreeterServer
}

// PingPong echoes each request as it comes, until the client half-closes.
func (s *streamingServer) PingPong(stream pb.StreamingGreeter_PingPongServer) error {
	for {
		in, err := stream.Recv()
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

// ServerStream sends the request's hello back `replies` times.
func (s *streamingServer) ServerStream(in *pb.RepliesRequest, stream pb.StreamingGreeter_ServerStreamServer) error {
	reply := &pb.HelloReply{Response: in.GetRequest()}
	for range in.GetReplies() {
		if err := stream.Send(reply); err != nil {
			return err
		}
	}
	return nil
}

// ClientStream reads requests until the client half-closes, then answers
// with the last one's hello.
func (s *streamingServer) ClientStream(stream pb.StreamingGreeter_ClientStreamServer) error {
	last := &pb.HelloRequest{}
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&pb.HelloReply{Response: last.GetRequest()})
		}
		if err != nil {
			return err
		}
		last = in
	}
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

// serverOptions serves TLS when GRPC_TLS_CERT and GRPC_TLS_KEY name a
// certificate chain and key (docs/adding-a-server.md#tls), as grpc-go's
// documentation shows; grpc-go offers ALPN h2 itself. One without the
// other ends the server with status 2.
func serverOptions() []grpc.ServerOption {
	cert, key := os.Getenv("GRPC_TLS_CERT"), os.Getenv("GRPC_TLS_KEY")
	switch {
	case cert == "" && key == "":
		return nil
	case key == "":
		log.Print("grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not")
		os.Exit(2)
	case cert == "":
		log.Print("grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not")
		os.Exit(2)
	}
	creds, err := credentials.NewServerTLSFromFile(cert, key)
	if err != nil {
		log.Fatalf("failed to load the TLS certificate: %v", err)
	}
	return []grpc.ServerOption{grpc.Creds(creds)}
}

func main() {
	setWorkers()
	opts := serverOptions()

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("failed to listen: %v", err)
	}
	s := grpc.NewServer(opts...)
	pb.RegisterGreeterServer(s, &server{})
	pb.RegisterStreamingGreeterServer(s, &streamingServer{})

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		// Drain in-flight RPCs, but do not let a stuck client hold the exit.
		t := time.AfterFunc(5*time.Second, s.Stop)
		defer t.Stop()
		s.GracefulStop()
	}()

	log.Printf("server listening at %v", lis.Addr())
	if err := s.Serve(lis); err != nil {
		log.Fatalf("failed to serve: %v", err)
	}
	// Serve returns as soon as stopping begins; wait for the drain to finish.
	<-stopped
	log.Print("server stopped")
}
