package report

import "github.com/grpcbench/grpcbench/orchestrator/internal/record"

// The 1a load shape, one connection with one call in flight, measures no
// contention: its latency is the server's floor, and its req/s only one
// over that latency. Its ranking table reads as latency: the heading says
// so, and p50, p99 and p99.9 come first.
const (
	floorProfile = "1a"
	floorCaption = "floor latency, one call in flight (1 connection × 1 call; req/s is one over the mean latency)"
)

// isFloor says the cell measures floor latency.
func isFloor(c record.Cell) bool { return c.Profile == floorProfile }

// latencyFirst reorders a table row's columns for a floor-latency cell:
// the three latency columns, from p50 on, right after the column at tool.
func latencyFirst(c record.Cell, cols []string, tool, p50 int) []string {
	if !isFloor(c) {
		return cols
	}
	out := append([]string{}, cols[:tool+1]...)
	out = append(out, cols[p50:p50+3]...)
	out = append(out, cols[tool+1:p50]...)
	return append(out, cols[p50+3:]...)
}
