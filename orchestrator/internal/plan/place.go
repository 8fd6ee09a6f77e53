package plan

import (
	"fmt"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// Place gives the server and the load client cores of their own when the
// machine has enough whole cores for both: the server the first ones, the
// client the next, and when one more is left, core 0 stays with dockerd and
// the orchestrator, so that neither competes with what is measured.
// Otherwise both float over every core under their quotas, and the record
// says so.
func Place(hostCPUs int, server, client config.CPUs) record.Placement {
	s, c := server.Cores(), client.Cores()
	first := 0
	switch {
	case s+c+1 <= hostCPUs:
		first = 1
	case s+c > hostCPUs:
		return record.Placement{Shared: true}
	}
	return record.Placement{ServerCPUSet: cpuRange(first, s), ClientCPUSet: cpuRange(first+s, c)}
}

func cpuRange(first, n int) string {
	if n == 1 {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, first+n-1)
}

// PlaceApart places a server and its client on machines of their own: each
// on the first cores of its machine, or from core 1 when one is left for
// dockerd, and floating when its machine has fewer cores than it needs.
func PlaceApart(serverMachine, clientMachine int, server, client config.CPUs) record.Placement {
	return record.Placement{ServerCPUSet: alone(serverMachine, server.Cores()), ClientCPUSet: alone(clientMachine, client.Cores())}
}

func alone(machine, n int) string {
	switch {
	case n+1 <= machine:
		return cpuRange(1, n)
	case n <= machine:
		return cpuRange(0, n)
	}
	return ""
}
