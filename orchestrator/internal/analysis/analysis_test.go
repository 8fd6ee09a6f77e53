package analysis_test

import (
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

var update = flag.Bool("update", false, "rewrite the golden files and the fixture runs of testdata from the current output")

// recordedRun is the folder of the run report's tests render too: a real
// run's record (of layout 2), cut down to a few servers.
var recordedRun = filepath.Join("..", "report", "testdata", "run")

// fixtures are the runs built here that report's tests render as well:
// they read them from testdata/runs/<name>, which TestFixtureRunsAreSaved
// keeps as the builders build them (it runs before the tests that read
// them, so that -update rewrites the runs first).
var fixtures = map[string]func(*testing.T) record.Run{
	"sweep":    sweepRun,
	"tls":      func(*testing.T) record.Run { return tlsRun() },
	"capacity": func(*testing.T) record.Run { return capacityRun() },
}

// TestFixtureRunsAreSaved: each fixture run's results.json is what its
// builder builds (-update rewrites it).
func TestFixtureRunsAreSaved(t *testing.T) {
	for name, build := range fixtures {
		f := record.Folder{Dir: t.TempDir()}
		if err := record.Save(f, build(t)); err != nil {
			t.Fatal(err)
		}
		testfiles.Golden(t, filepath.Join(fixtureDir(name), "results.json"), testfiles.Read(t, f.Path("results.json")), *update)
	}
}

// fixtureDir is the folder of a fixture run.
func fixtureDir(name string) string { return filepath.Join("testdata", "runs", name) }

// TestTablesGolden writes the tables analysis.Of builds of the recorded
// run, the sweep run and the TLS run, as report's tests read them, and
// compares each with its golden file: what every writer renders.
func TestTablesGolden(t *testing.T) {
	for name, dir := range map[string]string{"recorded": recordedRun, "sweep": fixtureDir("sweep"), "tls": fixtureDir("tls")} {
		run, err := record.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		testfiles.Golden(t, filepath.Join("testdata", "golden", name+".txt"), tablesText(analysis.Of(run)), *update)
	}
}

// tablesText is a run's tables, one line a row, pair, note or point, its
// figures to 6 significant digits.
func tablesText(a analysis.Run) string {
	var b strings.Builder
	d := a.Design
	fmt.Fprintf(&b, "design: fixed %v, looks %v at levels %v, margin %v\n", d.Fixed, d.Looks, floats(d.Levels), d.Margin)
	for _, c := range a.Cells {
		fmt.Fprintf(&b, "\n== cell %s: %s by %s, %d rounds, streams %v, floor %v\n", c.Name, c.Unit, c.Tool, c.Rounds, c.Streams, c.Floor)
		rankingText(&b, "load", c.Load)
		rankingText(&b, "capacity", c.Capacity)
		lines(&b, "note", c.Notes)
		lines(&b, "capacity left out", c.CapacityLeftOut)
		if c.Libraries != "" {
			fmt.Fprintf(&b, "%s\n", c.Libraries)
		}
		fmt.Fprintf(&b, "overheads: %s\n", floats(c.Overheads))
	}
	for _, sw := range a.Sweeps {
		fmt.Fprintf(&b, "\n== sweep of cell %d, %s: by %s, objective %q\n", sw.Cell, sw.Name, sw.Tool, sw.SLO.String())
		for _, p := range sw.Points {
			fmt.Fprintf(&b, "point %s at %s (cell %d): target %s, achieved %s, p99 %s, pooled %v, meets %v, mark %q\n",
				p.Server, p.Rate, p.Cell, num(p.Target), num(p.Row.RPS.Median), p.Row.P99, p.Row.Pooled, p.Meets(), p.Mark())
			if v := p.Verdict; v != nil {
				fmt.Fprintf(&b, "  verdict: met %v, %s %s ≤ %s over %d calls, pooled %v, why %q\n", v.Met, sw.SLO.Percentile, v.Percentile, v.Upper, v.Calls, v.Pooled, v.Why)
			}
		}
		if o := sw.Objective; o != nil {
			for _, r := range o.Rows {
				fmt.Fprintf(&b, "objective %s: group %q, met at %s, bracket %s–%s, figure %s\n", r.Name, r.Group, r.Met.Rate, num(r.Lo()), num(r.Hi()), num(r.Figure()))
			}
			lines(&b, "objective none", o.None)
			lines(&b, "objective note", o.Notes)
		}
	}
	for _, tab := range a.TLS {
		fmt.Fprintf(&b, "\n== TLS cost of %s, by %s\n", tab.Name, tab.By)
		for _, c := range tab.Costs {
			fmt.Fprintf(&b, "cost %s: client-bound %v\n  req/s %s\n  CPU per call %s\n", c.Name, c.ClientBound, tlsFigureText(c.RPS), tlsFigureText(c.CPUPerCall))
		}
		lines(&b, "note", tab.Notes)
	}
	return b.String()
}

// rankingText writes a ranking's rows with their flags, its pairs, its
// verdicts and its noise.
func rankingText(b *strings.Builder, name string, r analysis.Ranking) {
	for _, row := range r.Rows {
		e := row.RPS
		fmt.Fprintf(b, "%s row %s: group %q, median %s, interval %s–%s (%s), CV %s, n %d, tools %v%s\n", name, row.Name, row.Group,
			num(e.Median), num(e.Lo), num(e.Hi), e.Interval, num(e.CV), e.N, row.Tools, flags(row))
		fmt.Fprintf(b, "  mean %s, p50 %s, p99 %s, server CPU %s%%, client CPU %s%%, %d bytes, %s per core\n",
			row.Mean, row.P50, row.P99, num(row.ServerCPU), num(row.ClientCPU), row.MemoryBytes, num(row.PerServerCore))
	}
	for _, p := range r.Analysis.Pairs {
		fmt.Fprintf(b, "%s pair %s, %s: %s, n %d, ratio %s (%s–%s), p %s, %s at %d\n", name, p.A, p.B, p.Test, p.N,
			num(p.Ratio), num(p.Lo), num(p.Hi), num(p.P), p.Verdict, p.Look)
	}
	lines(b, name+" verdict", r.Verdicts)
	if n := r.Noise; n != nil {
		fmt.Fprintf(b, "%s noise: shared %s, own %s, %d servers, %d rounds\n", name, num(n.Shared), num(n.Own), n.Servers, n.Rounds)
	}
}

// flags are what a row is marked with.
func flags(r analysis.Row) string {
	var out []string
	add := func(on bool, format string, args ...any) {
		if on {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(r.ClientBound, "client-bound")
	add(r.Failed > 0, "%d of %d calls failed (%s)", r.Failed, r.Calls, r.Failures)
	add(r.StatsMissing > 0, "stats missing in %d rounds", r.StatsMissing)
	add(r.OOMKills > 0, "%d OOM kills", r.OOMKills)
	add(r.StealRounds > 0, "steal in %d rounds", r.StealRounds)
	add(r.BusyHostRounds > 0, "busy host in %d rounds (up to %s cores)", r.BusyHostRounds, num(r.MaxOtherCores))
	add(len(r.Notes) > 0, "tool notes %q", r.Notes)
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, ", ")
}

func tlsFigureText(f analysis.TLSFigure) string {
	p := f.Pair
	return fmt.Sprintf("off %s, on %s, ratio %s; %s, n %d, %s–%s, p %s, %s", num(f.Off), num(f.On), num(f.Ratio()),
		p.Test, p.N, num(p.Lo), num(p.Hi), num(p.P), p.Verdict)
}

func lines(b *strings.Builder, name string, texts []string) {
	for _, s := range texts {
		fmt.Fprintf(b, "%s: %s\n", name, s)
	}
}

// num is a figure to 6 significant digits, and one within 1e-12 of 0 as
// 0: what floating point leaves alike on every platform (a spread of
// equal ratios comes out as 0 or a rounding error).
func num(v float64) string {
	if math.Abs(v) < 1e-12 {
		v = 0
	}
	return fmt.Sprintf("%.6g", v)
}

func floats(v []float64) string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = num(f)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestDesignOf: a record without a design had fixed rounds; one with a
// design was tested by it, as DesignRecord keeps it.
func TestDesignOf(t *testing.T) {
	if got := analysis.DesignOf(record.Run{}); !reflect.DeepEqual(got, stats.Fixed(0, 0)) {
		t.Errorf("no design: %+v, want a fixed one", got)
	}
	auto := stats.Design{Looks: []int{3, 6}, Levels: []float64{0.01, 0.04}, Margin: 0.05}
	if got := analysis.DesignOf(record.Run{Design: analysis.DesignRecord(auto)}); !reflect.DeepEqual(got, auto) {
		t.Errorf("design %+v, want the run's %+v", got, auto)
	}
}

// measured is a round's figures at rps, the server at cpu percent of a
// core: every call OK, a mean latency of 1 ms and a p99 of 4 ms, 10 MiB,
// the client at 40%.
func measured(rps, cpu float64) record.Measurement {
	calls := uint64(rps * 30)
	latency := record.Latency{Count: calls, Mean: time.Millisecond, P90: 2 * time.Millisecond, P95: 3 * time.Millisecond, P99: 4 * time.Millisecond}
	return record.Measurement{
		Load:   &record.Result{Tool: "ghz", Requests: calls, OK: calls, Statuses: map[string]uint64{"OK": calls}, RPS: rps, Latency: latency},
		Server: record.Usage{Samples: 30, CPUAvgPercent: cpu, CPUMaxPercent: cpu + 10, MemoryAvgBytes: 10 << 20},
		Client: record.Usage{Samples: 30, CPUAvgPercent: 40},
	}
}

// server is a server measured once per value of rps, at cpu percent.
func server(name string, cpu float64, rps ...float64) record.Server {
	s := record.Server{Name: name}
	for i, v := range rps {
		s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: measured(v, cpu)})
	}
	return s
}

// cellOf is a cell of the servers, one core each for the server and its
// client.
func cellOf(servers ...record.Server) record.Cell {
	return record.Cell{Scenario: "complex_proto", ServerCPUs: 1, ClientCPUs: 1, Connections: 50, Concurrency: 1000, Servers: servers}
}

// names lists the rows' servers.
func names(rows []analysis.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Name)
	}
	return out
}
