// Package session sets a run up: the settings read and checked against the
// repository and the Docker engine, containers of killed runs removed, the
// run's folder and record started. Nothing is built or started before every
// check has passed.
package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/api/types/system"
	"github.com/grpcbench/grpcbench/orchestrator/internal/bench"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/docker"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
)

// runID is how a run's start time names it.
const runID = "2006-01-02_15-04-05"

// Session is a run, set up.
type Session struct {
	Config  config.Config
	Catalog catalog.Catalog
	Engine  *docker.Engine
	Folder  report.Folder
	// Scenarios are the scenarios of GRPC_REQUEST_SCENARIO, compiled.
	Scenarios map[string]*scenario.Scenario
	// EngineCPUs is the engine host's CPU count.
	EngineCPUs int
	// Local says the engine runs on this host (its unix socket), whose
	// /proc/stat then tells the host's CPU steal.
	Local bool
	// Run is the record's head: id, times, commit, settings, machine.
	Run report.Run

	release func(context.Context) error
}

// self is this process as the owner of a lock.
func self(run string) docker.Owner {
	host, _ := os.Hostname()
	return docker.Owner{Host: host, Boot: bootID(), PID: os.Getpid(), Run: run}
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// alive says whether the owner of a lock still runs: a process of this
// machine and boot, or the container it ran in on this engine. An owner on
// another machine cannot be checked, and counts as alive.
func alive(eng *docker.Engine) func(context.Context, docker.Owner) bool {
	me := self("")
	return func(ctx context.Context, o docker.Owner) bool {
		switch {
		case o.Host == me.Host && o.Boot == me.Boot:
			cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", o.PID))
			return err == nil && strings.Contains(string(cmdline), "grpcbench")
		case eng.Running(ctx, o.Host):
			return true
		default:
			return o.Boot != me.Boot
		}
	}
}

// Open reads the settings (the environment over root/.env), lists the
// repository, connects to the engine, checks the settings against both,
// removes containers that killed runs left, and creates the run folder with
// hardware.txt. out receives what the user should know.
func Open(ctx context.Context, root string, out io.Writer) (*Session, error) {
	// Values that do not parse are listed with every other problem, after
	// the checks that need the engine.
	cfg, parseErr := config.Load(filepath.Join(root, ".env"))
	return openWith(ctx, root, cfg, parseErr, nil, out)
}

// Resume sets up the rest of the interrupted run in dir: its settings as
// it recorded them (not the environment's), its folder, and its record
// less the rounds the interruption cut short, which run again.
func Resume(ctx context.Context, root, dir string, out io.Writer) (*Session, error) {
	prior, err := report.Load(dir)
	if err != nil {
		return nil, &config.Error{Var: "--resume", Value: dir, Reason: err.Error(), Allowed: "the folder of a run that was interrupted"}
	}
	vars := map[string]string{}
	for _, st := range prior.Settings {
		vars[st.Name] = st.Value
	}
	cfg, parseErr := config.Parse(vars)
	prior.Dir = dir
	return openWith(ctx, root, cfg, parseErr, &prior, out)
}

func openWith(ctx context.Context, root string, cfg config.Config, parseErr error, prior *report.Run, out io.Writer) (*Session, error) {
	var cfgErr *config.Error
	if parseErr != nil && !errors.As(parseErr, &cfgErr) {
		return nil, parseErr
	}
	cat, err := catalog.Open(root)
	if err != nil {
		return nil, err
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return nil, errors.Join(parseErr, err) // bad input first: it is what the user can fix at once
	}
	s, err := open(ctx, cfg, parseErr, cat, eng, prior, out)
	if err != nil {
		eng.Close()
		return nil, err
	}
	return s, nil
}

func open(ctx context.Context, cfg config.Config, parseErr error, cat catalog.Catalog, eng *docker.Engine, prior *report.Run, out io.Writer) (*Session, error) {
	info, err := eng.Info(ctx)
	if err != nil {
		return nil, err
	}
	facts := config.Facts{Servers: cat.Servers, Scenarios: cat.Scenarios, EngineCPUs: info.NCPU, EngineMemory: info.MemTotal,
		Writable: report.Writable}
	errs := []error{parseErr, cfg.Validate(facts)}
	// The scenarios must compile, and have the shape the suite needs,
	// before anything is built from them.
	scenarios := map[string]*scenario.Scenario{}
	for _, name := range cfg.Scenarios {
		if !slices.Contains(cat.Scenarios, name) {
			continue // refused by Validate
		}
		sc, err := cat.Scenario(ctx, name)
		if err != nil {
			errs = append(errs, &config.Error{Var: "GRPC_REQUEST_SCENARIO", Value: name, Reason: err.Error(),
				Allowed: "a folder of scenarios/ whose helloworld.proto compiles, whose HelloRequest and HelloReply both hold the same message as field 1, and whose payload.json is a HelloRequest"})
		}
		scenarios[name] = sc
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	started := time.Now()
	release, err := eng.Lock(ctx, cfg.ImageName, self(started.Format(runID)), alive(eng))
	if err != nil {
		return nil, err
	}
	s, err := start(ctx, cfg, cat, eng, scenarios, info, started, prior, out)
	if err != nil {
		release(context.WithoutCancel(ctx))
		return nil, err
	}
	s.release = release
	return s, nil
}

// start removes what killed runs left and starts the run's folder and
// record; the run holds its image name's lock.
func start(ctx context.Context, cfg config.Config, cat catalog.Catalog, eng *docker.Engine, scenarios map[string]*scenario.Scenario,
	info system.Info, started time.Time, prior *report.Run, out io.Writer) (*Session, error) {
	// With the lock held, containers of this image name are a dead run's.
	if n, err := eng.RemoveLabelled(ctx, docker.ImagesLabel, cfg.ImageName); err != nil {
		return nil, err
	} else if n > 0 {
		fmt.Fprintf(out, "removed %d containers left behind by an earlier run\n", n)
	}
	s := &Session{Config: cfg, Catalog: cat, Engine: eng, Scenarios: scenarios, EngineCPUs: info.NCPU, Local: eng.Local()}
	if prior != nil {
		s.Folder, s.Run = report.Folder{Dir: prior.Dir}, *prior
		s.Run.Resume()
		if commit := cat.Commit(ctx); commit != prior.Commit {
			fmt.Fprintf(out, "resuming a run of %q with the code of %q\n", prior.Commit, commit)
		}
		return s, nil
	}
	folder, err := report.NewFolder(cfg.ResultsDir, started.Format(runID))
	if err != nil {
		return nil, err
	}
	hw := report.HardwareOf(info)
	if err := report.SaveHardware(folder, hw); err != nil {
		return nil, err
	}
	s.Folder = folder
	s.Run = report.Run{
		ID:       filepath.Base(folder.Dir),
		Started:  started,
		Commit:   cat.Commit(ctx),
		Settings: cfg.All(),
		Hardware: hw,
		Cells:    bench.Cells(cfg, info.NCPU),
	}
	return s, nil
}

// Close gives the lock back and releases the engine.
func (s *Session) Close() error {
	err := s.release(context.Background())
	return errors.Join(err, s.Engine.Close())
}

// Builder builds the run's images.
func (s *Session) Builder() images.Builder {
	return images.Builder{Engine: s.Engine, Catalog: s.Catalog, Name: s.Config.ImageName}
}

// Suite brings the run's servers up, its containers labelled as the run's.
func (s *Session) Suite() *suite.Suite {
	return &suite.Suite{
		Engine: suite.Docker(s.Engine),
		Labels: map[string]string{docker.RunLabel: s.Run.ID, docker.ImagesLabel: s.Config.ImageName},
	}
}

// HostStat is where the engine host's CPU counters are read, "" when the
// engine is not on this host.
func (s *Session) HostStat() string {
	if !s.Local {
		return ""
	}
	return "/proc/stat"
}

// ScenarioList is the run's scenarios in the order given.
func (s *Session) ScenarioList() []*scenario.Scenario {
	var list []*scenario.Scenario
	for _, name := range s.Config.Scenarios {
		list = append(list, s.Scenarios[name])
	}
	return list
}
