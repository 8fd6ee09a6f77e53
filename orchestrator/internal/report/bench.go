package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
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
func WriteBench(w io.Writer, run record.Run) error {
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
	writeSLO(&b, run)
	writeTLSCosts(&b, run)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCell(b *strings.Builder, run record.Run, c record.Cell) {
	rule := strings.Repeat("-", ruleLength) + "\n"
	b.WriteString(rule)
	fmt.Fprintf(b, rowFormat, "name", c.RateUnit(), "avg. latency", "90 % in", "95 % in", "99 % in", "avg. cpu", "avg. memory")
	b.WriteString(rule)
	rows := Ranking(c)
	analysis := Judge(run, rows)
	for _, r := range rows {
		cpu, mem := fmt.Sprintf("%.2f%%", r.ServerCPU), mebibytes(r.MemoryBytes)
		if r.ServerStats == 0 {
			cpu, mem = "n/a", "n/a" // no reading: not a measured zero
		}
		fmt.Fprintf(b, rowFormat, r.Name, rpsText(r),
			millis(r.Mean), millis(r.P90), millis(r.P95), millis(r.P99), cpu, mem)
	}
	b.WriteString(rule)
	for _, n := range notes(run, c, rows, analysis) {
		b.WriteString("! " + n + "\n")
	}
	if l := librariesNote(c); l != "" {
		b.WriteString("! " + l + "\n")
	}
	b.WriteString("Benchmark Execution Parameters:\n")
	b.WriteString(commitLine(run) + "\n")
	for _, s := range c.Settings {
		fmt.Fprintf(b, "- %s=%s\n", s.Name, s.Value)
	}
	if run.RoundTrip != nil {
		fmt.Fprintf(b, "- network round trip between the client's and the servers' machines: %.3f ms (median of 20 TCP handshakes)\n",
			float64(*run.RoundTrip)/float64(time.Millisecond))
	}
}

// notes lists what a reader must know beside the numbers: servers that
// failed, rows with failed calls, client-bound rows, notes of the load tools,
// which rows can be told apart, an interrupted run.
func notes(run record.Run, c record.Cell, rows []RankingRow, a stats.Analysis) []string {
	var out []string
	for _, s := range c.Servers {
		if s.Unsupported != "" {
			out = append(out, fmt.Sprintf("%s: not supported: %s", s.Name, s.Unsupported))
			continue
		}
		if f := s.FirstFailure(); f != nil {
			out = append(out, fmt.Sprintf("%s: not ranked, %s failed: %s", s.Name, where(*f), f.Reason))
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
				"at its GRPC_CLIENT_CPUS limit; this row measures the client: its req/s (≥) is a lower bound of the server's, "+
				"sorted by that bound and not tested against other rows (see summary.txt for the server's capacity)",
				r.Name, r.ClientCPU, 100*r.ClientThrottled))
		}
		for _, n := range r.Notes {
			out = append(out, r.Name+": "+n)
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
	out = append(out, rateNotes(run, c)...)
	out = append(out, verdicts(run, rows, a)...)
	if run.Seed != 0 {
		out = append(out, fmt.Sprintf("each round visited the servers in a random order from seed %d; GRPC_BENCHMARK_SEED=%d replays it", run.Seed, run.Seed))
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

// librariesNote lists what every server of the cell is built on, ranked
// or not, as its server.json declares it: "libraries: go_grpc grpc-go
// 1.85.0 (Go); ...". It is empty for a run recorded before servers
// declared it.
func librariesNote(c record.Cell) string {
	var parts []string
	for _, s := range c.Servers {
		if s.Library != "" {
			parts = append(parts, fmt.Sprintf("%s %s (%s)", s.Name, s.Built(), s.Stack))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return visible.Text("libraries: " + strings.Join(parts, "; "))
}

// rpsText is a row's median req/s; a client-bound row's is a lower bound
// of the server's, marked ≥.
func rpsText(r RankingRow) string {
	v := strconv.FormatFloat(math.Round(r.RPS.Median), 'f', 0, 64)
	if r.ClientBound {
		return "≥" + v
	}
	return v
}

// conformanceOf is the gate's verdict on a server of the cell.
func conformanceOf(c record.Cell, name string) *probe.Verdict {
	s, _ := c.Server(name)
	return s.Conformance
}

// verdicts says which rows of a ranking can be told apart, by what test,
// and what was claimed of no pair and why.
func verdicts(run record.Run, rows []RankingRow, a stats.Analysis) []string {
	if len(a.Pairs) == 0 {
		return nil
	}
	var out []string
	if n := count(a, stats.TooFewRounds); n == len(a.Pairs) {
		out = append(out, fmt.Sprintf("no two rows are told apart: fewer than %d rounds; the order of the rows is not significant", stats.MinRounds))
	} else {
		out = append(out, "groups: rows that share a letter cannot be told apart: "+groupsText(rows)+"; "+testText(run, a))
	}
	for _, p := range a.Pairs {
		switch {
		case p.Verdict == stats.TooFewRounds && count(a, stats.TooFewRounds) < len(a.Pairs):
			out = append(out, fmt.Sprintf("%s, %s: not compared, %d rounds (fewer than %d)", p.A, p.B, p.N, stats.MinRounds))
		case p.Test == stats.MannWhitney:
			out = append(out, fmt.Sprintf("%s, %s: fewer than %d rounds in common, compared by %s over the rounds of each (p = %.3f)", p.A, p.B, stats.MinRounds, stats.MannWhitney, p.P))
		}
		if p.Verdict == stats.Equivalent {
			out = append(out, fmt.Sprintf("%s, %s: equivalent: %s/%s %.3f–%.3f, within ±%s", p.A, p.B, p.B, p.A, p.Lo, p.Hi, percent(run.DesignOrFixed().Margin)))
		}
	}
	if d := run.DesignOrFixed(); !d.Fixed && len(run.Looks) > 0 {
		out = append(out, fmt.Sprintf("GRPC_BENCHMARK_ROUNDS=auto: looks after rounds %s at level %.4f each (Pocock); %d pairs separated, %d equivalent, %d unresolved; %s",
			intsText(lookRounds(run)), d.Levels[0], count(a, stats.Separated), count(a, stats.Equivalent), count(a, stats.Unresolved), run.StopReason))
	}
	return out
}

// testText says how pairs were tested.
func testText(run record.Run, a stats.Analysis) string {
	d := run.DesignOrFixed()
	level := fmt.Sprintf("at %.0f%%", 100*stats.Alpha)
	if !d.Fixed {
		level = "at each look's level"
	}
	pairs := fmt.Sprintf("the %d pairs", len(a.Pairs))
	if len(a.Pairs) == 1 {
		pairs = "the pair"
	}
	return fmt.Sprintf("%s, rounds as blocks; false discovery rate %s over %s (Benjamini–Hochberg)", stats.PairedT, level, pairs)
}

// groupsText lists each letter's rows: "a: x, y; b: z".
func groupsText(rows []RankingRow) string {
	var letters []rune
	for _, r := range rows {
		for _, l := range r.Group {
			if !slices.Contains(letters, l) {
				letters = append(letters, l)
			}
		}
	}
	var parts []string
	for _, l := range letters {
		var names []string
		for _, r := range rows {
			if strings.ContainsRune(r.Group, l) {
				names = append(names, r.Name)
			}
		}
		parts = append(parts, string(l)+": "+strings.Join(names, ", "))
	}
	return strings.Join(parts, "; ")
}

func count(a stats.Analysis, verdict string) int {
	n := 0
	for _, p := range a.Pairs {
		if p.Verdict == verdict {
			n++
		}
	}
	return n
}

func lookRounds(run record.Run) []int {
	var out []int
	for _, l := range run.Looks {
		out = append(out, l.Rounds)
	}
	return out
}

func intsText(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', -1, 64) + "%" }

// where names the phase, and the round when there are rounds.
func where(f record.Failure) string {
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
