// Package plan turns the settings into what a run starts: its cells, how a
// server runs in a cell, and the load a cell puts on it. The benchmark, the
// conformance check and the load tool comparison all build from it.
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
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
)

// ServerSpec is how a server runs in a cell; env is what a variant adds to
// its environment.
func ServerSpec(cfg config.Config, cell record.Cell, name, image string, env []string, sc *scenario.Scenario, folder record.Folder) suite.ServerSpec {
	return suite.ServerSpec{Name: name, Image: image, Env: env, Scenario: sc, CPUs: cell.ServerCPUs, RAM: cfg.ServerRAM,
		ReadyTimeout: cfg.ReadyTimeout, Placement: cell.Placement, Folder: folder, TLS: cell.TLS}
}

// LoadSpec is the load of a cell on its scenario, measured for duration.
func LoadSpec(cfg config.Config, cell record.Cell, sc *scenario.Scenario, duration time.Duration) load.Spec {
	return load.Spec{Kind: sc.Kind, Connections: cell.Connections, Concurrency: cell.Concurrency, QPS: cfg.QPS,
		Arrivals: load.Arrivals(cfg.Arrivals), Warmup: cfg.Warmup, Duration: duration, CPUs: float64(cell.ClientCPUs)}
}

// Cells sets a new run's cells up, the one place a record's cells are
// made (a resume reads them from the record): the product of the
// list-valued settings, each with its footer and its placement on the
// cores of the servers' and the clients' hosts (one host: the same count
// twice).
func Cells(cfg config.Config, serverCPUs, clientCPUs int) []record.Cell {
	var cells []record.Cell
	for _, c := range cfg.Cells(config.Facts{HostCPUs: serverCPUs, ClientCPUs: clientCPUs}) {
		placement := suite.Place(serverCPUs, c.ServerCPUs, c.ClientCPUs)
		if cfg.TwoHosts() {
			placement = suite.PlaceApart(serverCPUs, clientCPUs, c.ServerCPUs, c.ClientCPUs)
		}
		cells = append(cells, record.Cell{Cell: c, Settings: cfg.Settings(c), Placement: placement})
	}
	return cells
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
