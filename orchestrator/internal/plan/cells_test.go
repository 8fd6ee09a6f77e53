package plan_test

import (
	"reflect"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// TestCellsPlacesEachCell sets up the cells of two server CPU limits on
// one host of 4 cores and on two hosts of 4 and 8: each cell is the
// matrix's, with its own footer and its cores on the one machine, or on
// each.
func TestCellsPlacesEachCell(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want []record.Placement
	}{
		{"one host", map[string]string{"GRPC_SERVER_CPUS": "1,2", "GRPC_CLIENT_CPUS": "1"},
			[]record.Placement{{ServerCPUSet: "1", ClientCPUSet: "2"}, {ServerCPUSet: "1-2", ClientCPUSet: "3"}}},
		{"two hosts", map[string]string{"GRPC_SERVER_CPUS": "1,2", "GRPC_CLIENT_CPUS": "1", "GRPC_CLIENT_DOCKER_HOST": "tcp://clients:2375"},
			[]record.Placement{{ServerCPUSet: "1", ClientCPUSet: "1"}, {ServerCPUSet: "1-2", ClientCPUSet: "1"}}},
	} {
		cfg, err := config.Parse(tc.vars, config.Offered(load.Runners()))
		if err != nil {
			t.Fatal(err)
		}
		cells := plan.Cells(cfg, 4, 8)
		if len(cells) != len(tc.want) {
			t.Fatalf("%s: %d cells, want %d", tc.name, len(cells), len(tc.want))
		}
		for i, c := range cells {
			cell := plan.Of(c)
			if cell.ServerCPUs != cfg.ServerCPUs[i] || cell.Record().Scenario != c.Scenario ||
				!reflect.DeepEqual(c.Settings, plan.Settings(plan.Footer(cfg, cell))) || c.Placement != tc.want[i] {
				t.Errorf("%s: cell %d = %+v, want %s CPUs, its footer and placement %+v", tc.name, i, c, cfg.ServerCPUs[i], tc.want[i])
			}
		}
	}
}
