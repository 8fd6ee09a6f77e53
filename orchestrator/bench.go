package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/config"
	"github.com/grpcbench/grpcbench/orchestrator/docker"
	"github.com/grpcbench/grpcbench/orchestrator/report"
	"github.com/grpcbench/grpcbench/orchestrator/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/suite"
)

// errNotRanked says that the run finished but some servers failed.
var errNotRanked = errors.New("servers not ranked")

type benchCmd struct {
	Root string `help:"The repository: servers/, scenarios/ and the Dockerfile of the client image." default:"." type:"existingdir"`
}

func (b *benchCmd) Run(ctx context.Context) error {
	s, err := prepare(ctx, b.Root, "")
	if err != nil {
		return err
	}
	defer s.engine.Close()
	fmt.Printf("grpcbench run %s: %s, results in %s\n", s.Run.ID, strings.Join(s.Config.Servers(s.catalog), " "), s.Dir)
	err = s.Benchmark(ctx, s.Config.Servers(s.catalog))
	if bench, readErr := os.ReadFile(filepath.Join(s.Dir, "bench.txt")); readErr == nil {
		fmt.Print("\n", string(bench))
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

func (c *imagesCmd) Run(ctx context.Context) error {
	s, err := prepare(ctx, c.Root, "images")
	if err != nil {
		return err
	}
	defer s.engine.Close()
	return s.BuildImages(ctx, s.Config.Servers(s.catalog))
}

// run is a suite with what prepare learnt on the way.
type run struct {
	*suite.Suite
	engine  *docker.Engine
	catalog config.Catalog
}

// prepare reads and checks the settings, connects to the engine, removes
// containers left by killed runs and creates the results folder. Nothing is
// built or started before every check has passed. dirName names the results
// folder; "" means a new timestamped one.
func prepare(ctx context.Context, root, dirName string) (*run, error) {
	cfg, err := config.Load(filepath.Join(root, ".env"))
	if err != nil {
		return nil, err
	}
	cat, err := catalog(root)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(cat, 0); err != nil {
		return nil, err
	}
	sc, err := scenario.Load(ctx, filepath.Join(root, "scenarios", cfg.Scenario))
	if err != nil {
		return nil, &config.Error{Var: "GRPC_REQUEST_SCENARIO", Value: cfg.Scenario, Reason: err.Error(),
			Allowed: "a folder of scenarios/ whose helloworld.proto compiles and whose payload.json is a HelloRequest"}
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return nil, err
	}
	r, err := newRun(ctx, eng, cfg, cat, sc, root, dirName)
	if err != nil {
		eng.Close()
		return nil, err
	}
	return r, nil
}

// newRun does the checks that need the engine, then sets the run up.
func newRun(ctx context.Context, eng *docker.Engine, cfg config.Config, cat config.Catalog, sc *scenario.Scenario, root, dirName string) (*run, error) {
	info, err := eng.Info(ctx)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(cat, info.NCPU); err != nil {
		return nil, err
	}
	if n, err := eng.RemoveLabelled(ctx, docker.ImagesLabel, cfg.ImageName); err != nil {
		return nil, err
	} else if n > 0 {
		fmt.Printf("removed %d containers left behind by an earlier run\n", n)
	}

	started := time.Now()
	id := started.Format("2006-01-02_15-04-05")
	if dirName == "" {
		dirName = id
	}
	dir := filepath.Join(cfg.ResultsDir, dirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the results folder: %w", err)
	}
	hw := report.HardwareOf(info)
	if err := writeHardware(filepath.Join(dir, "hardware.txt"), hw); err != nil {
		return nil, err
	}
	return &run{engine: eng, catalog: cat, Suite: &suite.Suite{
		Engine:   suite.Docker(eng),
		Config:   cfg,
		Scenario: sc,
		Root:     root,
		Dir:      dir,
		Out:      os.Stdout,
		Run: &report.Run{
			ID:        id,
			Started:   started,
			Commit:    commitLine(ctx, root),
			Settings:  cfg.Settings(),
			Hardware:  hw,
			Placement: suite.Place(info.NCPU, cfg.ServerCPUs, cfg.ClientCPUs),
		},
	}}, nil
}

// catalog lists the servers and scenarios of the repository.
func catalog(root string) (config.Catalog, error) {
	var cat config.Catalog
	var err error
	if cat.Servers, err = subdirs(filepath.Join(root, "servers"), "Dockerfile"); err != nil {
		return cat, err
	}
	cat.Scenarios, err = subdirs(filepath.Join(root, "scenarios"), scenario.ProtoFile)
	return cat, err
}

// subdirs lists the folders of dir that hold the file marker.
func subdirs(dir, marker string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), marker)); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func writeHardware(path string, hw report.Hardware) error {
	var b bytes.Buffer
	if err := report.WriteHardware(&b, hw); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// commitLine is the footer's line on the code that ran, as grpc_bench
// writes it: from git when there is a history, else from the COMMIT file
// the client image carries.
func commitLine(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "log", "-1", "--pretty=format:%h %cD %cn %s").Output()
	if err == nil && len(out) > 0 {
		line := strings.TrimSpace(string(out))
		if dirty, _ := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); len(dirty) > 0 {
			line += " (with uncommitted changes)"
		}
		return line
	}
	if b, ferr := os.ReadFile(filepath.Join(root, "COMMIT")); ferr == nil {
		return strings.TrimSpace(string(b))
	}
	slog.Debug("no commit line", "err", err)
	return "unknown commit (no git history here)"
}

