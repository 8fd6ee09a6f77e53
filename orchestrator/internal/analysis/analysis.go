// Package analysis builds, once, every table a run's record supports: per
// cell the load ranking and the server capacity ranking, each row with its
// medians, interval and group letters and each ranking with its tests and
// noise, the notes a reader must see beside them; the sweeps' points and
// their latency objective's ranking; the TLS cost of each server. The
// writers of package report render these tables and compute nothing; the
// benchmark's looks and compare read them too. It sits between the record
// (what was measured) and the files people read, as benchstat's benchtab
// sits between its statistics and its text.
package analysis

import (
	"cmp"

	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Run is the analysis of one run's record.
type Run struct {
	Record record.Run
	// Commit is the run's commit line, made safe to show: a commit's
	// subject, or a record's, is anyone's text.
	Commit string
	// Design is how the rankings' pairs were tested.
	Design stats.Design
	Cells  []Cell
	// Sweeps are the saturation cells that have rate cells, with each
	// server's points and the objective's ranking.
	Sweeps []Sweep
	// TLS are the TLS cost tables: one per plaintext cell with a TLS twin
	// and kind of measurement.
	TLS []TLSTable
}

// Cell is one cell's tables.
type Cell struct {
	Record record.Cell
	Plan   plan.Cell
	// Name says what sets the cell apart; Unit is what its rates count
	// (req/s, or msg/s in a streaming cell); Tool is its load tool.
	Name, Unit, Tool string
	// Streams says its figures count the messages of streams.
	Streams bool
	// Rounds is the most rounds any of its servers has.
	Rounds int
	// Floor says the cell measures floor latency (profile 1a): its tables
	// show their latencies first.
	Floor bool
	// Load is the ranking by the load tool; Capacity by the capacity
	// tool, with no rows when no round has a capacity measurement.
	Load, Capacity Ranking
	// Notes are what a reader must know beside the load ranking: servers
	// not ranked and why, rows with failed calls, client-bound rows, the
	// tools' notes, the tests' verdicts, an interruption. CapacityLeftOut
	// says which ranked servers the capacity ranking misses or has fewer
	// rounds of. Libraries lists what every server is built on.
	Notes           []string
	CapacityLeftOut []string
	Libraries       string
	// Overheads are the measured rounds' seconds beyond their loads.
	Overheads []float64
}

// Ranking is a ranking's rows, fastest first, with how its pairs were
// tested, the verdicts as text, and the round-to-round noise of its rows.
type Ranking struct {
	Rows     []Row
	Analysis stats.Analysis
	Verdicts []string
	// Noise is the rounds' spread split into the part every server of a
	// round shares and each server's own; nil when the rows cannot give it.
	Noise *stats.Noise
}

// Of analyses a run's record.
func Of(run record.Run) Run {
	a := Run{Record: run, Commit: escape.Text(cmp.Or(run.Commit, "unknown")), Design: DesignOf(run)}
	for _, c := range run.Cells {
		a.Cells = append(a.Cells, a.cell(c))
	}
	a.Sweeps = a.sweeps()
	a.TLS = a.tlsTables()
	return a
}

// DesignOf is the run's design; a record without one had fixed rounds.
func DesignOf(run record.Run) stats.Design {
	d := run.Design
	if d == nil {
		return stats.Fixed(0, 0)
	}
	return stats.Design{Looks: d.Looks, Levels: d.Levels, Margin: d.Margin, Fixed: d.Fixed}
}

// DesignRecord is a design as the record keeps it.
func DesignRecord(d stats.Design) *record.Design {
	return &record.Design{Looks: d.Looks, Levels: d.Levels, Margin: d.Margin, Fixed: d.Fixed}
}

func (a Run) cell(c record.Cell) Cell {
	kind := scenario.Kind(c.Kind)
	out := Cell{Record: c, Plan: plan.Of(c), Unit: kind.RateUnit(), Tool: toolOf(c), Rounds: roundsOf(c),
		Streams: kind != "" && kind != scenario.Unary, Floor: c.Profile == FloorProfile}
	out.Name = out.Plan.Name()
	out.Load = a.ranking(LoadRanking(c))
	if out.Plan.Swept() {
		out.Load = a.rateRanking(c)
	}
	out.Capacity = a.ranking(CapacityRanking(c))
	out.Notes = a.notes(out)
	out.CapacityLeftOut = CapacityNotes(c, out.Capacity.Rows)
	out.Libraries = librariesNote(c)
	out.Overheads = overheads(c)
	return out
}

// ranking tests a ranking's pairs by the run's design and says what it
// found.
func (a Run) ranking(rows []Row) Ranking {
	r := Ranking{Rows: rows, Analysis: Judge(a.Design, rows)}
	r.Verdicts = a.verdicts(rows, r.Analysis)
	_, samples := samplesOf(rows)
	if n, ok := stats.NoiseOf(samples); ok {
		r.Noise = &n
	}
	return r
}

// Record is the ranking's tests as the record keeps them, for a look.
func (r Ranking) Record() record.Analysis {
	var out record.Analysis
	for _, p := range r.Analysis.Pairs {
		out.Pairs = append(out.Pairs, record.Pair{A: p.A, B: p.B, Test: p.Test, N: p.N, Ratio: p.Ratio, Lo: p.Lo, Hi: p.Hi,
			P: p.P, Verdict: p.Verdict, Look: p.Look})
	}
	for _, l := range r.Analysis.Looks {
		out.Looks = append(out.Looks, record.LookLevel{Rounds: l.Rounds, Level: l.Level, Tested: l.Tested, Decided: l.Decided})
	}
	return out
}

// Open names the servers of the ranking's unresolved pairs: those a
// sequential design measures further.
func (r Ranking) Open() []string {
	samples := make([]stats.Sample, len(r.Rows))
	for i, row := range r.Rows {
		samples[i] = stats.Sample{Name: row.Name}
	}
	return r.Analysis.Open(samples)
}

// FloorProfile is the load shape of one connection with one call in
// flight: no contention, so its latency is the server's floor and its
// req/s only one over that latency.
const FloorProfile = "1a"

// FloorCaption heads a floor-latency cell's ranking.
const FloorCaption = "floor latency, one call in flight (1 connection × 1 call; req/s is one over the mean latency)"

// toolOf names the load tool of a cell's rounds.
func toolOf(c record.Cell) string {
	for _, s := range c.Servers {
		for _, r := range s.Rounds {
			if r.Load != nil {
				return r.Load.Tool
			}
		}
	}
	return "none measured"
}

func roundsOf(c record.Cell) int {
	n := 0
	for _, s := range c.Servers {
		n = max(n, len(s.Rounds))
	}
	return n
}

// overheads lists each measured round's time beyond its load.
func overheads(c record.Cell) []float64 {
	var out []float64
	for _, s := range c.Servers {
		for _, r := range s.Rounds {
			if r.Failure == nil && r.Overhead > 0 {
				out = append(out, r.Overhead)
			}
		}
	}
	return out
}
