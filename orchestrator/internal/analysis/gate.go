package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// A gate run (bench --baseline REF) has each server's row beside its
// baseline's, server@REF, measured in the same rounds one right after the
// other. Its verdict per server and figure is a paired one-sided t-test
// on the per-round log ratios, candidate over baseline, of "the candidate
// is slower"; the familywise error over every test of the run (every
// server, cell and figure) is held at stats.Alpha by Holm's step-down.
// Holm rather than Benjamini–Hochberg: a gate's claim is per server ("this
// change made go_grpc slower"), which a false discovery rate does not
// hold for each; and where one server regresses among many, the typical
// case, both reject at the same first step (p ≤ α/m), so Holm costs
// nothing there. A server ranked at the baseline that fails now is a
// regression without a test.

// Figures a gate tests.
const (
	GateRPS      = "req/s"
	GateCapacity = "capacity req/s"
)

// Gate is a gate run's verdicts.
type Gate struct {
	Ref, Commit string
	// Threshold is the slowdown the power is stated for.
	Threshold float64
	Tests     []GateTest
	// Tested counts the tests Holm runs over; Regressions the servers
	// (per cell) found slower or failing now.
	Tested, Regressions int
}

// GateTest is one server's figure in one cell, candidate against
// baseline: the rounds paired, the ratio of candidate over baseline with
// its one-sided lower bound, the one-sided p of "slower", the per-round
// log ratios' spread (stats.Slower).
type GateTest struct {
	Cell, Server, Figure string
	stats.Slower
	// Power is the chance that a true slowdown of Threshold is flagged, at
	// the spread of the cell's pairs and Holm's first level (α/m): the
	// least a single regression among the tests gets.
	Power     float64 `json:"power"`
	Regressed bool    `json:"regressed"`
	// Untested says why the figure was not tested (client-bound, unsteady,
	// too few rounds, not ranked); FailsNow that the candidate is not
	// ranked where the baseline is.
	Untested string `json:"untested,omitempty"`
	FailsNow string `json:"fails_now,omitempty"`
}

// gateOf judges a gate run's analysed cells; nil for a run without a
// baseline.
func (a Run) gateOf() *Gate {
	var cells []gateCell
	for _, c := range a.Cells {
		cells = append(cells, gateCell{c.Name, c.Record, c.Load.Rows, c.Capacity.Rows})
	}
	return gate(a.Record.Baseline, cells)
}

// GateOf judges a gate run from its record alone: its rows, without the
// tests between every pair of them that Of makes (a catalog's are
// thousands).
func GateOf(run record.Run) *Gate {
	var cells []gateCell
	for _, c := range run.Cells {
		cells = append(cells, gateCell{plan.Of(c).Name(), c, LoadRanking(c), CapacityRanking(c)})
	}
	return gate(run.Baseline, cells)
}

// gateCell is what a gate reads of a cell: its name, its record, and the
// rows of its rankings.
type gateCell struct {
	name           string
	record         record.Cell
	load, capacity []Row
}

// gate judges the cells of a run with a baseline.
func gate(b *record.Baseline, cells []gateCell) *Gate {
	if b == nil {
		return nil
	}
	g := &Gate{Ref: b.Ref, Commit: b.Commit, Threshold: b.Threshold}
	for _, c := range cells {
		g.Tests = append(g.Tests, cellTests(c)...)
	}
	var ps []float64
	var tested []int
	for i, t := range g.Tests {
		if t.Untested == "" && t.FailsNow == "" {
			ps = append(ps, t.P)
			tested = append(tested, i)
		}
	}
	g.Tested = len(tested)
	for k, reject := range stats.Holm(ps, stats.Alpha) {
		g.Tests[tested[k]].Regressed = reject
	}
	g.power()
	regressed := map[[2]string]bool{}
	for _, t := range g.Tests {
		if t.Regressed || t.FailsNow != "" {
			regressed[[2]string{t.Cell, t.Server}] = true
		}
	}
	g.Regressions = len(regressed)
	return g
}

