// Package scenario reads a request scenario: the proto every server of the
// run is built from and the one request, as JSON, that the load sends.
package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
	// CallFile, optional, names the method a scenario calls and how many
	// messages a client stream sends: a scenario without it calls
	// Service/Method.
	CallFile = "call.json"
	Dir      = "scenario"
)

// The method every server implements, which a scenario calls unless its
// CallFile names another.
const (
	Service = "helloworld.Greeter"
	Method  = "SayHello"
)

// FullMethod is the method's HTTP/2 path.
const FullMethod = "/" + Service + "/" + Method

// callFile is the CallFile's content.
type callFile struct {
	// Method is "package.Service/Method".
	Method string `json:"method"`
	// Messages is how many requests a client-streaming or bidi call sends
	// before it half-closes.
	Messages int `json:"messages"`
}

// maxMessages bounds the messages of one call, so that a call's request
// or answer stays a buffer's size.
const maxMessages = 10000

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

// RateUnit is what a rate of this kind counts: calls (grpc_bench's req/s)
// for unary, messages for the streams. The empty kind is unary, as in a
// record from before streaming.
func (k Kind) RateUnit() string {
	if k == "" || k == Unary {
		return "req/s"
	}
	return "msg/s"
}

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
	// Sends and Replies are the messages one call sends and is answered
	// with: 1 and 1 for unary, the CallFile's messages for a client
	// stream and a bidi stream (whose every request is echoed), the
	// payload's `replies` for a server stream.
	Sends, Replies int
	// call is the CallFile's content, when the scenario has one.
	call []byte
}

// FullMethod is the HTTP/2 path of the scenario's method.
func (s *Scenario) FullMethod() string {
	return "/" + string(s.Method.Parent().FullName()) + "/" + string(s.Method.Name())
}

// ServiceMethod is the method as "package.Service.Method", as ghz names it.
func (s *Scenario) ServiceMethod() string { return string(s.Method.FullName()) }

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
	cf, err := s.readCall(dir)
	if err != nil {
		return nil, err
	}
	service, method, _ := strings.Cut(cf.Method, "/")
	d := files[0].FindDescriptorByName(protoreflect.FullName(service))
	svc, _ := d.(protoreflect.ServiceDescriptor)
	if svc == nil {
		return nil, fmt.Errorf("scenario %s: %s has no service %s", s.Name, ProtoFile, service)
	}
	if s.Method = svc.Methods().ByName(protoreflect.Name(method)); s.Method == nil {
		return nil, fmt.Errorf("scenario %s: service %s has no method %s", s.Name, service, method)
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
	if err := s.count(cf.Messages); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	return s, nil
}

// readCall reads the CallFile, or gives the default when there is none.
func (s *Scenario) readCall(dir string) (callFile, error) {
	cf := callFile{Method: Service + "/" + Method}
	b, err := os.ReadFile(filepath.Join(dir, CallFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return cf, nil
	case err != nil:
		return cf, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	s.call = b
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return cf, fmt.Errorf("scenario %s: %s: %w", s.Name, CallFile, err)
	}
	if service, method, ok := strings.Cut(cf.Method, "/"); !ok || service == "" || method == "" {
		return cf, fmt.Errorf("scenario %s: %s: method %q is not package.Service/Method", s.Name, CallFile, cf.Method)
	}
	return cf, nil
}

// count sets how many messages a call sends and is answered with: the
// CallFile says it for the streams the client sends, the payload's
// `replies` for a server stream.
func (s *Scenario) count(messages int) error {
	clientStreams := s.Kind == ClientStreaming || s.Kind == BidiStreaming
	switch {
	case clientStreams && (messages < 1 || messages > maxMessages):
		return fmt.Errorf("%s: a %s call sends \"messages\", 1 to %d, not %d", CallFile, s.Kind, maxMessages, messages)
	case !clientStreams && messages != 0:
		return fmt.Errorf("%s: a %s call sends one request: \"messages\" is for client streams", CallFile, s.Kind)
	}
	s.Sends, s.Replies = 1, 1
	switch s.Kind {
	case ClientStreaming:
		s.Sends = messages
	case BidiStreaming:
		s.Sends, s.Replies = messages, messages
	case ServerStreaming:
		f := s.Method.Input().Fields().ByName("replies")
		if f == nil || f.Kind() != protoreflect.Int32Kind {
			return fmt.Errorf("%s has no int32 replies, the count of a server stream's answers", s.Method.Input().FullName())
		}
		n := s.Request.Get(f).Int()
		if n < 1 || n > maxMessages {
			return fmt.Errorf("%s: replies is %d, where a server stream needs 1 to %d", PayloadFile, n, maxMessages)
		}
		s.Replies = int(n)
	}
	return nil
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
	files := map[string][]byte{
		Dir + "/" + ProtoFile:   s.Proto,
		Dir + "/" + PayloadFile: s.Payload,
	}
	if s.call != nil {
		files[Dir+"/"+CallFile] = s.call
	}
	return files
}
