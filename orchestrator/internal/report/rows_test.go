package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// rounds is a server measured once per value of rps, with seed row r's
// other figures.
func rounds(r row, name string, rps ...float64) record.Server {
	s := record.Server{Name: name}
	for i, v := range rps {
		s.Rounds = append(s.Rounds, record.Round{Round: i + 1, Measurement: r.measurement(v)})
	}
	return s
}

func TestWriteBenchShowsMediansAndGroups(t *testing.T) {
	run := runOf(
		rounds(seedRows[0], "a", 100, 110, 105),
		rounds(seedRows[1], "b", 104, 108, 112), // overlaps a
		rounds(seedRows[2], "c", 50, 51, 52),
		rounds(seedRows[3], "d", 30, 60, 45), // noisy
	)
	bench := writeBench(t, run)
	if got := tableNames(bench); !slices.Equal(got, []string{"b", "a", "c", "d"}) {
		t.Errorf("table = %v", got)
	}
	if !strings.Contains(bench, "| b                           |     108 |") || !strings.Contains(bench, "| a                           |     105 |") {
		t.Errorf("the table does not show the medians:\n%s", bench)
	}
	want := []string{
		"! groups: rows that share a letter cannot be told apart: a: b, a, d; b: c, d; paired t-test on per-round log ratios, rounds as blocks; false discovery rate at 5% over the 6 pairs (Benjamini–Hochberg)",
	}
	if got := notes(t, bench); !slices.Equal(got, want) {
		t.Errorf("notes =\n%q\nwant\n%q", got, want)
	}
}

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
	run := runOf(
		rounds(seedRows[0], "a", scaled(100, 1, 1, 1, 1, 1)...),
		rounds(seedRows[1], "b", scaled(105, 1.08, 0.93, 1.06, 0.92, 1.03)...),
		rounds(seedRows[2], "c", scaled(110, 1.002, 0.998, 1.001, 0.999, 1)...),
	)
	rows := analysis.LoadRanking(run.Cells[0])
	a := analysis.Judge(analysis.DesignOf(run), rows)
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

func TestCapacityRanking(t *testing.T) {
	// capacity measures the first len(rps) rounds with h2; bound marks the
	// load tool client-bound in every round.
	capacity := func(s record.Server, bound bool, rps ...float64) record.Server {
		for i := range s.Rounds {
			s.Rounds[i].ClientBound = bound
			if i < len(rps) {
				m := seedRows[0].measurement(rps[i])
				m.Load.Tool = "h2"
				s.Rounds[i].Capacity = &m
			} else {
				s.Rounds[i].CapacityFailure = "h2 exited with code 1"
			}
		}
		return s
	}
	cell := runOf(
		capacity(rounds(seedRows[0], "bound", 30000, 31000, 32000), true, 90000, 95000, 91000),
		capacity(rounds(seedRows[1], "kept_up", 20000, 21000, 22000), false, 25000, 24000, 26000),
		capacity(rounds(seedRows[2], "once", 30000, 30500, 31000), true, 80000), // the capacity tool's only round counts alone
		rounds(seedRows[3], "capacity_off", 30000, 30500, 31000),                // never measured by it
	).Cells[0]
	rows := analysis.CapacityRanking(cell)
	if got := names(rows); !slices.Equal(got, []string{"bound", "once", "kept_up"}) {
		t.Fatalf("capacity ranking = %v, want bound, once, kept_up", got)
	}
	for _, r := range rows {
		if !slices.Equal(r.Tools, []string{"h2"}) {
			t.Errorf("capacity row %s mixes engines: %v", r.Name, r.Tools)
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
	if analysis.CapacityRanking(runOf(rounds(seedRows[0], "x", 1)).Cells[0]) != nil {
		t.Error("a cell without capacity measurements has a capacity ranking")
	}
	var b bytes.Buffer
	if err := report.WriteSummary(&b, analysis.Of(runOf(cell.Servers...))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server capacity", "bound", "h2", "91000", "90000–95000", "min–max", "! " + wantNotes[0]} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary.txt lacks %q:\n%s", want, b.String())
		}
	}
}

// TestMatrixSections: one section per cell, each in seed 001's layout
// under a line naming its cell, with its own parameters.
func TestMatrixSections(t *testing.T) {
	var cells []record.Cell
	for _, sc := range []string{"complex_proto", "string_10B"} {
		for _, cpus := range []config.CPUs{1, 2} {
			settings := []record.Setting{{Name: "GRPC_SERVER_CPUS", Value: cpus.String()}, {Name: "GRPC_REQUEST_SCENARIO", Value: sc}}
			cells = append(cells, record.Cell{Scenario: sc, ServerCPUs: float64(cpus), ClientCPUs: 1, Profile: "2b", Connections: 10, Concurrency: 100,
				Settings: settings, Servers: []record.Server{
					rounds(seedRows[0], "go_grpc", 1000*float64(cpus), 1010*float64(cpus), 990*float64(cpus)),
					rounds(seedRows[1], "rust_tonic_mt", 2000*float64(cpus), 2100*float64(cpus), 1900*float64(cpus)),
				}})
		}
	}
	got := writeBench(t, record.Run{Commit: seedCommit, Cells: cells})
	golden := filepath.Join("testdata", "matrix_bench.txt")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("matrix bench.txt differs from %s:\n%s", golden, testfiles.LineDiff(string(want), got))
	}
}

func TestMissingStatsAndOOMKillsAreNoted(t *testing.T) {
	blind := rounds(seedRows[0], "blind", 100, 101, 102)
	for i := range blind.Rounds {
		blind.Rounds[i].Server = record.Usage{}
	}
	killed := rounds(seedRows[1], "killed", 50, 51, 52)
	killed.Rounds[1].OOMKills = 2
	bench := writeBench(t, runOf(blind, killed))
	if !strings.Contains(bench, "| blind                       |     101 |") || !strings.Contains(bench, "|      n/a |           n/a |") {
		t.Errorf("a row without stats shows figures:\n%s", bench)
	}
	for _, want := range []string{
		"! blind: stats incomplete: no CPU or memory reading in 3 of 3 rounds; CPU and memory are from the others",
		"! killed: the OOM killer killed 2 of its processes over the rounds (GRPC_SERVER_RAM), yet it answered",
	} {
		if !slices.Contains(notes(t, bench), want) {
			t.Errorf("no note %q:\n%s", want, bench)
		}
	}
}
