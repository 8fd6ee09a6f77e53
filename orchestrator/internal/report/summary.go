package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// WriteSummary writes summary.txt: per cell, the ranking with its spread,
// efficiency and flags, the server capacity ranking where the load tool
// could not keep up, and how long each round spent beyond its load.
func WriteSummary(w io.Writer, a analysis.Run) error {
	var b strings.Builder
	for i, c := range a.Cells {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "== %s\n\n", c.Name)
		if c.Floor {
			b.WriteString(analysis.FloorCaption + ":\n")
		}
		fmt.Fprintf(&b, "ranking by the load tool (%s), medians of %s:\n", c.Tool, roundsText(c))
		writeRows(&b, c.Floor, c.Load.Rows, c.Unit)
		if c.Capacity.Rows != nil {
			b.WriteString("\nserver capacity: " + analysis.CapacityCaption + ":\n")
			writeRows(&b, false, c.Capacity.Rows, c.Unit) // a capacity measurement is about throughput
		}
		for _, n := range append(c.Notes, c.CapacityLeftOut...) {
			b.WriteString("! " + n + "\n")
		}
		for _, n := range c.Capacity.Verdicts {
			b.WriteString("! server capacity: " + n + "\n")
		}
		noiseLine(&b, "load ranking", c.Load.Noise)
		levelsLines(&b, "load ranking", c.Load.Levels)
		noiseLine(&b, "server capacity", c.Capacity.Noise)
		levelsLines(&b, "server capacity", c.Capacity.Levels)
		warmupLine(&b, c.Load.Rows)
		if o := c.Overheads; len(o) > 0 {
			fmt.Fprintf(&b, "overhead per round beyond warm-up and measurement (start, readiness, gate, clients, stats): median %.2f s, max %.2f s over %d rounds\n",
				stats.Median(o), slices.Max(o), len(o))
		}
	}
	writeSLO(&b, a)
	writeGate(&b, a.Gate)
	b.WriteString(legend)
	_, err := io.WriteString(w, b.String())
	return err
}

// noiseLine says how much of the rounds' spread the machine's state put
// on every server of a round alike and how much is each server's own: the
// paired tests cancel the first, so the second sets the gaps they resolve.
func noiseLine(b *strings.Builder, ranking string, n *stats.Noise) {
	if n != nil {
		fmt.Fprintf(b, "round-to-round noise of the %s: %.1f%% shared by every server of a round, %.1f%% each server's own (%d servers, %d rounds); the paired tests see the own part only\n",
			ranking, 100*n.Shared, 100*n.Own, n.Servers, n.Rounds)
	}
}

// levelsLines split a ranking's noise by level, from the load's series,
// and say how Kalibera & Jones' formula would split a server's time at
// those levels.
func levelsLines(b *strings.Builder, ranking string, l *analysis.Levels) {
	if l == nil {
		return
	}
	fmt.Fprintf(b, "noise of the %s by level: %.1f%% within a round (a %.1f s window's mean, from its intervals; %d windows), %.1f%% between rounds (each server's containers, beyond the window's part), %.1f%% shared by every server of a round; between runs: compare measures it\n",
		ranking, 100*l.Interval, l.Window, l.Windows, 100*l.Round, 100*l.Shared)
	fmt.Fprintf(b, "a server's time (Kalibera & Jones, %s): each round costs %.1f s beyond its window; %s of %.1f s spread a server's mean by %.1f%%, %s of %.1f s would spread it by %.1f%% in the same time\n",
		ranking, l.Cost, roundsCount(l.Now.Rounds), l.Now.Window, 100*l.Now.Spread, roundsCount(l.Best.Rounds), l.Best.Window, 100*l.Best.Spread)
}

func roundsCount(n float64) string {
	if n == 1 {
		return "1 round"
	}
	return fmt.Sprintf("%.0f rounds", n)
}

// warmupLine lists how long each row's rounds warmed up (medians), when
// the steady-state rule ended their warm-ups.
func warmupLine(b *strings.Builder, rows []analysis.Row) {
	var parts []string
	auto := false
	for _, r := range rows {
		auto = auto || r.WarmupCapped > 0 || r.WarmupSteady > 0
		text := fmt.Sprintf("%s %.1f s", r.Name, r.Warmup.Seconds())
		if r.WarmupCapped > 0 {
			text += fmt.Sprintf(" (%d of %d rounds at GRPC_BENCHMARK_WARMUP_MAX)", r.WarmupCapped, r.RPS.N)
		}
		parts = append(parts, text)
	}
	if auto {
		b.WriteString("warm-ups until steady (medians of the rounds): " + escape.Text(strings.Join(parts, ", ")) + "\n")
	}
}

