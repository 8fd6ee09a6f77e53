// Package check passes servers through the conformance gate for every
// scenario and server CPU count, without measuring them: does each build,
// start with the workers the rule asks for, answer, echo, take concurrent
// calls and refuse unknown methods.
package check

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

// Outcome is the gate's verdict on one server under one scenario.
type Outcome struct {
	Server   string      `json:"server"`
	Scenario string      `json:"scenario"`
	CPUs     config.CPUs `json:"server_cpus"`
	// TLS says the gate reached the server over TLS (GRPC_TLS=on).
	TLS    bool   `json:"tls,omitempty"`
	Passed bool   `json:"passed"`
	Phase  string `json:"phase,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Unsupported says why the server's stack does not serve the scenario
	// (its server.json): such a cell is neither built nor run, and not a
	// failure.
	Unsupported string `json:"unsupported,omitempty"`
	// Warnings are the gate's: deviations from the spec it let pass.
	Warnings []string `json:"warnings,omitempty"`
}

// Check is one pass over servers × scenarios.
type Check struct {
	// Kit is the run's builders, catalog and harness.
	Kit *session.Kit
	// Cells give the servers their CPUs, cores and TLS mode, one cell per
	// CPU count and mode (ByServerCPUs); their scenarios are replaced by
	// each of the scenarios checked.
	Cells []record.Cell
	Out   progress.Reporter
}

// ByServerCPUs keeps the first cell of each server CPU count and TLS
// mode, in order: the gate's outcome depends on those, not on the load.
func ByServerCPUs(cells []record.Cell) []record.Cell {
	var kept []record.Cell
	for _, cell := range cells {
		if !slices.ContainsFunc(kept, func(k record.Cell) bool { return k.ServerCPUs == cell.ServerCPUs && k.TLS == cell.TLS }) {
			kept = append(kept, cell)
		}
	}
	return kept
}

// Servers builds every server for every scenario and passes it through the
// conformance gate under each cell's CPUs and TLS mode. Logs go to
// <run>/<scenario>/<server>/, under cpus-<n>/ when there are several
// counts, and under tls/ for the TLS cells.
func (c *Check) Servers(ctx context.Context, servers []string, scenarios []*scenario.Scenario) ([]Outcome, error) {
	var rows []Outcome
	for _, cell := range c.Cells {
		for _, sc := range scenarios {
			for _, name := range servers {
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				rows = append(rows, c.check(ctx, cell, name, sc))
			}
		}
	}
	return rows, nil
}

func (c *Check) check(ctx context.Context, cell record.Cell, name string, sc *scenario.Scenario) Outcome {
	row := Outcome{Server: name, Scenario: sc.Name, CPUs: config.CPUs(cell.ServerCPUs), TLS: cell.TLS}
	if row.Unsupported = c.Kit.Catalog.Unsupported(name, sc.Name, cell.TLS); row.Unsupported != "" {
		c.Out.Printf("%s / %s: %s", label(row, c.severalCPUs()), sc.Name, verdictText(row))
		return row
	}
	warnings, err := c.bringUp(ctx, cell, name, sc)
	row.Passed, row.Warnings = err == nil, warnings
	if err != nil {
		f := harness.FailureOf(err)
		row.Phase, row.Reason = f.Phase, f.Reason
	}
	c.Out.Printf("%s / %s: %s", label(row, c.severalCPUs()), sc.Name, verdictText(row))
	return row
}

// severalCPUs says more than one server CPU count is checked.
func (c *Check) severalCPUs() bool {
	return slices.ContainsFunc(c.Cells, func(k record.Cell) bool { return k.ServerCPUs != c.Cells[0].ServerCPUs })
}

// label names a row's server, with its CPUs when several counts are
// checked, and TLS when the gate reached it over TLS.
func label(r Outcome, severalCPUs bool) string {
	name := r.Server
	if severalCPUs {
		name = fmt.Sprintf("%s (%s CPU)", r.Server, r.CPUs)
	}
	if r.TLS {
		name += " TLS"
	}
	return name
}

// bringUp builds, starts and gates the server; it returns the gate's
// warnings.
func (c *Check) bringUp(ctx context.Context, cell record.Cell, name string, sc *scenario.Scenario) ([]string, error) {
	path := []string{sc.Name, name}
	if cell.TLS {
		path = append([]string{"tls"}, path...)
	}
	if c.severalCPUs() {
		path = append([]string{"cpus-" + config.CPUs(cell.ServerCPUs).String()}, path...)
	}
	folder, err := c.Kit.Folder.Sub(path...)
	if err != nil {
		return nil, err
	}
	img, _, err := images.BuildServer(ctx, c.Kit.Builder, name, sc, folder, "build.log", c.Out)
	if err != nil {
		return nil, err
	}
	cell.Scenario = sc.Name
	srv, err := c.Kit.Harness.Up(ctx, c.Kit.ServerSpec(cell, sc, name, img.Tag, folder))
	srv.Down(ctx)
	if srv.Conformance == nil {
		return nil, err
	}
	return srv.Conformance.Warnings, err
}

// Failed reports whether the server failed the cell: neither passed nor
// unsupported.
func (r Outcome) Failed() bool { return !r.Passed && r.Unsupported == "" }

func verdictText(r Outcome) string {
	if r.Unsupported != "" {
		return "not supported"
	}
	if r.Passed && len(r.Warnings) > 0 {
		return "pass (warning)"
	}
	if r.Passed {
		return "pass"
	}
	return "FAIL (" + r.Phase + ")"
}

// WriteTable prints servers × scenarios, then why each failure failed and
// what each warning says.
func WriteTable(w io.Writer, rows []Outcome) error {
	several := slices.ContainsFunc(rows, func(r Outcome) bool { return r.CPUs != rows[0].CPUs })
	var servers, scenarios []string
	cell := map[[2]string]Outcome{}
	for _, r := range rows {
		name := label(r, several)
		if !slices.Contains(servers, name) {
			servers = append(servers, name)
		}
		if !slices.Contains(scenarios, r.Scenario) {
			scenarios = append(scenarios, r.Scenario)
		}
		cell[[2]string{name, r.Scenario}] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "server")
	for _, sc := range scenarios {
		fmt.Fprint(tw, "\t"+sc)
	}
	fmt.Fprintln(tw)
	for _, srv := range servers {
		fmt.Fprint(tw, srv)
		for _, sc := range scenarios {
			fmt.Fprint(tw, "\t"+verdictText(cell[[2]string{srv, sc}]))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.Unsupported != "" {
			if _, err := fmt.Fprintf(w, "! %s / %s: not supported: %s\n", label(r, several), r.Scenario, escape.Text(r.Unsupported)); err != nil {
				return err
			}
		}
		if r.Failed() {
			if _, err := fmt.Fprintf(w, "! %s / %s: %s failed: %s\n", label(r, several), r.Scenario, r.Phase, escape.Text(r.Reason)); err != nil {
				return err
			}
		}
		for _, warning := range r.Warnings {
			if _, err := fmt.Fprintf(w, "! %s / %s: conformance warning: %s\n", label(r, several), r.Scenario, warning); err != nil {
				return err
			}
		}
	}
	return nil
}
