package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/grpcbench/grpcbench/orchestrator/internal/check"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

type checkCmd struct {
	Root string `help:"The repository." default:"." type:"existingdir"`
}

// Run builds every server of GRPC_BENCHMARKS (default: all) for every
// scenario (or those of GRPC_REQUEST_SCENARIO) and passes each through the conformance gate under each
// GRPC_SERVER_CPUS; check.txt and check.json go to the run folder.
func (c *checkCmd) Run(ctx context.Context, std streams) error {
	s, err := openRun(ctx, c.Root, std)
	if err != nil {
		return err
	}
	defer s.Close()
	// Every scenario, unless GRPC_REQUEST_SCENARIO names some.
	names := s.Catalog.Scenarios
	if s.Config.Given("GRPC_REQUEST_SCENARIO") {
		names = s.Config.Scenarios
	}
	var scenarios []*scenario.Scenario
	for _, name := range names {
		sc, err := s.Catalog.Scenario(ctx, name)
		if err != nil {
			return err
		}
		scenarios = append(scenarios, sc)
	}
	out := progress.Plain(std.Stdout)
	kit, err := s.Kit(ctx, out, nil)
	if err != nil {
		return err
	}
	chk := &check.Check{Kit: kit, Cells: check.ByServerCPUs(s.Run.Cells), Out: out}
	rows, err := chk.Servers(ctx, s.Config.Servers(s.Catalog.Servers), scenarios)
	var table bytes.Buffer
	if werr := check.WriteTable(&table, rows); werr != nil {
		return werr
	}
	fmt.Fprint(std.Stdout, "\n", table.String())
	if werr := s.Folder.Write("check.txt", table.Bytes()); werr != nil {
		return werr
	}
	if werr := s.Folder.WriteJSON("check.json", rows); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Failed() {
			return fmt.Errorf("%w: see check.txt", errNotRanked)
		}
	}
	return nil
}
