// Command go_grpc is the grpc-go server of the benchmark: a unary
// helloworld.Greeter/SayHello that echoes the request's inner message.
package main

import (
	"context"
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

// setMaxProcs sets GOMAXPROCS to GRPC_SERVER_CPUS rounded up. The runtime's
// own cgroup-aware default (Go 1.25+) rounds the CPU limit up but never goes
// below 2, so under --cpus=0.5 or --cpus=1 it would run 2 Ps on one core's
// quota. An explicit GOMAXPROCS environment variable still wins.
func setMaxProcs() {
	s := os.Getenv("GRPC_SERVER_CPUS")
	if s == "" || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	cpus, err := strconv.ParseFloat(s, 64)
	if err != nil || cpus <= 0 || math.IsInf(cpus, 0) {
		log.Printf("ignoring invalid GRPC_SERVER_CPUS=%q", s)
		return
	}
	runtime.GOMAXPROCS(min(int(math.Ceil(cpus)), runtime.NumCPU()))
}

func main() {
	setMaxProcs()
	log.Printf("GOMAXPROCS=%d (NumCPU=%d, GRPC_SERVER_CPUS=%q)",
		runtime.GOMAXPROCS(0), runtime.NumCPU(), os.Getenv("GRPC_SERVER_CPUS"))

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("failed to listen: %v", err)
	}
	s := grpc.NewServer()
	pb.RegisterGreeterServer(s, &server{})

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