// cellTests pairs each server of a cell with its baseline's row.
func cellTests(c gateCell) []GateTest {
	var out []GateTest
	for _, base := range c.record.Servers {
		if base.Of == "" {
			continue
		}
		cand, ok := c.record.Server(base.Of)
		if !ok {
			continue
		}
		if base.Ranked() && !cand.Ranked() {
			out = append(out, GateTest{Cell: c.name, Server: cand.Name, Figure: GateRPS, FailsNow: FailureText(cand)})
			continue
		}
		for _, f := range []struct {
			name string
			rows []Row
		}{{GateRPS, c.load}, {GateCapacity, c.capacity}} {
			cr, br := rowNamed(f.rows, cand.Name), rowNamed(f.rows, base.Name)
			if cr == nil || br == nil {
				if f.name == GateRPS {
					out = append(out, GateTest{Cell: c.name, Server: cand.Name, Figure: f.name, Untested: "not ranked in both rows"})
				}
				continue
			}
			out = append(out, pairTest(c.name, cand.Name, f.name, *cr, *br))
		}
	}
	return out
}

func rowNamed(rows []Row, name string) *Row {
	i := slices.IndexFunc(rows, func(r Row) bool { return r.Name == name })
	if i < 0 {
		return nil
	}
	return &rows[i]
}

// pairTest is the one-sided paired t-test of a candidate's row against
// its baseline's, over the rounds both have.
func pairTest(cell, server, figure string, cand, base Row) GateTest {
	t := GateTest{Cell: cell, Server: server, Figure: figure}
	switch {
	case cand.ClientBound || base.ClientBound:
		t.Untested = "client-bound: the load tool's figure, not the server's"
		return t
	case cand.Unsteady || base.Unsteady:
		t.Untested = "unsteady: no steady round"
		return t
	}
	t.Slower = stats.SlowerOf(pairedLogs(cand, base))
	if t.N < stats.MinRounds {
		t.Untested = fmt.Sprintf("%d rounds in common, fewer than %d", t.N, stats.MinRounds)
	}
	return t
}

// pairedLogs are the log ratios, candidate over baseline, of the rounds
// both rows have.
func pairedLogs(cand, base Row) []float64 {
	var logs []float64
	for i, r := range cand.Rounds {
		j := slices.Index(base.Rounds, r)
		if j >= 0 && cand.Values[i] > 0 && base.Values[j] > 0 {
			logs = append(logs, math.Log(cand.Values[i]/base.Values[j]))
		}
	}
	return logs
}

// power states each test's power to flag a slowdown of the threshold: at
// the spread of the log ratios pooled over the tests of its figure in its
// cell, and Holm's first level.
func (g *Gate) power() {
	if g.Tested == 0 || g.Threshold <= 0 {
		return
	}
	level := stats.Alpha / float64(g.Tested)
	effect := -math.Log1p(-g.Threshold)
	pooled := map[[2]string]float64{}
	for _, t := range g.Tests {
		if t.Untested != "" || t.FailsNow != "" {
			continue
		}
		pooled[[2]string{t.Cell, t.Figure}] = 0
	}
	for key := range pooled {
		var ss, df float64
		for _, t := range g.Tests {
			if t.Untested == "" && t.FailsNow == "" && t.Cell == key[0] && t.Figure == key[1] {
				ss += t.Spread * t.Spread * float64(t.N-1)
				df += float64(t.N - 1)
			}
		}
		pooled[key] = math.Sqrt(ss / df)
	}
	for i := range g.Tests {
		t := &g.Tests[i]
		if sd, ok := pooled[[2]string{t.Cell, t.Figure}]; ok && t.Untested == "" && t.FailsNow == "" {
			t.Power = stats.PowerT(float64(t.N-1), sd/math.Sqrt(float64(t.N)), effect, level, 0)
		}
	}
}
