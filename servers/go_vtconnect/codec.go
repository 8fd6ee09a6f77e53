package main

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// vtprotoMessage is a message with protoc-gen-go-vtproto generated helpers.
type vtprotoMessage interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}

// vtCodec is the connect.Codec that vtprotobuf's README asks Connect users to
// write: messages with vtprotobuf helpers go through MarshalVT/UnmarshalVT,
// any other protobuf message (Connect serializes a few of its own, such as
// error details) falls back to protobuf-go. Its name, "proto", makes it
// replace Connect's default binary protobuf codec for the gRPC, gRPC-Web and
// Connect protocols alike.
type vtCodec struct{}

func (vtCodec) Name() string { return "proto" }

func (vtCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case vtprotoMessage:
		return m.MarshalVT()
	case proto.Message:
		return proto.Marshal(m)
	default:
		return nil, fmt.Errorf("failed to marshal, message is %T, want proto.Message", v)
	}
}

func (vtCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case vtprotoMessage:
		return m.UnmarshalVT(data)
	case proto.Message:
		return proto.Unmarshal(data, m)
	default:
		return fmt.Errorf("failed to unmarshal, message is %T, want proto.Message", v)
	}
}
