// Command slow_server replaces go_grpc's main.go in the open-loop tests: a
// grpc-go server of known behaviour, whose latencies queueing theory
// predicts. Each SayHello takes serviceTime, at most limit at once, the
// others queued; its capacity is limit/serviceTime, 400 calls a second.
// With SLOW_SERVER_STALLS=1 (a variant) it also stops serving for
// stallFor every stallEvery, as a long GC pause would.
package main

import (
	"context"
	"log"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"

	pb "github.com/grpcbench/grpcbench/servers/go_grpc/helloworld"
)

const (
	serviceTime = 10 * time.Millisecond
	limit       = 4
	stallFor    = time.Second
	stallEvery  = 4 * time.Second
)

type server struct {
	pb.UnimplementedGreeterServer
	slots chan struct{}
	// stall is held for writing while the server stalls; each call passes
	// it once it has a slot.
	stall sync.RWMutex
}

// SayHello echoes the request after serviceTime, once one of the limit
// slots is free and the server is not stalled.
func (s *server) SayHello(ctx context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.slots }()
	s.stall.RLock()
	s.stall.RUnlock()
	time.Sleep(serviceTime)
	return &pb.HelloReply{Response: in.GetRequest()}, nil
}

// stalls stops the server for stallFor every stallEvery.
func (s *server) stalls() {
	for {
		time.Sleep(stallEvery - stallFor)
		s.stall.Lock()
		time.Sleep(stallFor)
		s.stall.Unlock()
	}
}

func main() {
	log.Print("grpcbench-server: workers=1") // the tests give it GRPC_SERVER_CPUS=1
	lis, err := net.Listen("tcp", ":50051")
	if err != nil {
		log.Fatal(err)
	}
	srv := &server{slots: make(chan struct{}, limit)}
	if os.Getenv("SLOW_SERVER_STALLS") == "1" {
		go srv.stalls()
	}
	s := grpc.NewServer()
	pb.RegisterGreeterServer(s, srv)
	log.Printf("slow server listening (stalls: %q)", os.Getenv("SLOW_SERVER_STALLS"))
	log.Fatal(s.Serve(lis))
}
