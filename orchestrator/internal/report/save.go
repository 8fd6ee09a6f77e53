// Package report writes the files people read from a run's analysis
// (package analysis): bench.txt (in grpc_bench's layout, medians over the
// rounds), summary.txt (spread, efficiency and the server capacity
// ranking), results.csv, results.md, report.html with its charts, and
// hardware.txt for the context. The writers render the analysis's tables
// and compute no figure of their own.
package report

import (
	"bytes"
	"io"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// Save writes the run's record and what is made from it: results.json
// first (record.Save), so that a file made from it never shows more than
// the record beside it, then the files of Render.
func Save(f record.Folder, run record.Run) error {
	if err := record.Save(f, run); err != nil {
		return err
	}
	return Render(f, run)
}

// Files are the files Render writes, in order.
var Files = []string{"summary.txt", "bench.txt", "results.csv", "results.md", "report.html"}

// Render writes every file made from a run's record, from its analysis
// built once: summary.txt, bench.txt, results.csv, results.md and
// report.html (which reads the rounds' samples from the run's folder).
func Render(f record.Folder, run record.Run) error {
	run.Dir = f.Dir
	a := analysis.Of(run)
	for i, write := range []func(io.Writer, analysis.Run) error{WriteSummary, WriteBench, WriteCSV, WriteMarkdown, WriteHTML} {
		var b bytes.Buffer
		if err := write(&b, a); err != nil {
			return err
		}
		if err := f.Write(Files[i], b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
