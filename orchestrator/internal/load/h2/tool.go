// Package h2 is this project's load tool: gRPC unary calls written straight
// onto HTTP/2 frames, several times cheaper per call than ghz, so that the
// client is seldom what limits a fast server.
package h2

import (
	"context"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// name is the tool's name in the settings and the records.
const name = "h2"

func init() { load.Register(tool{}) }

type tool struct{}

func (tool) Name() string { return name }
func (tool) Help() string {
	return "this project's HTTP/2 load tool, several times cheaper per call than ghz"
}
func (tool) Image() string          { return "" }
func (tool) Kinds() []scenario.Kind { return []scenario.Kind{scenario.Unary} }
func (tool) Client(spec load.Spec, _ *scenario.Scenario) (load.Client, error) {
	return load.LoadgenClient(name, spec)
}
func (tool) Parse(stdout []byte, _ load.Spec, _, _ time.Time) (load.Result, error) {
	return load.ParseLoadgen(stdout)
}
func (tool) Run(ctx context.Context, spec load.Spec) (load.Result, error) { return Run(ctx, spec) }
