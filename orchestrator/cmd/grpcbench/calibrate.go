package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/grpcbench/grpcbench/orchestrator/internal/calibrate"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

// comparison opens a session, its kit with the load tools' own images,
// and the comparison of subject with the other load tools over it.
func comparison(ctx context.Context, root, subject string, std streams) (*session.Session, *calibrate.Comparison, error) {
	s, err := openRun(ctx, root, std)
	if err != nil {
		return nil, nil, err
	}
	out := progress.Plain(std.Stdout)
	kit, err := s.Kit(ctx, out, nil, calibrate.Images()...)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	cell := s.Run.Cells[0]
	return s, &calibrate.Comparison{Subject: subject, Kit: kit, Cell: cell, Scenario: s.Scenarios[cell.Scenario], Out: out}, nil
}

type toolsCmd struct {
	Root     string   `help:"The repository." default:"." type:"existingdir"`
	Server   string   `help:"The server to load." default:"go_grpc"`
	Tool     string   `help:"The load tool compared with the others: the ratio line is its cost per call against each." default:"h2" enum:"${tools}"`
	Profiles []string `help:"Load shapes (GRPC_LOAD_PROFILE names) to compare under, each with its own ratio line; none: the settings' shape." enum:"1a,1b,2a,2b,3a,3b"`
}

// Run loads one server with each load tool in turn and prints what each
// costs per call; tools.txt and tools.json go to the run folder.
func (c *toolsCmd) Run(ctx context.Context, std streams) error {
	// The server is checked before the Docker engine is touched or a run
	// folder made.
	cat, err := catalog.Open(c.Root)
	if err != nil {
		return err
	}
	if !slices.Contains(cat.Servers, c.Server) {
		return &config.Error{Var: "--server", Value: c.Server, Reason: "no such server",
			Allowed: "a folder of servers/: " + strings.Join(cat.Servers, ", ")}
	}
	s, cmp, err := comparison(ctx, c.Root, c.Tool, std)
	if err != nil {
		return err
	}
	defer s.Close()
	rows, err := cmp.SideBySide(ctx, c.Server, c.Profiles)
	if err != nil {
		return err
	}
	unit := cmp.Scenario.Kind.RateUnit()
	var table bytes.Buffer
	if err := calibrate.WriteTable(&table, rows, unit); err != nil {
		return err
	}
	fmt.Fprint(std.Stdout, "\n", table.String())
	return saveComparison(s.Folder, cmp.Cell, "tools", table.Bytes(), rows)
}

// renamedCmd is a command's old name: it says the new one, whatever
// arguments came with it.
type renamedCmd struct {
	Args []string `arg:"" optional:"" passthrough:""`
}

func (renamedCmd) Run(kctx *kong.Context) error {
	return &config.Error{Var: "command", Value: strings.Fields(kctx.Command())[0], Reason: "renamed to tools", Allowed: "grpcbench tools (make bench-tools)"}
}

// saveComparison writes a comparison as <name>.txt, the table, and
// <name>.json, its rows with the settings and placement they ran under.
func saveComparison(f record.Folder, cell record.Cell, name string, table []byte, rows any) error {
	if err := f.Write(name+".txt", table); err != nil {
		return err
	}
	return f.WriteJSON(name+".json", struct {
		Settings  []record.Setting `json:"settings"`
		Placement record.Placement `json:"placement"`
		Rows      any              `json:"rows"`
	}{cell.Settings, cell.Placement, rows})
}

type accuracyCmd struct {
	Root     string   `help:"The repository." default:"." type:"existingdir"`
	Profiles []string `help:"Load shapes to compare under (GRPC_LOAD_PROFILE names)." default:"1a,2b,3b" enum:"1a,1b,2a,2b,3a,3b"`
	Rounds   int      `help:"Measurements by each tool per server and shape, in alternating order; the medians are compared." default:"3"`
	Tool     string   `help:"The load tool whose accuracy is measured." default:"h2" enum:"${tools}"`
	Against  string   `help:"The reference tool, or --tool itself to measure how far apart two identical clients land here; by default a tool of its own image that loads the cell (h2load: unary plaintext calls only), else another that does (ghz)."`
}

// Run compares --tool with --against on every server of GRPC_BENCHMARKS
// (default: all) under each profile; accuracy.txt and accuracy.json go to
// the run folder and are rewritten after each server.
func (c *accuracyCmd) Run(ctx context.Context, std streams) error {
	if c.Rounds < 1 || c.Rounds > 20 {
		return &config.Error{Var: "--rounds", Value: strconv.Itoa(c.Rounds), Allowed: "a whole number from 1 to 20"}
	}
	s, cmp, err := comparison(ctx, c.Root, c.Tool, std)
	if err != nil {
		return err
	}
	defer s.Close()
	if c.Against == "" {
		c.Against = cmp.Reference()
	}
	var table bytes.Buffer
	save := func(rows []calibrate.AccuracyRow) error {
		table.Reset()
		if err := calibrate.WriteAccuracyTable(&table, c.Tool, cmp.Scenario.Kind.RateUnit(), rows); err != nil {
			return err
		}
		return saveComparison(s.Folder, cmp.Cell, "accuracy", table.Bytes(), rows)
	}
	if _, err := cmp.Accuracy(ctx, s.Config.Servers(s.Catalog.Servers), c.Against, c.Profiles, c.Rounds, save); err != nil {
		return err
	}
	fmt.Fprint(std.Stdout, "\n", table.String())
	return nil
}
