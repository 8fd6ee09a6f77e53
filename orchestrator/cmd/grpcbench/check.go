package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/grpcbench/grpcbench/orchestrator/internal/check"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

type checkCmd struct {
	Root string `help:"The repository." default:"." type:"existingdir"`
}

// Run builds every server of GRPC_BENCHMARKS (default: all) for every
// scenario (or those of GRPC_REQUEST_SCENARIO) and passes each through the conformance gate under each
// GRPC_SERVER_CPUS; check.txt and check.json go to the run folder.
func (c *checkCmd) Run(ctx context.Context, std streams) error {
	s, err := session.Open(ctx, c.Root, std.Stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	// Every scenario, unless GRPC_REQUEST_SCENARIO names some.
	names := s.Catalog.Scenarios
	if slices.ContainsFunc(s.Run.Settings, func(st config.Setting) bool { return st.Name == "GRPC_REQUEST_SCENARIO" && st.Given }) {
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
	chk := &check.Check{Hosts: s.SuiteHosts(), Builder: s.Builder(), ClientBuilder: s.ClientBuilder(), Config: s.Config, Cells: check.ByServerCPUs(s.Run.Cells), Folder: s.Folder, Out: progress.Plain(std.Stdout)}
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
