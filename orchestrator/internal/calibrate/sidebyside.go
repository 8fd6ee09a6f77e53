// Package calibrate checks the load tools, the instruments of every
// measurement, on real servers: what each costs per call against the same
// server (side by side), and whether one tool, the subject, measures what
// a reference tool measures (accuracy, in alternating rounds).
package calibrate

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

// ToolRun is one tool's run against the shared server under one shape.
type ToolRun struct {
	Tool string `json:"tool"`
	// Profile is the load shape (GRPC_LOAD_PROFILE), "" for the settings'
	// connections and concurrency.
	Profile string `json:"profile,omitempty"`
	record.Measurement
}

// PerCore is requests per second for each core the client kept busy: the
// tool's cost per call, whatever the server does.
func (e ToolRun) PerCore() float64 {
	if e.Client.CPUAvgPercent <= 0 {
		return 0
	}
	return e.Load.RPS / (e.Client.CPUAvgPercent / 100)
}

// Comparison is a comparison of load tools on the servers of one run.
type Comparison struct {
	// Subject is the tool compared with the others.
	Subject string
	// Kit is the run's builders, catalog and harness, with the images of the
	// tools that have their own (Images).
	Kit *session.Kit
	// Cell is the scenario, CPUs and shape the tools run under; profiles
	// given to a comparison replace its shape.
	Cell     record.Cell
	Scenario *scenario.Scenario
	Out      progress.Reporter
}

// Images are the images of the tools that have their own, which the kit
// of a comparison builds.
func Images() []string {
	var out []string
	for _, t := range load.All() {
		if img := t.Image(); img != "" && !slices.Contains(out, img) {
			out = append(out, img)
		}
	}
	return out
}

// Reference is the tool an accuracy comparison checks the subject
// against by default: one that loads the cell and shares no code with the
// subject (a tool of its own image), else any other that loads it.
func (c *Comparison) Reference() string {
	others := slices.DeleteFunc(load.All(), func(t load.Tool) bool { return t.Name() == c.Subject || !c.Loads(t) })
	if i := slices.IndexFunc(others, func(t load.Tool) bool { return t.Image() != "" }); i >= 0 {
		return others[i].Name()
	}
	if len(others) == 0 {
		return c.Subject
	}
	return others[0].Name()
}

