// Package plan is the experiment the settings describe: the matrix of
// cells (scenarios, server CPUs, load profiles, TLS, rates and a latency
// objective's probes), where each cell's containers go on the cores, the
// load a cell puts on a server, and how its rankings are tested. The
// benchmark, the conformance check and the load tool comparison all build
// from it.
package plan

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
)

// LoadSpec is the load of a cell on its scenario by tool, measured for
// duration. Under GRPC_BENCHMARK_WARMUP=auto a tool that can ends its
// warm-up by the steady-state rule, within GRPC_BENCHMARK_WARMUP_MAX;
// one that cannot warms up for all of it.
func LoadSpec(cfg config.Config, cell record.Cell, sc *scenario.Scenario, duration time.Duration, tool load.Tool) load.Spec {
	spec := load.Spec{Kind: sc.Kind, Connections: cell.Connections, Concurrency: cell.Concurrency, QPS: cfg.QPS,
		Arrivals: load.Arrivals(cfg.Arrivals), Warmup: cfg.WarmupCap(), Duration: duration, CPUs: cell.ClientCPUs}
	if cfg.Warmup.Auto && tool.SteadyWarmup() {
		rule := steady.Default
		spec.Steady = &rule
	}
	return spec
}

// ScenarioNames lists the scenarios of cells, once each, in order.
func ScenarioNames(cells []record.Cell) []string {
	var names []string
	for _, c := range cells {
		if !slices.Contains(names, c.Scenario) {
			names = append(names, c.Scenario)
		}
	}
	return names
}

// Drives refuses a load tool, named by the setting that chose it, that
// does not drive the call kind of one of the scenarios: before anything is
// built, as a bad setting.
func Drives(setting string, tool load.Tool, scenarios []*scenario.Scenario) error {
	for _, sc := range scenarios {
		if err := load.Drives(tool, sc.Kind); err != nil {
			var kind *load.KindError
			allowed := "a load tool that drives " + string(sc.Kind) + " calls"
			if errors.As(err, &kind) && len(kind.Drivers) > 0 {
				allowed = strings.Join(kind.Drivers, ", ")
			}
			return &config.Error{Var: setting, Value: tool.Name(), Reason: "scenario " + sc.Name + ": " + err.Error(), Allowed: allowed}
		}
	}
	return nil
}
