package main

import (
	"fmt"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

type reportCmd struct {
	Folder string `arg:"" name:"run-folder" help:"The run's folder (results/<run>)."`
}

// Run rewrites the files made from a run's results.json (bench.txt,
// summary.txt, results.csv, results.md, report.html) in its folder.
func (c *reportCmd) Run(std streams) error {
	run, err := loadRun("run-folder", c.Folder)
	if err != nil {
		return err
	}
	f := record.Folder{Dir: c.Folder}
	if err := report.Render(f, run); err != nil {
		return fmt.Errorf("report on %s: %w", c.Folder, err)
	}
	fmt.Fprintf(std.Stdout, "wrote %s, %s, %s, %s and %s\n", f.Path("bench.txt"), f.Path("summary.txt"), f.Path("results.csv"),
		f.Path("results.md"), f.Path("report.html"))
	return nil
}
