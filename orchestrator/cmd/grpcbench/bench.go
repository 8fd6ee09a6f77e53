package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/bench"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
)

type benchCmd struct {
	Root         string `help:"The repository: servers/, scenarios/ and the Dockerfile of the client image." default:"." type:"existingdir"`
	Resume       string `help:"Finish the interrupted run in this folder: its finished rounds are kept, the rest run with the settings it was given, on the hosts it used; refused when the code changed since." placeholder:"RUN-FOLDER"`
	ResumeAnyway bool   `help:"With --resume, go on even though the commit, the servers or a server's build context changed since the run started (the record notes what changed)."`
	Baseline     string `help:"A gate: build the selected servers also as this git ref has them (its servers/ and scenarios/), as rows named server@REF, each measured right after or before its server in every round, and test each server against its baseline (paired, one-sided, Holm over every test)." placeholder:"REF"`
	FailOn       string `name:"fail-on" help:"With --baseline, exit with status 4 on: none, or regression (a server slower than its baseline, significantly, or failing where its baseline ranks)." enum:"none,regression" default:"none"`
	Threshold    string `help:"With --baseline, the slowdown the gate states its power for, in percent." default:"10%"`
}

func (c *benchCmd) Run(ctx context.Context, std streams) error {
	open := func() (*session.Session, error) { return openRun(ctx, c.Root, std) }
	if c.Resume != "" {
		open = func() (*session.Session, error) {
			return started(session.Resume(ctx, c.Root, c.Resume, c.ResumeAnyway, std.Stdout))
		}
	} else if c.ResumeAnyway {
		return &config.Error{Var: "--resume-anyway", Value: "true", Reason: "there is no run to resume", Allowed: "only with --resume RUN-FOLDER"}
	}
	threshold, err := parseThreshold(c.Threshold)
	if err != nil {
		return err
	}
	switch {
	case c.Baseline != "" && c.Resume != "":
		return &config.Error{Var: "--baseline", Value: c.Baseline, Reason: "a resumed run measures the baseline it started with", Allowed: "--baseline for a new run only"}
	case c.FailOn == "regression" && c.Baseline == "" && c.Resume == "":
		return &config.Error{Var: "--fail-on", Value: c.FailOn, Reason: "there is no baseline to regress from", Allowed: "regression with --baseline REF; compare RUN-A RUN-B for two runs"}
	}
	if c.Baseline != "" {
		open = func() (*session.Session, error) {
			return started(session.OpenGate(ctx, c.Root, record.Baseline{Ref: c.Baseline, Threshold: threshold}, std.Stdout))
		}
	}
	s, err := open()
	if errors.Is(err, session.ErrFinished) {
		fmt.Fprintf(std.Stdout, "grpcbench: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer s.Close()
	base := s.Baseline()
	if c.FailOn == "regression" && base == nil {
		return &config.Error{Var: "--fail-on", Value: c.FailOn, Reason: "the resumed run has no baseline to regress from", Allowed: "regression for a run of --baseline REF"}
	}
	servers := s.Config.Servers(s.Catalog.Servers)
	fmt.Fprintf(std.Stdout, "grpcbench run %s: %s; %s rounds of %s each, in %d cells; results in %s\n", s.Run.ID, strings.Join(servers, " "),
		s.Config.Rounds, s.Config.RoundDuration(), len(s.Run.Cells), s.Folder.Dir)
	// Under auto, the first look's rounds are planned: the later looks'
	// depend on what they decide.
	rows := servers
	if base != nil {
		for _, name := range servers {
			rows = append(rows, record.BaselineName(name, base.Ref))
		}
		fmt.Fprintf(std.Stdout, "each server also as %s has it, as server@%s, right beside it in every round\n", base.Ref, base.Ref)
	}
	out := progress.New(std.Stdout, bench.Planned(s.Run.Cells, rows, s.Config.FirstRounds()), bench.PerRound(s.Config))
	run, err := benchmark(ctx, s, servers, out)
	out.Close()
	if table, readErr := os.ReadFile(s.Folder.Path("bench.txt")); readErr == nil {
		fmt.Fprint(std.Stdout, "\n", string(table))
		fmt.Fprintf(std.Stdout, "\nthe report with its charts: %s\n", s.Folder.Path("report.html"))
	}
	if err != nil {
		return err
	}
	if g := analysis.GateOf(run); c.FailOn == "regression" && g != nil && g.Regressions > 0 {
		return fmt.Errorf("%w: %d servers slower than at %s or failing now (the gate in bench.txt)", errRegression, g.Regressions, base.Ref)
	}
	var failed []string
	for _, c := range run.Cells {
		for _, srv := range c.Servers {
			if !srv.Ranked() && srv.Unsupported == "" && !slices.Contains(failed, srv.Name) {
				failed = append(failed, srv.Name)
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s (reasons in bench.txt)", errNotRanked, strings.Join(failed, ", "))
	}
	return nil
}

// benchmark runs the benchmark of a session's run, its kit built first.
func benchmark(ctx context.Context, s *session.Session, servers []string, out progress.Reporter) (record.Run, error) {
	st := store{s.Folder}
	kit, err := s.Kit(ctx, out, out)
	if err != nil {
		if ctx.Err() != nil { // interrupted while the client image built: a run to resume
			s.Run.End(err)
			err = errors.Join(err, st.Publish(s.Run))
		}
		return s.Run, err
	}
	b, err := bench.New(bench.Options{Kit: kit, Store: st, Progress: out}, s.Run)
	if err != nil {
		return s.Run, err
	}
	return b.Benchmark(ctx, servers)
}

// store keeps a run's record in its folder: results.json after each
// round, and the files people read from it when the benchmark publishes.
type store struct{ folder record.Folder }

func (st store) Save(run record.Run) error { return record.Save(st.folder, run) }

func (st store) Publish(run record.Run) error {
	if err := record.Save(st.folder, run); err != nil {
		return err
	}
	return report.Render(st.folder, run)
}

type imagesCmd struct {
	Root string `help:"The repository." default:"." type:"existingdir"`
}

func (c *imagesCmd) Run(ctx context.Context, std streams) error {
	s, err := openRun(ctx, c.Root, std)
	if err != nil {
		return err
	}
	defer s.Close()
	out := progress.New(std.Stdout, 0, 0)
	defer out.Close()
	servers, clients := s.Builders()
	return images.BuildImages(ctx, servers, clients, s.Config.Servers(s.Catalog.Servers), s.ScenarioList(), s.Folder, out)
}
