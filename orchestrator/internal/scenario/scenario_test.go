package scenario

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

func dir(name string) string { return filepath.Join("..", "..", "..", "scenarios", name) }

// streamKinds are the streaming scenarios and what one call of each sends
// and gets; every other scenario is unary.
var streamKinds = map[string]struct {
	kind           Kind
	sends, replies int
}{
	"stream_pingpong": {BidiStreaming, 10, 10},
	"stream_server":   {ServerStreaming, 1, 10},
	"stream_client":   {ClientStreaming, 10, 1},
}

func TestEveryScenarioLoads(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("..", "..", "..", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		sc, err := Load(context.Background(), dir(e.Name()))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		b, err := sc.RequestBytes()
		if err != nil || len(b) == 0 {
			t.Errorf("%s: request encodes to %d bytes, %v", e.Name(), len(b), err)
		}
		want := streamKinds[e.Name()].kind
		if want == "" {
			want = Unary
		}
		if sc.Kind != want {
			t.Errorf("%s: call kind %q, want %q", e.Name(), sc.Kind, want)
		}
		if want := streamKinds[e.Name()]; want.kind != "" && (sc.Sends != want.sends || sc.Replies != want.replies) {
			t.Errorf("%s: %d sends and %d replies a call, want %d and %d", e.Name(), sc.Sends, sc.Replies, want.sends, want.replies)
		}
		if files := len(sc.Files()); files != 2 && streamKinds[e.Name()].kind == "" || files != 3 && streamKinds[e.Name()].kind != "" {
			t.Errorf("%s: files %v", e.Name(), sc.Files())
		}
	}
	if n < 5 {
		t.Errorf("only %d scenarios", n)
	}
}

// TestComplexProtoIsTheReferencePayload checks the request grpc_bench
// sends, 78 bytes of protobuf, and that its echo has the same bytes.
func TestComplexProtoIsTheReferencePayload(t *testing.T) {
	sc, err := Load(context.Background(), dir("complex_proto"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := sc.RequestBytes()
	if err != nil || len(req) != 78 {
		t.Fatalf("the request is %d bytes (%v), want 78", len(req), err)
	}
	reply := sc.NewResponse()
	reply.Set(sc.Method.Output().Fields().ByNumber(1), sc.Request.Get(sc.Method.Input().Fields().ByNumber(1)))
	deterministic := proto.MarshalOptions{Deterministic: true}
	if got, _ := deterministic.Marshal(reply); string(got) != string(req) {
		t.Errorf("the echo encodes to %x, want the request's %x", got, req)
	}
}

func TestLoadExplainsBadScenarios(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(dir("string_10B"), ProtoFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, proto, payload, want string
	}{
		{"no proto", "", `{}`, "helloworld.proto"},
		{"does not compile", "syntax = \"proto3\"; message {", `{}`, "compile"},
		{"no Greeter", "syntax = \"proto3\"; package helloworld; message M {}", `{}`, "no service helloworld.Greeter"},
		{"payload of another shape", string(good), `{"nope": 1}`, "is not a helloworld.HelloRequest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			if tc.proto != "" {
				os.WriteFile(filepath.Join(d, ProtoFile), []byte(tc.proto), 0o644)
			}
			os.WriteFile(filepath.Join(d, PayloadFile), []byte(tc.payload), 0o644)
			_, err := Load(context.Background(), d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestLoadRefusesScenariosOfTheWrongShape(t *testing.T) {
	for name, proto := range map[string]string{
		"request field 1 a string": `syntax = "proto3"; package helloworld;
service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
message HelloRequest { string request = 1; } message HelloReply { string response = 1; }`,
		"reply of another message": `syntax = "proto3"; package helloworld;
service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
message A { string name = 1; } message B { string name = 1; }
message HelloRequest { A request = 1; } message HelloReply { B response = 1; }`,
	} {
		t.Run(name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, ProtoFile), []byte(proto), 0o644)
			os.WriteFile(filepath.Join(d, PayloadFile), []byte(`{}`), 0o644)
			if _, err := Load(context.Background(), d); err == nil || !strings.Contains(err.Error(), "field 1 of helloworld.Hello") {
				t.Errorf("Load = %v, want a refusal naming field 1", err)
			}
		})
	}
}

// TestLoadRefusesImports: a proto that imports another file compiles here
// but not in the servers' builds, which take helloworld.proto alone.
func TestLoadRefusesImports(t *testing.T) {
	const service = `service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
message HelloRequest { Hello request = 1; } message HelloReply { Hello response = 1; }`
	for _, tc := range []struct {
		name, proto, sibling, want string
	}{
		{"a file of the scenario folder", `syntax = "proto3"; package helloworld; import "hello.proto";` + service,
			`syntax = "proto3"; package helloworld; message Hello { string name = 1; }`, "imports hello.proto"},
		{"a well-known type", `syntax = "proto3"; package helloworld; import "google/protobuf/timestamp.proto";` + service +
			` message Hello { google.protobuf.Timestamp at = 1; }`, "", "imports google/protobuf/timestamp.proto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, ProtoFile), []byte(tc.proto), 0o644)
			if tc.sibling != "" {
				os.WriteFile(filepath.Join(d, "hello.proto"), []byte(tc.sibling), 0o644)
			}
			os.WriteFile(filepath.Join(d, PayloadFile), []byte(`{}`), 0o644)
			_, err := Load(context.Background(), d)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "self-contained") {
				t.Errorf("Load = %v, want a refusal saying %q", err, tc.want)
			}
		})
	}
}

