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

// TestSummaryShowsTheCapacityRanking: summary.txt has the server capacity
// ranking, by the capacity tool alone, with its intervals and what it
// leaves out.
func TestSummaryShowsTheCapacityRanking(t *testing.T) {
	var b bytes.Buffer
	if err := report.WriteSummary(&b, analysis.Of(fixture(t, "capacity"))); err != nil {
		t.Fatal(err)
	}
	note := "once: server capacity from 1 of 3 rounds, fewer than the others': round 2: h2 exited with code 1"
	for _, want := range []string{"server capacity", "bound", "h2", "91000", "90000–95000", "min–max", "! " + note} {
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

// TestTooFewCallsForAPercentile: a row whose rounds completed 300 calls
// each cannot show a p99 (histogram.Supports wants 1000): bench.txt says
// n/a in that column, not a latency of 0.00 ms.
func TestTooFewCallsForAPercentile(t *testing.T) {
	bench := writeBench(t, runOf(rounds(seedRows[0], "slow", 10, 10, 10)))
	if !strings.Contains(bench, "29.02 ms |            n/a |") || strings.Contains(bench, "0.00 ms") {
		t.Errorf("a p99 from 300 calls a round is not n/a:\n%s", bench)
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
