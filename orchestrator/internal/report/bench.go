package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/visible"
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
func WriteBench(w io.Writer, run Run) error {
	var b strings.Builder
	for i, c := range run.Cells {
		if len(run.Cells) > 1 {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "== cell %d of %d: %s\n", i+1, len(run.Cells), c.Name())
		}
		writeCell(&b, run, c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCell(b *strings.Builder, run Run, c Cell) {
	rule := strings.Repeat("-", ruleLength) + "\n"
	b.WriteString(rule)
	fmt.Fprintf(b, rowFormat, "name", "req/s", "avg. latency", "90 % in", "95 % in", "99 % in", "avg. cpu", "avg. memory")
	b.WriteString(rule)
	rows := Ranking(c)
	for _, r := range rows {
		cpu, mem := fmt.Sprintf("%.2f%%", r.ServerCPU), mebibytes(r.MemoryBytes)
		if r.ServerStats == 0 {
			cpu, mem = "n/a", "n/a" // no reading: not a measured zero
		}
		fmt.Fprintf(b, rowFormat, r.Name,
			strconv.FormatFloat(math.Round(r.RPS.Median), 'f', 0, 64),
			millis(r.Mean), millis(r.P90), millis(r.P95), millis(r.P99), cpu, mem)
	}
	b.WriteString(rule)
	for _, n := range notes(run, c, rows) {
		b.WriteString("! " + n + "\n")
	}
	b.WriteString("Benchmark Execution Parameters:\n")
	b.WriteString(run.Commit + "\n")
	for _, s := range c.Settings {
		fmt.Fprintf(b, "- %s=%s\n", s.Name, s.Value)
	}
	if run.RoundTrip != nil {
		fmt.Fprintf(b, "- network round trip between the client's and the servers' machines: %.3f ms (median of 20 TCP handshakes)\n",
			float64(*run.RoundTrip)/float64(time.Millisecond))
	}
}

// notes lists what a reader must know beside the numbers: servers that
// failed, rows with failed calls, client-bound rows, notes of the engines,
// rows that cannot be told apart, noisy rows, an interrupted run.
func notes(run Run, c Cell, rows []Row) []string {
	var out []string
	for _, s := range c.Servers {
		if f := s.FirstFailure(); f != nil {
			out = append(out, fmt.Sprintf("%s: not ranked, %s failed: %s", s.Name, f.where(), f.Reason))
		}
	}
	for _, r := range rows {
		if v := conformanceOf(c, r.Name); v != nil {
			for _, w := range v.Warnings {
				out = append(out, r.Name+": conformance warning: "+w)
			}
		}
		if r.ErrorShare() > errorShareMark {
			out = append(out, fmt.Sprintf("%s: %.1f%% of calls failed (%s); req/s counts OK calls only", r.Name, 100*r.ErrorShare(), r.Failures))
		}
		if r.ClientBound {
			out = append(out, fmt.Sprintf("%s: client-bound: the load client used %.0f%% CPU and its quota throttled it in %.0f%% of its periods, "+
				"at its GRPC_CLIENT_CPUS limit; this row measures the client, not the server (see summary.txt for the server's capacity)",
				r.Name, r.ClientCPU, 100*r.ClientThrottled))
		}
		for _, n := range r.Notes {
			out = append(out, r.Name+": "+n)
		}
		if r.Noisy() {
			out = append(out, fmt.Sprintf("%s: noisy: req/s varied by %.0f%% (CV) over %d rounds", r.Name, 100*r.RPS.CV, r.RPS.N))
		}
		if r.OOMKills > 0 {
			out = append(out, fmt.Sprintf("%s: the OOM killer killed %d of its processes over the rounds (GRPC_SERVER_RAM), yet it answered", r.Name, r.OOMKills))
		}
		if r.StatsMissing > 0 {
			out = append(out, fmt.Sprintf("%s: stats incomplete: no CPU or memory reading in %d of %d rounds; CPU and memory are from the others", r.Name, r.StatsMissing, r.RPS.N))
		}
		if r.StealRounds > 0 {
			out = append(out, fmt.Sprintf("%s: the host's hypervisor took more than %.0f%% of its CPU time in %d of %d rounds", r.Name, 100*HighSteal, r.StealRounds, r.RPS.N))
		}
		if r.BusyHostRounds > 0 {
			out = append(out, fmt.Sprintf("%s: busy host: other work than the server and its client kept more than %.1f cores busy in %d of %d rounds (up to %.2f); its figures may be disturbed", r.Name, BusyHostCores, r.BusyHostRounds, r.RPS.N, r.MaxOtherCores))
		}
	}
	for _, group := range Ties(rows) {
		out = append(out, fmt.Sprintf("%s: cannot be told apart (%s)", strings.Join(group, ", "), tieReason(rows)))
	}
	if run.Interrupted {
		out = append(out, "the run was interrupted: servers and rounds after the last one listed were not measured")
	}
	// Reasons and warnings carry what servers and builds said.
	for i, n := range out {
		out[i] = visible.Text(n)
	}
	return out
}

// conformanceOf is the gate's verdict on a server of the cell.
func conformanceOf(c Cell, name string) *probe.Verdict {
	for _, s := range c.Servers {
		if s.Name == name {
			return s.Conformance
		}
	}
	return nil
}

// tieReason says by what test rows are told apart, for the ranking's
// number of rounds.
func tieReason(rows []Row) string {
	if len(rows) > 0 && rows[0].RPS.N < 4 {
		return fmt.Sprintf("req/s ranges overlap over %d rounds; fewer than 4 rounds a side cannot show a significant difference", rows[0].RPS.N)
	}
	return fmt.Sprintf("Mann–Whitney U, p > %.2f", stats.Alpha)
}

// where names the phase, and the round when there are rounds.
func (f Failure) where() string {
	if f.Round > 0 {
		return fmt.Sprintf("round %d, %s", f.Round, f.Phase)
	}
	return f.Phase
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

// mebibytes writes at most two decimals and no trailing zeros, as
// grpc_bench does (10.8 MiB, 26.01 MiB).
func mebibytes(bytes uint64) string {
	mib := math.Round(float64(bytes)/(1<<20)*100) / 100
	return strconv.FormatFloat(mib, 'f', -1, 64) + " MiB"
}
