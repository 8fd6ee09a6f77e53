// Package h2 is this project's load tool: gRPC calls of every kind written
// straight onto HTTP/2 frames, several times cheaper per call than ghz, so
// that the client is seldom what limits a fast server. A streaming call is
// counted by its messages: each echo of a bidi ping-pong (a round trip,
// from its request's send), each reply of a server stream (from the one
// before, or the call's start), each request of a client stream (with its
// call's latency).
package h2

import (
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// name is the tool's name in the settings and the records.
const name = "h2"

func init() {
	load.Register(load.Loadgen{ToolName: name, Text: "this project's HTTP/2 load tool, several times cheaper per call than ghz",
		Drives: []scenario.Kind{scenario.Unary, scenario.ClientStreaming, scenario.ServerStreaming, scenario.BidiStreaming}, LoadsOpenLoop: true, EndsWhenSteady: true, RunLoad: Run})
}
