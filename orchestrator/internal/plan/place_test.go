package plan

import (
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		engine         int
		server, client config.CPUs
		want           record.Placement
	}{
		{2, 1, 1, record.Placement{ServerCPUSet: "0", ClientCPUSet: "1"}},
		{2, 0.5, 1, record.Placement{ServerCPUSet: "0", ClientCPUSet: "1"}},
		{8, 2, 3, record.Placement{ServerCPUSet: "1-2", ClientCPUSet: "3-5"}},
		{3, 1, 1, record.Placement{ServerCPUSet: "1", ClientCPUSet: "2"}},
		{4, 1, 2, record.Placement{ServerCPUSet: "1", ClientCPUSet: "2-3"}},
		{2, 1.5, 1, record.Placement{Shared: true}},
		{2, 2, 1, record.Placement{Shared: true}},
	} {
		if got := Place(tc.engine, tc.server, tc.client); got != tc.want {
			t.Errorf("Place(%d, %v, %v) = %+v, want %+v", tc.engine, tc.server, tc.client, got, tc.want)
		}
	}
}
