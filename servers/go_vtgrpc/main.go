// Command go_vtgrpc is the grpc-go server of the benchmark with vtprotobuf
// marshalling: a unary helloworld.Greeter/SayHello that echoes the request's
// inner message and helloworld.StreamingGreeter's streaming echoes, where
// messages are encoded and decoded by the protoc-gen-go-vtproto generated
// MarshalVT/UnmarshalVT methods instead of protobuf-go's reflection-based
// ones; plaintext h2c, or TLS when given a certificate.
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

	vtgrpc "github.com/planetscale/vtprotobuf/codec/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	// Imported for its side effect: it registers grpc-go's default "proto"
	// codec, which init below then replaces with vtprotobuf's.
	_ "google.golang.org/grpc/encoding/proto"

	pb "github.com/grpcbench/grpcbench/servers/go_vtgrpc/helloworld"
)

const addr = ":50051"

// init registers vtprotobuf's codec under the name "proto", as vtprotobuf's
// README does for grpc-go, so every RPC of the server uses the generated
// (de)serializers.
func init() {
	encoding.RegisterCodec(vtgrpc.Codec{})
}

// server implements helloworld.GreeterServer.
type server struct {
	pb.UnimplementedGreeterServer
}

// SayHello returns the request's inner message unchanged.
func (s *server) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	return &pb.HelloReply{Response: in.GetRequest()}, nil
}

// streamer implements helloworld.StreamingGreeterServer in the style of
// grpc-go's route_guide example: Recv until io.EOF, Send as it goes.
type streamer struct {
	pb.UnimplementedStreamingGreeterServer
}

// PingPong echoes each request as it comes and ends, OK, at the client's
// half-close.
func (s *streamer) PingPong(stream pb.StreamingGreeter_PingPongServer) error {
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

// ServerStream sends the request's inner message back `replies` times.
func (s *streamer) ServerStream(in *pb.RepliesRequest, stream pb.StreamingGreeter_ServerStreamServer) error {
	for range in.GetReplies() {
		if err := stream.Send(&pb.HelloReply{Response: in.GetRequest()}); err != nil {
			return err
		}
	}
	return nil
}

// ClientStream reads every request until the client half-closes and answers
// with the last one's inner message (an empty reply when none came).
func (s *streamer) ClientStream(stream pb.StreamingGreeter_ClientStreamServer) error {
	reply := &pb.HelloReply{}
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(reply)
		}
		if err != nil {
			return err
		}
		reply = &pb.HelloReply{Response: in.GetRequest()}
	}
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

// serverOptions returns the server's transport credentials: TLS from the
// given files, as grpc-go's encryption example does (its credentials offer
// ALPN h2), or none for plaintext.
func serverOptions() []grpc.ServerOption {
	cert, key, ok := tlsFiles()
	if !ok {
		return nil
	}
	creds, err := credentials.NewServerTLSFromFile(cert, key)
	if err != nil {
		log.Fatalf("failed to load TLS certificate: %v", err)
	}
	return []grpc.ServerOption{grpc.Creds(creds)}
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
	opts := serverOptions()

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatalf("failed to listen: %v", err)
	}
	s := grpc.NewServer(opts...)
	pb.RegisterGreeterServer(s, &server{})
	pb.RegisterStreamingGreeterServer(s, &streamer{})

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

	_, vt := encoding.GetCodec("proto").(vtgrpc.Codec)
	log.Printf("server listening at %v (vtprotobuf codec: %t, TLS: %t)", lis.Addr(), vt, opts != nil)
	if err := s.Serve(lis); err != nil {
		log.Fatalf("failed to serve: %v", err)
	}
	// Serve returns as soon as stopping begins; wait for the drain to finish.
	<-stopped
	log.Print("server stopped")
}
