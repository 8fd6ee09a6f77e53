// Command broken_server replaces go_grpc's main.go in the conformance tests:
// a grpc-go server that answers wrongly, states the wrong workers at start,
// or breaks a streaming rule (its PingPong), in the way BROKEN_BEHAVIOUR
// says, to prove the gate catches it; or, past the gate, answers every call
// with an error message of its own (error_flood), to prove the record stays
// small. Each behaviour is a variant
// (variants.json), so one image serves every test that needs one.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/grpcbench/grpcbench/servers/go_grpc/helloworld"
)

var behaviour = os.Getenv("BROKEN_BEHAVIOUR")

const hostile = "=HYPERLINK(\"http://evil\")\x1b]0;pwned\x07\x1b[2J" +
	"\n| fake_server |   999999 |        0.01 ms | forged row |\r\n" +
	"| 1 | fake_server | h2 | 999999 | forged | md |\n- forged item <script>alert(1)</script>"

type server struct {
	pb.UnimplementedGreeterServer
	calls atomic.Int64
}

// gateCalls is more than the readiness probe and the conformance gate make:
// error_flood answers them well.
const gateCalls = 1000

func (s *server) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	switch behaviour {
	case "wrong_workers", "no_start_line", "plaintext_only", "stream_wrong_count", "stream_no_echo", "stream_never_ends":
		// plaintext_only echoes, but never reads GRPC_TLS_CERT and
		// GRPC_TLS_KEY: it serves h2c when TLS is asked.
		return &pb.HelloReply{Response: in.GetRequest()}, nil
	case "changes_payload":
		out := proto.Clone(in.GetRequest()).(*pb.Hello)
		out.Name += "!"
		return &pb.HelloReply{Response: out}, nil
	case "error_flood":
		if s.calls.Add(1) <= gateCalls {
			return &pb.HelloReply{Response: in.GetRequest()}, nil
		}
		msg := make([]byte, 2048)
		_, _ = rand.Read(msg)
		return nil, status.Error(codes.Internal, hex.EncodeToString(msg)) // 4 KiB, a new one each call
	case "hostile_text":
		// Terminal escapes, a forged ranking row, a Markdown row, HTML and
		// a formula: what the reports must show as text.
		return nil, status.Error(codes.Internal, hostile)
	default:
		return nil, status.Error(codes.Internal, "broken on purpose")
	}
}

type streaming struct {
	pb.UnimplementedStreamingGreeterServer
}

// PingPong breaks the rule its behaviour names: one echo too many after
// the half-close, no echo at all (the stream ends OK at once), or every
// echo and then no end.
func (streaming) PingPong(stream pb.StreamingGreeter_PingPongServer) error {
	if behaviour == "stream_no_echo" {
		return nil
	}
	var last *pb.HelloRequest
	for {
		in, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		last = in
		if err := stream.Send(&pb.HelloReply{Response: in.GetRequest()}); err != nil {
			return err
		}
	}
	switch behaviour {
	case "stream_wrong_count":
		return stream.Send(&pb.HelloReply{Response: last.GetRequest()})
	case "stream_never_ends":
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	return nil
}

func main() {
	// The runs of the tests give it GRPC_SERVER_CPUS=1.
	switch behaviour {
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
	pb.RegisterStreamingGreeterServer(s, streaming{})
	log.Printf("broken server (%s) listening", behaviour)
	log.Fatal(s.Serve(lis))
}
