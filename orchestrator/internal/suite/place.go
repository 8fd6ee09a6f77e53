package suite

import (
	"fmt"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// Place gives the server and the load client cores of their own when the
// machine has enough whole cores for both: the server the first ones, the
// client the next. Otherwise both float over every core under their quotas,
// and the record says so.
func Place(engineCPUs int, server, client config.CPUs) report.Placement {
	s, c := server.Cores(), client.Cores()
	if s+c > engineCPUs {
		return report.Placement{Shared: true}
	}
	return report.Placement{ServerCPUSet: cpuRange(0, s), ClientCPUSet: cpuRange(s, c)}
}

func cpuRange(first, n int) string {
	if n == 1 {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d-%d", first, first+n-1)
}
