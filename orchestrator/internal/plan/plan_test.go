package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// TestLoadSpecCarriesTheCallKind: the spec a tool gets says the kind of
// calls its scenario makes, beside the cell's shape.
func TestLoadSpecCarriesTheCallKind(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_CLIENT_QPS": "100", "GRPC_LOAD_ARRIVALS": "poisson"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cell := record.Cell{Connections: 2, Concurrency: 8, ClientCPUs: 1.5}
	spec := LoadSpec(cfg, cell, &scenario.Scenario{Kind: scenario.ServerStreaming}, 3*time.Second)
	if spec.Kind != scenario.ServerStreaming || spec.Connections != 2 || spec.Concurrency != 8 || spec.QPS != 100 ||
		spec.Arrivals != load.ArrivalsPoisson || spec.Duration != 3*time.Second || spec.Warmup != cfg.Warmup || spec.CPUs != 1.5 {
		t.Errorf("spec %+v", spec)
	}
}

// unaryTool drives unary calls only.
type unaryTool struct{ load.Tool }

func (unaryTool) Name() string           { return "unary-only" }
func (unaryTool) Kinds() []scenario.Kind { return []scenario.Kind{scenario.Unary} }

// TestDrivesIsABadSetting: a tool that does not drive a scenario's kind is
// refused as the setting that chose it, with the value and the scenario.
func TestDrivesIsABadSetting(t *testing.T) {
	scenarios := []*scenario.Scenario{{Name: "plain", Kind: scenario.Unary}, {Name: "stream", Kind: scenario.BidiStreaming}}
	if err := Drives("GRPC_LOAD_TOOL", unaryTool{}, scenarios[:1]); err != nil {
		t.Errorf("unary scenario refused: %v", err)
	}
	err := Drives("GRPC_LOAD_TOOL", unaryTool{}, scenarios)
	var bad *config.Error
	if !errors.As(err, &bad) || bad.Var != "GRPC_LOAD_TOOL" || bad.Value != "unary-only" || bad.Allowed == "" ||
		!strings.Contains(bad.Reason, "scenario stream") || !strings.Contains(bad.Reason, "bidi-streaming") {
		t.Errorf("Drives = %#v", err)
	}
}
