// Package report writes the files people read from a run's record
// (package record): bench.txt (in grpc_bench's layout, medians over the
// rounds), summary.txt (spread, efficiency and the server capacity
// ranking), results.csv, results.md, report.html with its charts, and
// hardware.txt for the context. The writers read a record.Run and never
// change it.
package report

import (
	"bytes"
	"io"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// Save writes the run's record and what is made from it: results.json
// first (record.Save), so that a file made from it never shows more than
// the record beside it, then summary.txt, bench.txt, results.csv,
// results.md and report.html.
func Save(f record.Folder, run record.Run) error {
	if err := record.Save(f, run); err != nil {
		return err
	}
	return Render(f, run)
}

// Render writes every file made from the run's record: summary.txt,
// bench.txt, results.csv, results.md and report.html (which reads the
// rounds' stats streams from the folder).
func Render(f record.Folder, run record.Run) error {
	html := func(w io.Writer, run record.Run) error { return WriteHTML(w, run, f.Dir) }
	for _, out := range []struct {
		name  string
		write func(io.Writer, record.Run) error
	}{{"summary.txt", WriteSummary}, {"bench.txt", WriteBench}, {"results.csv", WriteCSV}, {"results.md", WriteMarkdown}, {"report.html", html}} {
		var b bytes.Buffer
		if err := out.write(&b, run); err != nil {
			return err
		}
		if err := f.Write(out.name, b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
