package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/bench"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

type benchCmd struct {
	Root string `help:"The repository: servers/, scenarios/ and the Dockerfile of the client image." default:"." type:"existingdir"`
}

func (c *benchCmd) Run(ctx context.Context, std streams) error {
	s, err := session.Open(ctx, c.Root, std.Stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	servers := s.Config.Servers(s.Catalog.Servers)
	fmt.Fprintf(std.Stdout, "grpcbench run %s: %s, results in %s\n", s.Run.ID, strings.Join(servers, " "), s.Folder.Dir)
	b := &bench.Bench{Suite: s.Suite(), Builder: s.Builder(), Config: s.Config, Scenario: s.Scenario, Folder: s.Folder, Run: &s.Run, Out: std.Stdout}
	err = b.Benchmark(ctx, servers)
	if table, readErr := os.ReadFile(s.Folder.Path("bench.txt")); readErr == nil {
		fmt.Fprint(std.Stdout, "\n", string(table))
	}
	if err != nil {
		return err
	}
	var failed []string
	for _, srv := range s.Run.Servers {
		if srv.Failure != nil {
			failed = append(failed, srv.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s (reasons in bench.txt)", errNotRanked, strings.Join(failed, ", "))
	}
	return nil
}

type imagesCmd struct {
	Root string `help:"The repository." default:"." type:"existingdir"`
}

func (c *imagesCmd) Run(ctx context.Context, std streams) error {
	s, err := session.Open(ctx, c.Root, std.Stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	return bench.BuildImages(ctx, s.Builder(), s.Config.Servers(s.Catalog.Servers), s.Scenario, s.Folder, std.Stdout)
}
