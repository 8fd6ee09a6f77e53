package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
)

// The layout of grpc_bench's bench.txt, column for column.
const (
	rowFormat  = "| %-27s | %7s | %14s | %14s | %14s | %14s | %8s | %13s |\n"
	ruleLength = 137
)

// WriteBench writes the ranking of each cell in grpc_bench's layout, with
// medians over the rounds: servers sorted by OK requests per second, then
// `!` notes (servers not ranked and why, rows that cannot be told apart,
// client-bound rows, ...), then the cell's parameters. A run of one cell is
// exactly grpc_bench's file; several cells are sections one after another,
// each under a line naming its cell.
func WriteBench(w io.Writer, a analysis.Run) error {
	var b strings.Builder
	for i, c := range a.Cells {
		if len(a.Cells) > 1 {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "== cell %d of %d: %s\n", i+1, len(a.Cells), c.Name)
		}
		writeCell(&b, a, c)
	}
	writeSLO(&b, a)
	writeTLSCosts(&b, a)
	writeGate(&b, a.Gate)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCell(b *strings.Builder, a analysis.Run, c analysis.Cell) {
	rule := strings.Repeat("-", ruleLength) + "\n"
	b.WriteString(rule)
	fmt.Fprintf(b, rowFormat, "name", c.Unit, "avg. latency", "90 % in", "95 % in", "99 % in", "avg. cpu", "avg. memory")
	b.WriteString(rule)
	for _, r := range c.Load.Rows {
		cpu, mem := fmt.Sprintf("%.2f%%", r.ServerCPU), mebibytes(r.MemoryBytes)
		if r.ServerStats == 0 {
			cpu, mem = "n/a", "n/a" // no reading: not a measured zero
		}
		fmt.Fprintf(b, rowFormat, r.Name, rpsText(r),
			ms(r.Mean), ms(r.P90), ms(r.P95), ms(r.P99), cpu, mem)
	}
	b.WriteString(rule)
	for _, n := range c.Notes {
		b.WriteString("! " + n + "\n")
	}
	if c.Libraries != "" {
		b.WriteString("! " + c.Libraries + "\n")
	}
	b.WriteString("Benchmark Execution Parameters:\n")
	b.WriteString(a.Commit + "\n")
	for _, s := range c.Record.Settings {
		fmt.Fprintf(b, "- %s=%s\n", s.Name, s.Value)
	}
	if rt := a.Record.RoundTrip; rt != nil {
		fmt.Fprintf(b, "- network round trip between the client's and the servers' machines: %.3f ms (median of 20 TCP handshakes)\n",
			float64(*rt)/float64(time.Millisecond))
	}
}

// rpsText is a row's median req/s; a client-bound row's is a lower bound
// of the server's, marked ≥.
func rpsText(r analysis.Row) string {
	v := strconv.FormatFloat(math.Round(r.RPS.Median), 'f', 0, 64)
	if r.ClientBound {
		return "≥" + v
	}
	return v
}

// mebibytes writes at most two decimals and no trailing zeros, as
// grpc_bench does (10.8 MiB, 26.01 MiB).
func mebibytes(bytes uint64) string {
	mib := math.Round(float64(bytes)/(1<<20)*100) / 100
	return strconv.FormatFloat(mib, 'f', -1, 64) + " MiB"
}
