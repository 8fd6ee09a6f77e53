package report_test

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

// TestSweepOutputsGolden writes every text file of the sweep run (the
// recorded run swept at 25%, 50%, 90% and 120% of capacity with the
// objective p99<10ms) and compares each with its golden file.
func TestSweepOutputsGolden(t *testing.T) {
	run := fixture(t, "sweep")
	for name, write := range map[string]func(io.Writer, analysis.Run) error{
		"sweep_bench.txt": report.WriteBench, "sweep_summary.txt": report.WriteSummary,
		"sweep_results.md": report.WriteMarkdown, "sweep_results.csv": report.WriteCSV,
	} {
		var b bytes.Buffer
		if err := write(&b, analysis.Of(run)); err != nil {
			t.Fatal(err)
		}
		golden(t, name, b.String())
	}
}

// TestAFailedRateIsListed (Why 8): a server killed at a rate is listed at
// it with its reason in results.md, and as not sustained in results.csv.
func TestAFailedRateIsListed(t *testing.T) {
	run := fixture(t, "sweep")
	last := &run.Cells[len(run.Cells)-1] // 120%
	srv := &last.Servers[slices.IndexFunc(last.Servers, func(s record.Server) bool { return s.Name == "node_grpcjs_st" })]
	srv.Rounds[1] = record.Round{Round: 2, TargetRPS: srv.Rounds[1].TargetRPS, Failure: &record.Failure{Phase: "load", Reason: "server exited with code 137 (killed: out of memory at the 512m limit)"}}
	srv.Rounds = srv.Rounds[:2]
	a := analysis.Of(run)
	var md, csv bytes.Buffer
	if err := report.WriteMarkdown(&md, a); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteCSV(&csv, a); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| node_grpcjs_st | 120% | 17040 | 13774 |") || !strings.Contains(md.String(), "failed: round 2, load failed: server exited with code 137") {
		t.Error("results.md does not list the failed rate with its reason")
	}
	if !strings.Contains(csv.String(), ",120%,17040.0,false\n") {
		t.Error("results.csv does not list the failed rate as not sustained")
	}
}
