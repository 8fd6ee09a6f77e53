package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/compare"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// errRegression says that compare --fail-on regression found one.
var errRegression = errors.New("regression")

// errUnfinished says that compare --fail-on regression was given a run
// that did not finish, which it cannot judge.
var errUnfinished = errors.New("cannot judge")

type compareCmd struct {
	A         string `arg:"" name:"run-a" help:"The first run's folder (results/<run>), the baseline."`
	B         string `arg:"" name:"run-b" help:"The second run's folder."`
	FailOn    string `name:"fail-on" help:"Exit with status 4 on: none, or regression (a server ranked in run-a fails in run-b, or is slower beyond --threshold and significantly)." enum:"none,regression" default:"none"`
	Threshold string `help:"The slowdown a regression must exceed, in percent (5%); it covers the drift between two runs that the machine's median shift does not remove." default:"10%"`
	Format    string `help:"Output: text, or json for machines." enum:"text,json" default:"text"`
}

// Run prints every server and cell of either run side by side and, with
// --fail-on regression, fails when a server got slower.
func (c *compareCmd) Run(std streams) error {
	threshold, err := parseThreshold(c.Threshold)
	if err != nil {
		return err
	}
	a, err := loadRun("run-a", c.A)
	if err != nil {
		return err
	}
	b, err := loadRun("run-b", c.B)
	if err != nil {
		return err
	}
	cmp := compare.Runs(a, b, threshold)
	cmp.A, cmp.B = filepath.Base(c.A), filepath.Base(c.B)
	if c.Format == "json" {
		enc := json.NewEncoder(std.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(cmp)
	} else {
		err = compare.WriteText(std.Stdout, cmp)
	}
	if err != nil {
		return err
	}
	if c.FailOn == "regression" && len(cmp.Unfinished) > 0 {
		// A run cut short may miss the very rounds that would regress, and
		// a server it never reached looks like one that fails.
		var which []string
		for _, u := range cmp.Unfinished {
			which = append(which, fmt.Sprintf("run-%s %s", u.Run, u.State))
		}
		return fmt.Errorf("%w: %s; the gate judges finished runs only", errUnfinished, strings.Join(which, ", "))
	}
	if c.FailOn == "regression" && cmp.Regressions > 0 {
		return fmt.Errorf("%w: %d found (a server slower beyond %s, or failing now)", errRegression, cmp.Regressions, c.Threshold)
	}
	return nil
}

// parseThreshold reads a percentage, with or without its sign: "5%", "2.5".
func parseThreshold(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%")), 64)
	if err != nil || v <= 0 || v >= 100 {
		return 0, &config.Error{Var: "--threshold", Value: s, Allowed: "a percentage above 0 and below 100, such as 5%"}
	}
	return v / 100, nil
}

// loadRun reads a run folder named on the command line; a folder that is
// missing or holds no readable record is bad input.
func loadRun(arg, dir string) (record.Run, error) {
	run, err := record.Load(dir)
	if err != nil {
		return run, &config.Error{Var: arg, Value: dir, Reason: err.Error(), Allowed: "a run folder that holds a results.json, such as results/2026-11-30_10-20-20"}
	}
	return run, nil
}
