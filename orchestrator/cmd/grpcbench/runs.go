package main

import (
	"path/filepath"

	"github.com/grpcbench/grpcbench/orchestrator/internal/compare"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

type compareCmd struct {
	A string `arg:"" name:"run-a" help:"The first run's folder (results/<run>)."`
	B string `arg:"" name:"run-b" help:"The second run's folder."`
}

// Run prints, per server ranked in both runs under the same settings, the
// two medians, the change and whether it is significant.
func (c *compareCmd) Run(std streams) error {
	a, err := loadRun("run-a", c.A)
	if err != nil {
		return err
	}
	b, err := loadRun("run-b", c.B)
	if err != nil {
		return err
	}
	return compare.WriteTable(std.Stdout, filepath.Base(c.A), filepath.Base(c.B), compare.Runs(a, b))
}

// loadRun reads a run folder named on the command line; a folder that is
// missing or holds no readable record is bad input.
func loadRun(arg, dir string) (report.Run, error) {
	run, err := report.Load(dir)
	if err != nil {
		return run, &config.Error{Var: arg, Value: dir, Reason: err.Error(), Allowed: "a run folder that holds a results.json, such as results/2026-11-30_10-20-20"}
	}
	return run, nil
}