const legend = `
Columns: group: rows that share a letter cannot be told apart (every pair tested, see the notes).
stack and library: what the server is built on, as its server.json declares it: the library and
its version, then, after "on", the gRPC implementation under it when the library is a framework.
req/s is the median of the rounds, with its interval and that interval's confidence: the range
of the rounds (min–max) below 6 rounds, which holds the median with confidence 1 − 2·0.5^n
(75% at 3 rounds, 87.5% at 4), from 6 rounds on the 95% confidence interval of the median
(benchstat's, no assumption on the distribution). CV is the rounds' standard deviation over
their mean. CPU is percent of one core (cgroup CPU time over wall time); req/s per core
divides req/s by the server's CPU. Latencies are medians of the rounds' percentiles. A streaming
cell counts messages (msg/s): a ping-pong's round trips, a server stream's replies, a client
stream's requests, each with its latency (h2; ghz times whole calls). Throttled
is the share of CFS periods in which the CPU quota stopped the server / the client.
Flags: client-bound (the client used 90% of its CPU limit or was throttled in 10% of its periods:
the row measures the client, and its req/s, marked ≥, is a lower bound of the server's), failures
(more than 1% of calls failed), steal (the host's hypervisor took more than 5% of its CPU time in
a round), busy-host (other work than the server and its client kept more than 0.3 of the host's
cores busy in a round), unsteady (a round's window was not steady, by the trend over its
intervals: such rounds are left out of the row, and a row with no steady round is not tested).
`

// writeRows writes a ranking whose rates count unit, its latency columns
// first in a floor-latency cell.
func writeRows(b *strings.Builder, floor bool, rows []analysis.Row, unit string) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cols ...string) { fmt.Fprintln(tw, strings.Join(latencyFirst(floor, cols, 4, 10), "\t")+"\t") }
	line("group", "server", "stack", "library", "tool", unit, "interval", "CV", "server cpu", unit+" per core", "p50", "p99", "p99.9", "memory", "throttled", "flags")
	for _, r := range rows {
		cpu, perCore, mem := serverFigures(r)
		stack, library := builtOn(r)
		line(r.Group, r.Name, stack, library, strings.Join(r.Tools, "+"), rpsText(r), intervalText(r.RPS), fmt.Sprintf("%.1f%%", 100*r.RPS.CV), cpu, perCore,
			ms(r.P50), ms(r.P99), ms(r.P999), mem, fmt.Sprintf("%.0f%%/%.0f%%", 100*r.ServerThrottled, 100*r.ClientThrottled), flags(r))
	}
	tw.Flush()
}

// builtOn is a row's stack and library as text, "-" for a run recorded
// before servers declared them.
func builtOn(r analysis.Row) (stack, library string) {
	if r.Library == "" {
		return "-", "-"
	}
	return escape.Text(r.Stack), escape.Text(r.Library)
}

func flags(r analysis.Row) string {
	var f []string
	if r.ClientBound {
		f = append(f, "client-bound")
	}
	if r.ErrorShare() > analysis.ErrorShareMark {
		f = append(f, "failures")
	}
	if r.StealRounds > 0 {
		f = append(f, "steal")
	}
	if r.BusyHostRounds > 0 {
		f = append(f, "busy-host")
	}
	if r.Unsteady || r.UnsteadyRounds > 0 {
		f = append(f, "unsteady")
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, ",")
}

// intervalText is an interval with its confidence: "980–1020 (min–max, 75%)".
func intervalText(e stats.Estimate) string {
	if e.N < 2 {
		return "-"
	}
	return fmt.Sprintf("%.0f–%.0f (%s)", e.Lo, e.Hi, e.Interval)
}

func ms(d time.Duration) string {
	if d == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func roundsText(c analysis.Cell) string {
	if c.Rounds == 1 {
		return "1 round"
	}
	return fmt.Sprintf("%d rounds", c.Rounds)
}
