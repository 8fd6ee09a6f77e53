// Package scenario reads a request scenario: the proto every server of the
// run is built from and the one request, as JSON, that the load sends.
package scenario

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// File names inside a scenario folder, and inside the build context and the
// client containers (under Dir).
const (
	ProtoFile   = "helloworld.proto"
	PayloadFile = "payload.json"
	Dir         = "scenario"
)

// The method every server implements.
const (
	Service = "helloworld.Greeter"
	Method  = "SayHello"
)

// FullMethod is the method's HTTP/2 path.
const FullMethod = "/" + Service + "/" + Method

// Kind is how a scenario's method calls: one request and one answer, or
// streams of them one way or both.
type Kind string

// The call kinds.
const (
	Unary           Kind = "unary"
	ClientStreaming Kind = "client-streaming"
	ServerStreaming Kind = "server-streaming"
	BidiStreaming   Kind = "bidi-streaming"
)

// KindOf is the call kind of a method, from its streaming flags.
func KindOf(m protoreflect.MethodDescriptor) Kind {
	switch {
	case m.IsStreamingClient() && m.IsStreamingServer():
		return BidiStreaming
	case m.IsStreamingClient():
		return ClientStreaming
	case m.IsStreamingServer():
		return ServerStreaming
	default:
		return Unary
	}
}

// Scenario is a compiled proto and its request.
type Scenario struct {
	Name    string
	Proto   []byte // the .proto source
	Payload []byte // the request in protobuf JSON
	Method  protoreflect.MethodDescriptor
	// Kind is the method's call kind. It is read from the proto's stream
	// keywords rather than declared beside them: the proto is what every
	// server compiles, so a second declaration could only disagree with it.
	Kind Kind
	// Request is Payload parsed into the method's input message.
	Request *dynamicpb.Message
}

// Load reads and compiles the scenario in dir.
func Load(ctx context.Context, dir string) (*Scenario, error) {
	s := &Scenario{Name: filepath.Base(dir)}
	var err error
	if s.Proto, err = os.ReadFile(filepath.Join(dir, ProtoFile)); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	if s.Payload, err = os.ReadFile(filepath.Join(dir, PayloadFile)); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	s.Payload = bytes.TrimSpace(s.Payload)
	compiler := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{dir}})}
	files, err := compiler.Compile(ctx, ProtoFile)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: compile %s: %w", s.Name, ProtoFile, err)
	}
	// Servers compile helloworld.proto alone, with their own toolchains: a
	// file it imports would compile here and fail every build.
	if imports := files[0].Imports(); imports.Len() > 0 {
		return nil, fmt.Errorf("scenario %s: %s imports %s: a scenario is one self-contained proto, which every server compiles alone",
			s.Name, ProtoFile, imports.Get(0).Path())
	}
	svc := files[0].Services().ByName(protoreflect.Name("Greeter"))
	if svc == nil || string(svc.FullName()) != Service {
		return nil, fmt.Errorf("scenario %s: %s has no service %s", s.Name, ProtoFile, Service)
	}
	if s.Method = svc.Methods().ByName(Method); s.Method == nil {
		return nil, fmt.Errorf("scenario %s: service %s has no method %s", s.Name, Service, Method)
	}
	s.Kind = KindOf(s.Method)
	// The servers echo field 1 of the request as field 1 of the reply.
	in, out := s.Method.Input().Fields().ByNumber(1), s.Method.Output().Fields().ByNumber(1)
	switch {
	case in == nil || in.Message() == nil || in.IsList() || in.IsMap():
		return nil, fmt.Errorf("scenario %s: field 1 of %s is not a message", s.Name, s.Method.Input().FullName())
	case out == nil || out.Message() == nil || out.IsList() || out.IsMap() || out.Message().FullName() != in.Message().FullName():
		return nil, fmt.Errorf("scenario %s: field 1 of %s is not a %s, as field 1 of %s is", s.Name, s.Method.Output().FullName(),
			in.Message().FullName(), s.Method.Input().FullName())
	}
	s.Request = dynamicpb.NewMessage(s.Method.Input())
	if err := protojson.Unmarshal(s.Payload, s.Request); err != nil {
		return nil, fmt.Errorf("scenario %s: %s is not a %s: %w", s.Name, PayloadFile, s.Method.Input().FullName(), err)
	}
	return s, nil
}

// RequestBytes is the request in the protobuf wire format.
func (s *Scenario) RequestBytes() ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(s.Request)
}

// NewResponse returns an empty message of the method's output type.
func (s *Scenario) NewResponse() *dynamicpb.Message {
	return dynamicpb.NewMessage(s.Method.Output())
}

// Files are the scenario's files as they are laid out under Dir, for build
// contexts and client containers.
func (s *Scenario) Files() map[string][]byte {
	return map[string][]byte{
		Dir + "/" + ProtoFile:   s.Proto,
		Dir + "/" + PayloadFile: s.Payload,
	}
}
