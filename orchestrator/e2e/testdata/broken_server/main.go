// Command broken_server replaces go_grpc's main.go in the conformance tests:
// a grpc-go server that answers wrongly, or states the wrong workers at
// start, in the way its embedded behaviour file says, to prove the gate
// catches it.
package main

import (
	"context"
	_ "embed"
	"log"
	"net"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/grpcbench/grpcbench/servers/go_grpc/helloworld"
)

//go:embed behaviour
var behaviour string

const hostile = "=HYPERLINK(\"http://evil\")\x1b]0;pwned\x07\x1b[2J" +
	"\n| fake_server |   999999 |        0.01 ms | forged row |\r\n" +
	"| 1 | fake_server | h2 | 999999 | forged | md |\n- forged item <script>alert(1)</script>"

type server struct {
	pb.UnimplementedGreeterServer
}

func (s *server) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	switch strings.TrimSpace(behaviour) {
	case "wrong_workers", "no_start_line", "plaintext_only":
		// plaintext_only echoes, but never reads GRPC_TLS_CERT and
		// GRPC_TLS_KEY: it serves h2c when TLS is asked.
		return &pb.HelloReply{Response: in.GetRequest()}, nil
	case "changes_payload":
		out := proto.Clone(in.GetRequest()).(*pb.Hello)
		out.Name += "!"
		return &pb.HelloReply{Response: out}, nil
	case "hostile_text":
		// Terminal escapes, a forged ranking row, a Markdown row, HTML and
		// a formula: what the reports must show as text.
		return nil, status.Error(codes.Internal, hostile)
	default:
		return nil, status.Error(codes.Internal, "broken on purpose")
	}
}

func main() {
	// The runs of the tests give it GRPC_SERVER_CPUS=1.
	switch strings.TrimSpace(behaviour) {
	case "wrong_workers":
		log.Print("grpcbench-server: workers=7")
	case "no_start_line":
	default:
		log.Print("grpcbench-server: workers=1")
	}
	lis, err := net.Listen("tcp", ":50051")
	if err != nil {
		log.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterGreeterServer(s, &server{})
	log.Printf("broken server (%s) listening", strings.TrimSpace(behaviour))
	log.Fatal(s.Serve(lis))
}
