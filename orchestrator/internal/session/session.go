// Package session sets a run up: the settings read and checked against the
// repository and the Docker engine, containers of killed runs removed, the
// run's folder and record started. Nothing is built or started before every
// check has passed.
package session

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sources"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
)

// Session is a run, set up.
type Session struct {
	Config  config.Config
	Catalog catalog.Catalog
	Engine  *docker.Engine
	Folder  report.Folder
	// Scenario is GRPC_REQUEST_SCENARIO, compiled.
	Scenario *scenario.Scenario
	// Run is the record's head: id, times, commit, settings, machine.
	Run report.Run
}

// Open reads the settings (the environment over root/.env), lists the
// repository, connects to the engine, checks the settings against both,
// removes containers that killed runs left, and creates the run folder with
// hardware.txt. out receives what the user should know.
func Open(ctx context.Context, root string, out io.Writer) (*Session, error) {
	cfg, err := config.Load(filepath.Join(root, ".env"))
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Open(root)
	if err != nil {
		return nil, err
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, cfg, cat, eng, out)
	if err != nil {
		eng.Close()
		return nil, err
	}
	return s, nil
}

func open(ctx context.Context, cfg config.Config, cat catalog.Catalog, eng *docker.Engine, out io.Writer) (*Session, error) {
	info, err := eng.Info(ctx)
	if err != nil {
		return nil, err
	}
	facts := config.Facts{Servers: cat.Servers, Scenarios: cat.Scenarios, EngineCPUs: info.NCPU, EngineMemory: info.MemTotal}
	if err := cfg.Validate(facts); err != nil {
		return nil, err
	}
	// The scenario must compile before anything is built from it.
	sc, err := cat.Scenario(ctx, cfg.Scenario)
	if err != nil {
		return nil, &config.Error{Var: "GRPC_REQUEST_SCENARIO", Value: cfg.Scenario, Reason: err.Error(),
			Allowed: "a folder of scenarios/ whose helloworld.proto compiles and whose payload.json is a HelloRequest"}
	}
	if n, err := eng.RemoveLabelled(ctx, docker.ImagesLabel, cfg.ImageName); err != nil {
		return nil, err
	} else if n > 0 {
		fmt.Fprintf(out, "removed %d containers left behind by an earlier run\n", n)
	}
	started := time.Now()
	folder, err := report.NewFolder(cfg.ResultsDir, started.Format("2006-01-02_15-04-05"))
	if err != nil {
		return nil, err
	}
	hw := report.HardwareOf(info)
	if err := report.SaveHardware(folder, hw); err != nil {
		return nil, err
	}
	return &Session{Config: cfg, Catalog: cat, Engine: eng, Folder: folder, Scenario: sc, Run: report.Run{
		ID:        filepath.Base(folder.Dir),
		Started:   started,
		Commit:    cat.Commit(ctx),
		Settings:  cfg.Settings(),
		Hardware:  hw,
		Placement: suite.Place(info.NCPU, cfg.ServerCPUs, cfg.ClientCPUs),
	}}, nil
}

// Close releases the engine.
func (s *Session) Close() error { return s.Engine.Close() }

// Builder builds the run's images.
func (s *Session) Builder() images.Builder {
	return images.Builder{Engine: s.Engine, Catalog: s.Catalog, Name: s.Config.ImageName,
		Sources: sources.Fetcher{Cache: sources.DefaultCache(), Mirror: s.Config.SourceMirror}}
}

// Suite brings the run's servers up, its containers labelled as the run's.
func (s *Session) Suite() *suite.Suite {
	return &suite.Suite{
		Engine:    suite.Docker(s.Engine),
		Labels:    map[string]string{docker.RunLabel: s.Run.ID, docker.ImagesLabel: s.Config.ImageName},
		Placement: s.Run.Placement,
	}
}