// compared are the tools SideBySide runs, in order: the subject, then
// every other registered tool that drives the scenario's call kind.
func (c *Comparison) compared() ([]load.Tool, error) {
	subject, err := c.tool("--tool", c.Subject)
	if err != nil {
		return nil, err
	}
	tools := []load.Tool{subject}
	for _, t := range load.All() {
		if t.Name() != c.Subject && c.Loads(t) {
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// Loads says whether t can load the comparison's cell: drive its call
// kind, and verify the chain when the cell is TLS.
func (c *Comparison) Loads(t load.Tool) bool {
	return load.Drives(t, c.Scenario.Kind) == nil && (t.TLS() || !c.Cell.TLS)
}

// tool is the tool named by a flag, which must drive the scenario's call
// kind, and verify TLS in a TLS cell.
func (c *Comparison) tool(flag, name string) (load.Tool, error) {
	t, ok := load.Lookup(name)
	if !ok {
		return nil, &config.Error{Var: flag, Value: name, Reason: "no such load tool", Allowed: strings.Join(load.Names(load.All()), ", ")}
	}
	if c.Cell.TLS && !t.TLS() {
		return nil, &config.Error{Var: flag, Value: name, Reason: "GRPC_TLS=on: it cannot verify the server's certificate chain",
			Allowed: strings.Join(load.Names(slices.DeleteFunc(load.All(), func(t load.Tool) bool { return !t.TLS() })), ", ")}
	}
	return t, plan.Drives(flag, t, []*scenario.Scenario{c.Scenario})
}

// up builds a server and brings it up; the caller calls Down.
func (c *Comparison) up(ctx context.Context, name string) (*harness.Instance, error) {
	folder, err := c.Kit.Folder.Sub(name)
	if err != nil {
		return nil, err
	}
	img, _, err := images.BuildServer(ctx, c.Kit.Builder, name, c.Scenario, folder, "build.log", c.Out)
	if err != nil {
		return nil, err
	}
	return c.Kit.Harness.Up(ctx, c.Kit.ServerSpec(c.Cell, c.Scenario, name, img.Tag, folder))
}

// SideBySide starts one server and loads it with each tool in turn, all
// with the run's settings, the client on its own cores; with profiles,
// under each of those shapes in turn.
func (c *Comparison) SideBySide(ctx context.Context, server string, profiles []string) ([]ToolRun, error) {
	shapes, err := c.shapes(profiles)
	if err != nil {
		return nil, err
	}
	tools, err := c.compared()
	if err != nil {
		return nil, err
	}
	srv, err := c.up(ctx, server)
	if srv != nil {
		defer srv.Down(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", server, err)
	}
	var rows []ToolRun
	for _, shape := range shapes {
		for _, tool := range tools {
			name := tool.Name()
			c.Out.Printf("%s: loading with %s%s", server, name, shapeText(shape.Profile))
			m, err := srv.Measure(ctx, tool, plan.LoadSpec(c.Kit.Config, shape, c.Scenario, c.Kit.Config.Duration, tool), strings.TrimPrefix(shape.Profile+"-"+name, "-"))
			if err != nil {
				return rows, fmt.Errorf("%s%s: %w", name, shapeText(shape.Profile), err)
			}
			rows = append(rows, ToolRun{Tool: name, Profile: shape.Profile, Measurement: m})
		}
	}
	return rows, nil
}

// shapes are the comparison's cell under each profile; none means the cell
// as it is.
func (c *Comparison) shapes(profiles []string) ([]record.Cell, error) {
	if len(profiles) == 0 {
		return []record.Cell{c.Cell}, nil
	}
	shapes := make([]record.Cell, len(profiles))
	for i, p := range profiles {
		if _, ok := config.Profiles[p]; !ok {
			return nil, &config.Error{Var: "--profiles", Value: p, Reason: "no such profile", Allowed: strings.Join(config.ProfileNames(), ", ")}
		}
		shape := plan.Of(c.Cell).WithProfile(p).Record()
		shape.Settings, shape.Placement = c.Cell.Settings, c.Cell.Placement
		shapes[i] = shape
	}
	return shapes, nil
}

func shapeText(profile string) string {
	if profile == "" {
		return ""
	}
	return " in shape " + profile
}

// WriteTable prints the comparison, one table per shape, each ending with
// the line tracked from run to run, the subject (the first row's tool)
// against each other tool: per-core ratio[ in <shape>]: <subject>/<tool>=<x> ...
// The rates count unit: req/s, or msg/s for a streaming scenario.
func WriteTable(w io.Writer, rows []ToolRun, unit string) error {
	for i, shape := range profilesOf(rows) {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeShape(w, shape, slices.DeleteFunc(slices.Clone(rows), func(r ToolRun) bool { return r.Profile != shape }), unit); err != nil {
			return err
		}
	}
	return nil
}

// profilesOf lists the shapes of rows in the order they were measured.
func profilesOf(rows []ToolRun) []string {
	var shapes []string
	for _, r := range rows {
		if !slices.Contains(shapes, r.Profile) {
			shapes = append(shapes, r.Profile)
		}
	}
	return shapes
}

func writeShape(w io.Writer, shape string, rows []ToolRun, unit string) error {
	if shape != "" {
		fmt.Fprintf(w, "shape %s:\n", shape)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "tool\t%s\tavg. latency\tclient cpu\tclient cpu-seconds\t%s per client core\tserver cpu\t\n", unit, unit)
	per := map[string]float64{}
	for _, r := range rows {
		per[r.Tool] = r.PerCore()
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f ms\t%.1f%%\t%.2f\t%.0f\t%.1f%%\t\n", r.Tool, r.Load.RPS,
			float64(r.Load.Latency.Mean)/1e6, r.Client.CPUAvgPercent, r.Client.CPUSeconds, r.PerCore(), r.Server.CPUAvgPercent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ratio := func(a, b string) string {
		if per[b] == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", per[a]/per[b])
	}
	var ratios []string
	for _, r := range rows[1:] {
		ratios = append(ratios, fmt.Sprintf("%s/%s=%s", rows[0].Tool, r.Tool, ratio(rows[0].Tool, r.Tool)))
	}
	for _, r := range rows {
		if r.Load.ErrorShare() > 0 {
			fmt.Fprintf(w, "! %s: %.2f%% of calls failed (%s)\n", r.Tool, 100*r.Load.ErrorShare(), r.Load.Failures())
		}
	}
	_, err := fmt.Fprintf(w, "per-core ratio%s: %s\n", strings.Replace(shapeText(shape), " in shape", " in", 1), strings.Join(ratios, " "))
	return err
}