// TestKindIsReadFromTheProto: the stream keywords of the method the call
// file names say its call kind.
func TestKindIsReadFromTheProto(t *testing.T) {
	for rpc, want := range map[string]Kind{
		"rpc Call (HelloRequest) returns (HelloReply);":               Unary,
		"rpc Call (stream HelloRequest) returns (HelloReply);":        ClientStreaming,
		"rpc Call (HelloRequest) returns (stream HelloReply);":        ServerStreaming,
		"rpc Call (stream HelloRequest) returns (stream HelloReply);": BidiStreaming,
	} {
		messages := ""
		if want == ClientStreaming || want == BidiStreaming {
			messages = `, "messages": 3`
		}
		sc, err := Load(context.Background(), writeScenario(t, rpc, `{"replies": 3}`, `{"method": "helloworld.Other/Call"`+messages+`}`))
		if err != nil {
			t.Fatalf("%s: %v", rpc, err)
		}
		if sc.Kind != want || sc.FullMethod() != "/helloworld.Other/Call" {
			t.Errorf("%s: kind %q of %s, want %q of /helloworld.Other/Call", rpc, sc.Kind, sc.FullMethod(), want)
		}
	}
}

// writeScenario writes a scenario whose service Other has the rpc.
func writeScenario(t *testing.T, rpc, payload, call string) string {
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, ProtoFile), []byte(`syntax = "proto3"; package helloworld; service Other { `+rpc+` }
message Hello { string name = 1; } message HelloRequest { Hello request = 1; int32 replies = 2; } message HelloReply { Hello response = 1; }`), 0o644)
	os.WriteFile(filepath.Join(d, PayloadFile), []byte(payload), 0o644)
	if call != "" {
		os.WriteFile(filepath.Join(d, CallFile), []byte(call), 0o644)
	}
	return d
}

func TestLoadExplainsBadCallFiles(t *testing.T) {
	const bidi = "rpc Call (stream HelloRequest) returns (stream HelloReply);"
	const server = "rpc Call (HelloRequest) returns (stream HelloReply);"
	for _, tc := range []struct {
		name, rpc, payload, call, want string
	}{
		{"not JSON", bidi, `{}`, `method`, "call.json"},
		{"unknown field", bidi, `{}`, `{"method": "helloworld.Other/Call", "messages": 2, "n": 1}`, "unknown field"},
		{"method without a service", bidi, `{}`, `{"method": "Call"}`, "not package.Service/Method"},
		{"no such service", bidi, `{}`, `{"method": "helloworld.Nope/Call", "messages": 2}`, "no service helloworld.Nope"},
		{"no such method", bidi, `{}`, `{"method": "helloworld.Other/Nope", "messages": 2}`, "has no method Nope"},
		{"a client stream of no messages", bidi, `{}`, `{"method": "helloworld.Other/Call"}`, `"messages", 1 to 10000, not 0`},
		{"messages for a server stream", server, `{"replies": 2}`, `{"method": "helloworld.Other/Call", "messages": 2}`, "for client streams"},
		{"a server stream of no replies", server, `{}`, `{"method": "helloworld.Other/Call"}`, "replies is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), writeScenario(t, tc.rpc, tc.payload, tc.call))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