type enginesCmd struct {
	Root   string `help:"The repository." default:"." type:"existingdir"`
	Server string `help:"The server to load." default:"go_grpc"`
}

// Run loads one server with each engine in turn and prints what each
// costs per call; engines.txt and engines.json go to the run folder.
func (c *enginesCmd) Run(ctx context.Context) error {
	s, err := prepare(ctx, c.Root, "")
	if err != nil {
		return err
	}
	defer s.engine.Close()
	rows, err := s.CompareEngines(ctx, c.Server)
	if err != nil {
		return err
	}
	var table bytes.Buffer
	if err := suite.WriteEngineTable(&table, rows); err != nil {
		return err
	}
	fmt.Print("\n", table.String())
	if err := os.WriteFile(filepath.Join(s.Dir, "engines.txt"), table.Bytes(), 0o644); err != nil {
		return err
	}
	return report.WriteJSON(filepath.Join(s.Dir, "engines.json"), struct {
		Settings  []config.Setting  `json:"settings"`
		Placement report.Placement  `json:"placement"`
		Engines   []suite.EngineRow `json:"engines"`
	}{s.Run.Settings, s.Run.Placement, rows})
}

type accuracyCmd struct {
	Root     string   `help:"The repository." default:"." type:"existingdir"`
	Profiles []string `help:"Load shapes to compare under (GRPC_LOAD_PROFILE names)." default:"1a,2b,3b" enum:"1a,1b,2a,2b,3a,3b"`
	Rounds   int      `help:"Measurements by each engine per server and shape, in alternating order; the medians are compared." default:"3"`
	Against  string   `help:"The reference engine: h2load, or h2 itself to measure how far apart two identical clients land here." default:"h2load" enum:"h2load,h2"`
}

// Run compares h2 with h2load on every server of GRPC_BENCHMARKS (default:
// all) under each profile; accuracy.txt and accuracy.json go to the run
// folder and are rewritten after each server.
func (c *accuracyCmd) Run(ctx context.Context) error {
	if c.Rounds < 1 || c.Rounds > 20 {
		return &config.Error{Var: "--rounds", Value: strconv.Itoa(c.Rounds), Allowed: "a whole number from 1 to 20"}
	}
	s, err := prepare(ctx, c.Root, "")
	if err != nil {
		return err
	}
	defer s.engine.Close()
	var table bytes.Buffer
	save := func(rows []suite.AccuracyRow) error {
		table.Reset()
		if err := suite.WriteAccuracyTable(&table, rows); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(s.Dir, "accuracy.txt"), table.Bytes(), 0o644); err != nil {
			return err
		}
		return report.WriteJSON(filepath.Join(s.Dir, "accuracy.json"), struct {
			Settings  []config.Setting    `json:"settings"`
			Placement report.Placement    `json:"placement"`
			Rows      []suite.AccuracyRow `json:"rows"`
		}{s.Run.Settings, s.Run.Placement, rows})
	}
	if _, err := s.CompareAccuracy(ctx, s.Config.Servers(s.catalog), c.Against, c.Profiles, c.Rounds, save); err != nil {
		return err
	}
	fmt.Print("\n", table.String())
	return nil
}

type checkCmd struct {
	Root string `help:"The repository." default:"." type:"existingdir"`
}

// Run builds every server of GRPC_BENCHMARKS (default: all) for every
// scenario and passes each through the conformance gate; check.txt and
// check.json go to the run folder.
func (c *checkCmd) Run(ctx context.Context) error {
	s, err := prepare(ctx, c.Root, "")
	if err != nil {
		return err
	}
	defer s.engine.Close()
	var scenarios []*scenario.Scenario
	for _, name := range s.catalog.Scenarios {
		sc, err := scenario.Load(ctx, filepath.Join(c.Root, "scenarios", name))
		if err != nil {
			return err
		}
		scenarios = append(scenarios, sc)
	}
	rows, err := s.CheckServers(ctx, s.Config.Servers(s.catalog), scenarios)
	var table bytes.Buffer
	if werr := suite.WriteCheckTable(&table, rows); werr != nil {
		return werr
	}
	fmt.Print("\n", table.String())
	if werr := os.WriteFile(filepath.Join(s.Dir, "check.txt"), table.Bytes(), 0o644); werr != nil {
		return werr
	}
	if werr := report.WriteJSON(filepath.Join(s.Dir, "check.json"), rows); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	for _, r := range rows {
		if !r.Passed {
			return fmt.Errorf("%w: see check.txt", errNotRanked)
		}
	}
	return nil
}
