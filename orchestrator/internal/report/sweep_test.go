package report_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
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
