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
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
)

// TestLoadSpecCarriesTheCallKind: the spec a tool gets says the kind of
// calls its scenario makes, beside the cell's shape.
func TestLoadSpecCarriesTheCallKind(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"GRPC_CLIENT_QPS": "100", "GRPC_LOAD_ARRIVALS": "poisson"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cell := record.Cell{Connections: 2, Concurrency: 8, ClientCPUs: 1.5}
	spec := LoadSpec(cfg, cell, &scenario.Scenario{Kind: scenario.ServerStreaming}, 3*time.Second, steadyTool{})
	if spec.Kind != scenario.ServerStreaming || spec.Connections != 2 || spec.Concurrency != 8 || spec.QPS != 100 ||
		spec.Arrivals != load.ArrivalsPoisson || spec.Duration != 3*time.Second || spec.CPUs != 1.5 {
		t.Errorf("spec %+v", spec)
	}
}

// steadyTool ends a warm-up when it is steady, unaryTool does not.
type steadyTool struct{ load.Tool }

func (steadyTool) SteadyWarmup() bool { return true }

func (unaryTool) SteadyWarmup() bool { return false }

// TestLoadSpecWarmsUp: under GRPC_BENCHMARK_WARMUP=auto a tool that can is
// given the steady-state rule and the cap; one that cannot, the cap
// alone; a fixed warm-up is the same for both.
func TestLoadSpecWarmsUp(t *testing.T) {
	auto, err := config.Parse(map[string]string{"GRPC_BENCHMARK_WARMUP_MAX": "45s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := config.Parse(map[string]string{"GRPC_BENCHMARK_WARMUP": "7s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cell, sc := record.Cell{Connections: 1, Concurrency: 1}, &scenario.Scenario{Kind: scenario.Unary}
	if s := LoadSpec(auto, cell, sc, time.Second, steadyTool{}); s.Warmup != 45*time.Second || s.Steady == nil || *s.Steady != steady.Default {
		t.Errorf("auto, a tool that ends its warm-up: warm-up %s, rule %+v", s.Warmup, s.Steady)
	}
	if s := LoadSpec(auto, cell, sc, time.Second, unaryTool{}); s.Warmup != 45*time.Second || s.Steady != nil {
		t.Errorf("auto, a tool that cannot: warm-up %s, rule %+v", s.Warmup, s.Steady)
	}
	for _, tool := range []load.Tool{steadyTool{}, unaryTool{}} {
		if s := LoadSpec(fixed, cell, sc, time.Second, tool); s.Warmup != 7*time.Second || s.Steady != nil {
			t.Errorf("fixed, %T: warm-up %s, rule %+v", tool, s.Warmup, s.Steady)
		}
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
