package analysis_test

import (
	"slices"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Every pair is tested, not neighbours chained: c and a differ by 10% in
// every round, b is too noisy to tell from either; and the rounds are
// blocks, so the round-to-round swing all three share does not hide c's
// lead, as it would from a test that ignores the rounds.
func TestJudgeTestsEveryPairWithRoundsAsBlocks(t *testing.T) {
	shared := []float64{1, 1.2, 0.9, 1.1, 0.95}
	scaled := func(base float64, own ...float64) []float64 {
		out := make([]float64, len(shared))
		for i, e := range shared {
			out[i] = base * e * own[i]
		}
		return out
	}
	cell := cellOf(
		server("a", 100, scaled(100, 1, 1, 1, 1, 1)...),
		server("b", 100, scaled(105, 1.08, 0.93, 1.06, 0.92, 1.03)...),
		server("c", 100, scaled(110, 1.002, 0.998, 1.001, 0.999, 1)...),
	)
	rows := analysis.LoadRanking(cell)
	a := analysis.Judge(analysis.DesignOf(record.Run{}), rows)
	if got := names(rows); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Fatalf("ranking = %v", got)
	}
	var letters []string
	for _, r := range rows {
		letters = append(letters, r.Group)
	}
	if !slices.Equal(letters, []string{"a", "ab", "b"}) {
		t.Errorf("groups = %v, want a, ab, b: c apart from a, b like both (pairs %+v)", letters, a.Pairs)
	}
	if d := stats.Compare(rows[2].Values, rows[0].Values); d.Significant {
		t.Errorf("the unpaired U test separates a and c too (p = %.3f): the case shows nothing", d.P)
	}
}

// capacityRun is a cell whose servers the capacity tool (h2) measured in
// every round (bound, whose load tool was client-bound, and kept_up), in
// one round only (once), or never (capacity_off).
func capacityRun() record.Run {
	// capacity measures the first len(rps) rounds with h2; bound marks the
	// load tool client-bound in every round.
	capacity := func(s record.Server, bound bool, rps ...float64) record.Server {
		for i := range s.Rounds {
			s.Rounds[i].ClientBound = bound
			if i < len(rps) {
				m := measured(rps[i], 100)
				m.Load.Tool = "h2"
				s.Rounds[i].Capacity = &m
			} else {
				s.Rounds[i].CapacityFailure = "h2 exited with code 1"
			}
		}
		return s
	}
	return record.Run{ID: "capacity", Cells: []record.Cell{cellOf(
		capacity(server("bound", 100, 30000, 31000, 32000), true, 90000, 95000, 91000),
		capacity(server("kept_up", 100, 20000, 21000, 22000), false, 25000, 24000, 26000),
		capacity(server("once", 100, 30000, 30500, 31000), true, 80000), // the capacity tool's only round counts alone
		server("capacity_off", 100, 30000, 30500, 31000),                // never measured by it
	)}}
}

func TestCapacityRanking(t *testing.T) {
	cell := capacityRun().Cells[0]
	rows := analysis.CapacityRanking(cell)
	if got := names(rows); !slices.Equal(got, []string{"bound", "once", "kept_up"}) {
		t.Fatalf("capacity ranking = %v, want bound, once, kept_up", got)
	}
	for _, r := range rows {
		if !slices.Equal(r.Tools, []string{"h2"}) {
			t.Errorf("capacity row %s mixes tools: %v", r.Name, r.Tools)
		}
	}
	if rows[0].RPS.Median != 91000 || rows[2].RPS.Median != 25000 || rows[1].RPS.N != 1 {
		t.Errorf("rows = %+v", rows)
	}
	wantNotes := []string{
		"once: server capacity from 1 of 3 rounds, fewer than the others': round 2: h2 exited with code 1",
		"capacity_off: not in the server capacity ranking, no round has a capacity measurement",
	}
	if got := analysis.CapacityNotes(cell, rows); !slices.Equal(got, wantNotes) {
		t.Errorf("capacity notes =\n%q\nwant\n%q", got, wantNotes)
	}
	if got := names(analysis.LoadRanking(cell)); !slices.Equal(got, []string{"bound", "once", "capacity_off", "kept_up"}) {
		t.Errorf("the load tool's ranking = %v", got)
	}
	if analysis.CapacityRanking(cellOf(server("x", 100, 1))) != nil {
		t.Error("a cell without capacity measurements has a capacity ranking")
	}
}
