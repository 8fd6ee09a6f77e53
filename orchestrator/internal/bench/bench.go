// Package bench is the benchmark: every image built first, then rounds,
// interleaved (round 1 of every server in every cell, then round 2, ...),
// each a fresh server container warmed up and measured with the run's load
// tool, and with the capacity tool too (when it is on), so that each
// ranking comes from one tool. The run's record is saved after each round, so that a run that
// dies keeps what it finished.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// capacityWarmup is the capacity tool's warm-up: the server is warm from
// the load tool's run a moment before; this only lets the tool open its
// connections and settle.
const capacityWarmup = time.Second

// capacitySpec is the capacity measurement's load after the load tool's
// spec: a short warm-up, and half the measurement (at least a second),
// which keeps a round with both tools within 1.5 times the load tool's
// alone; the tool that keeps up needs no more to rank it.
func capacitySpec(loadSpec load.Spec) load.Spec {
	spec := loadSpec
	spec.Warmup = min(capacityWarmup, loadSpec.Warmup)
	spec.Duration = max(loadSpec.Duration/2, time.Second)
	return spec
}

// Bench is one benchmark run.
type Bench struct {
	Suite *suite.Suite
	// Builder builds the servers' images, ClientBuilder the client's, each
	// on the engine that runs them.
	Builder       images.Builder
	ClientBuilder images.Builder
	Config        config.Config
	// Scenarios are the run's scenarios, compiled, by name.
	Scenarios map[string]*scenario.Scenario
	Folder    report.Folder
	// Run is the record: its cells set up (settings, placement), filled as
	// rounds finish.
	Run *report.Run
	// HostStat is the host's /proc/stat for its CPU steal; "" when the
	// engine runs elsewhere.
	HostStat string
	// Alive says whether the engine still answers; after a failure, a
	// run whose engine is gone stops rather than fail every server left.
	Alive func(context.Context) error
	// Held says, before each round, whether the run still holds its
	// locks (taking back one that was removed); nil checks nothing.
	Held func(context.Context) error
	// Progress hears how the run goes.
	Progress progress.Reporter
}

// Benchmark measures every server in every cell. It returns ctx's error
// when the run was interrupted; a server that fails is recorded, and the
// run goes on.
func (b *Bench) Benchmark(ctx context.Context, servers []string) error {
	tool, capacity, err := b.tools()
	if err != nil {
		return err
	}
	if err := b.build(ctx, servers); err != nil {
		return b.stop(err) // an interrupted build leaves a run to resume
	}
	if err := report.Save(b.Folder, *b.Run); err != nil {
		return err
	}
	design := b.Config.Design()
	b.Run.Design = &design
	if b.Run.Seed == 0 { // a resumed run keeps its seed
		b.Run.Seed = b.seed()
	}
	start, done := time.Now(), 0
	var took []float64 // each round's seconds, for the budget
	active := func(report.Server) bool { return true }
	for {
		look, ok := design.NextLook(done)
		if !ok {
			b.Run.StopReason = "the last look was reached"
			break
		}
		for r := done + 1; r <= look; r++ {
			visits := b.visits(r, active)
			b.Run.Order = append(b.Run.Order[:min(r-1, len(b.Run.Order))], visits)
			for _, v := range visits {
				if ctx.Err() != nil {
					return b.stop(ctx.Err())
				}
				if b.Held != nil {
					if err := b.Held(ctx); err != nil {
						return b.stop(err)
					}
				}
				spent, err := b.visit(ctx, v, r, look, tool, capacity)
				if err != nil {
					return err
				}
				if spent > 0 {
					took = append(took, spent.Seconds())
				}
			}
		}
		done = look
		if design.Fixed {
			break
		}
		open := b.look(look, time.Since(start))
		if len(open) == 0 {
			b.Run.StopReason = "every pair was decided"
			break
		}
		if next, ok := design.NextLook(look); ok && b.Config.Budget > 0 {
			need := time.Duration(float64(next-look) * float64(len(open)) * stats.Median(took) * float64(time.Second))
			if time.Since(start)+need > b.Config.Budget {
				b.Run.StopReason = fmt.Sprintf("GRPC_BENCHMARK_BUDGET=%s: the next look's rounds (about %s) would end past it", b.Config.Budget, need.Round(time.Second))
				break
			}
		}
		active = func(s report.Server) bool { return open[s.Name] }
		if err := report.Save(b.Folder, *b.Run); err != nil {
			return err
		}
	}
	return b.stop(ctx.Err())
}

// seed is GRPC_BENCHMARK_SEED, else one drawn for the run.
func (b *Bench) seed() uint64 {
	if seed, ok := b.Config.SeedValue(); ok {
		return seed
	}
	return max(1, rand.Uint64())
}

// visits are round r's servers of every cell that active lets on and that
// have not failed, in a random order drawn from the run's seed and the
// round: each server meets a different predecessor and moment in every
// round, and a resumed run follows the order it was interrupted in.
func (b *Bench) visits(r int, active func(report.Server) bool) []report.Visit {
	var visits []report.Visit
	for ci, cell := range b.Run.Cells {
		for _, srv := range cell.Servers {
			if srv.FirstFailure() == nil && active(srv) {
				visits = append(visits, report.Visit{Cell: ci, Server: srv.Name})
			}
		}
	}
	rng := rand.New(rand.NewPCG(b.Run.Seed, uint64(r)))
	rng.Shuffle(len(visits), func(i, j int) { visits[i], visits[j] = visits[j], visits[i] })
	return visits
}

// visit measures round r of one server of one cell, unless it has it (a
// resumed run) or failed since the round's order was drawn, and saves the
// record. It returns the time the round took, 0 when skipped.
func (b *Bench) visit(ctx context.Context, v report.Visit, r, look int, tool, capacity load.Tool) (time.Duration, error) {
	cell := &b.Run.Cells[v.Cell]
	srv := &cell.Servers[slices.IndexFunc(cell.Servers, func(s report.Server) bool { return s.Name == v.Server })]
	if len(srv.Rounds) >= r || srv.FirstFailure() != nil {
		return 0, nil
	}
	start := time.Now()
	b.Progress.Round(srv.Name)
	b.Progress.Printf("%s: round %d of %d%s", srv.Name, r, look, b.cellText(*cell))
	round := b.round(ctx, *cell, srv, r, tool, capacity)
	b.Progress.RoundDone()
	gone := b.engineGone(ctx, round.Failure)
	if gone != nil {
		round.Failure.Reason = "the Docker engine went away: " + round.Failure.Reason
		round.Failure.CutShort = true
	}
	srv.Rounds = append(srv.Rounds, round)
	if err := report.Save(b.Folder, *b.Run); err != nil {
		return 0, err
	}
	if gone != nil {
		return 0, b.stop(gone)
	}
	return time.Since(start), nil
}

// look analyses every cell's ranking after a sequential design's look,
// records it, and returns the servers of unresolved pairs, which go on.
func (b *Bench) look(rounds int, elapsed time.Duration) map[string]bool {
	rec := report.RunLook{Rounds: rounds, Elapsed: elapsed.Seconds()}
	open := map[string]bool{}
	for _, cell := range b.Run.Cells {
		// Both rankings decide: a client-bound server is out of the load
		// ranking's tests, and its order stands on the capacity ranking.
		load, loadOpen := openIn(*b.Run, report.Ranking(cell))
		capacity, capacityOpen := openIn(*b.Run, report.CapacityRanking(cell))
		var names []string
		for _, srv := range cell.Servers {
			if slices.Contains(loadOpen, srv.Name) || slices.Contains(capacityOpen, srv.Name) {
				names = append(names, srv.Name)
				open[srv.Name] = true
			}
		}
		rec.Cells = append(rec.Cells, load)
		rec.Capacity = append(rec.Capacity, capacity)
		rec.Continuing = append(rec.Continuing, names)
	}
	b.Run.Looks = append(b.Run.Looks, rec)
	b.Progress.Printf("look after round %d: %d servers go on", rounds, len(open))
	return open
}

// openIn analyses a ranking and names the servers of its unresolved pairs.
func openIn(run report.Run, rows []report.Row) (stats.Analysis, []string) {
	a := report.Judge(run, rows)
	samples := make([]stats.Sample, len(rows))
	for i, r := range rows {
		samples[i] = stats.Sample{Name: r.Name}
	}
	return a, a.Open(samples)
}

// EngineGoneError stops a run whose engine no longer answers.
type EngineGoneError struct{ Err error }

func (e *EngineGoneError) Error() string {
	return "the Docker engine went away during the run (" + e.Err.Error() + "); the servers measured until then are in the results"
}

func (e *EngineGoneError) Unwrap() error { return e.Err }

// engineGone checks, after a failure other than an interruption, whether
// the engine still answers.
func (b *Bench) engineGone(ctx context.Context, f *report.Failure) error {
	if f == nil || ctx.Err() != nil || b.Alive == nil {
		return nil
	}
	if err := b.Alive(ctx); err != nil {
		return &EngineGoneError{Err: err}
	}
	return nil
}

// stop ends the run's record, interrupted when err says so, and saves it.
func (b *Bench) stop(err error) error {
	b.Run.Interrupted = err != nil
	b.Run.Finished = time.Now()
	if serr := report.Save(b.Folder, *b.Run); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// tools looks up the load tool and the capacity tool (nil when off, or
// when it is the load tool itself).
func (b *Bench) tools() (load.Tool, load.Tool, error) {
	tool, ok := load.Lookup(b.Config.LoadTool)
	if !ok {
		return nil, nil, fmt.Errorf("no load tool %q", b.Config.LoadTool)
	}
	if !b.Config.CapacityOn() {
		return tool, nil, nil
	}
	capacity, ok := load.Lookup(b.Config.CapacityTool)
	if !ok {
		return nil, nil, fmt.Errorf("no capacity tool %q", b.Config.CapacityTool)
	}
	return tool, capacity, nil
}

// build builds the client image and each server's image once per scenario
// before anything is measured, so that no build runs beside a measurement,
// and sets up the servers of every cell. A variant runs its base's image.
func (b *Bench) build(ctx context.Context, servers []string) error {
	client, err := BuildClient(ctx, b.ClientBuilder, b.Folder, b.Progress)
	if err != nil {
		return err
	}
	b.Suite.ClientImage = client
	type key struct{ scenario, base string }
	failed := map[key]error{}
	ids := map[key]string{}
	for _, sc := range ScenarioNames(b.Run.Cells) {
		for _, base := range b.Builder.Catalog.Bases(servers) {
			if err := ctx.Err(); err != nil {
				return err
			}
			folder, err := b.Folder.Sub(base)
			if err != nil {
				return err
			}
			img, _, err := BuildServer(ctx, b.Builder, base, b.Scenarios[sc], folder, "build-"+sc+".log", b.Progress)
			if err != nil {
				f := suite.FailureOf(err)
				if gone := b.engineGone(ctx, &f); gone != nil {
					return gone
				}
			}
			ids[key{sc, base}], failed[key{sc, base}] = img.ID, err
		}
	}
	for ci := range b.Run.Cells {
		cell := &b.Run.Cells[ci]
		for _, name := range servers {
			k := key{cell.Scenario, b.Builder.Catalog.Base(name)}
			i := slices.IndexFunc(cell.Servers, func(s report.Server) bool { return s.Name == name })
			if i < 0 { // a resumed run has its servers already
				cell.Servers = append(cell.Servers, report.Server{Name: name})
				i = len(cell.Servers) - 1
			}
			srv := &cell.Servers[i]
			srv.Image, srv.ImageID = b.Builder.ServerTag(k.base, k.scenario), ids[k]
			if err := failed[k]; err != nil {
				f := suite.FailureOf(err)
				srv.Failure = &f
			}
		}
	}
	return nil
}

// round brings a fresh container of the server up, measures it and tears
// it down.
func (b *Bench) round(ctx context.Context, cell report.Cell, srv *report.Server, r int, tool, capacity load.Tool) report.Round {
	round := report.Round{Round: r, Start: time.Now()}
	folder, err := b.Folder.Sub(srv.Name, report.CellDir(*b.Run, cell), fmt.Sprintf("round-%d", r))
	if err != nil {
		return b.fail(srv.Name, round, err)
	}
	spec := ServerSpec(b.Config, cell, srv.Name, srv.Image, b.Builder.Catalog.Env(srv.Name), b.Scenarios[cell.Scenario], folder)
	up, err := b.Suite.Up(ctx, spec)
	defer up.Down(ctx)
	if up.Conformance != nil && srv.Conformance == nil {
		srv.Conformance = up.Conformance
	}
	if up.RoundTrip != nil && b.Run.RoundTrip == nil {
		b.Run.RoundTrip = up.RoundTrip
	}
	if b.Suite.Remote != nil {
		round.ServerAddress = up.Address
	}
	spent := time.Duration(0) // warm-ups and measurements, for the overhead
	if err == nil {
		before, hostOK := usage.ReadHostCPU(b.HostStat)
		loadSpec := LoadSpec(b.Config, cell, b.Config.RoundDuration())
		b.Progress.Printf("%s: ready; warm-up %s, then measuring %s with %s", srv.Name, loadSpec.Warmup, loadSpec.Duration, tool.Name())
		round.Measurement, err = b.measure(ctx, up, tool, loadSpec, "load")
		spent += loadSpec.Warmup + loadSpec.Duration + usage.LoadTail
		if err == nil && round.Load.OK == 0 {
			err = &suite.PhaseError{Phase: "load", Err: fmt.Errorf("no call succeeded (%s)", round.Load.Failures())}
		}
		if err == nil {
			round.ClientBound = round.ClientSaturated(float64(cell.ClientCPUs))
			// Every server, every round: a cell's capacity ranking then
			// comes from one tool over one kind of window, whichever
			// servers the load tool could not keep up with, and no round
			// is measured before that is known.
			if capacity != nil {
				capSpec := capacitySpec(loadSpec)
				m, cerr := b.measure(ctx, up, capacity, capSpec, "capacity")
				spent += capSpec.Warmup + capSpec.Duration + usage.LoadTail
				if cerr != nil {
					round.CapacityFailure = cerr.Error()
				} else {
					round.Capacity = &m
				}
			}
			if after, ok := usage.ReadHostCPU(b.HostStat); ok && hostOK {
				steal := after.StealSince(before)
				round.HostSteal = &steal
			}
		}
	}
	round.Phases = up.Phases
	round.OOMKills = up.OOMKills()
	if err != nil {
		return b.fail(srv.Name, round, err)
	}
	round.Overhead = max(0, phaseTime(round.Phases)-spent.Seconds())
	b.Progress.Printf("%s: %s", srv.Name, roundText(round))
	return round
}

// measure loads the server and, when the client runs on this machine,
// reads how much other work the host did over the measurement window.
func (b *Bench) measure(ctx context.Context, up *suite.Server, tool load.Tool, spec load.Spec, name string) (report.Measurement, error) {
	if b.HostStat == "" {
		return up.Measure(ctx, tool, spec, name)
	}
	host := usage.SampleHost(ctx, b.HostStat, hostPeriod)
	m, err := up.Measure(ctx, tool, spec, name)
	host.Stop()
	if err != nil || m.Load == nil || m.Server.Samples == 0 || m.Client.Samples == 0 {
		return m, err
	}
	if busy, ok := host.BusyCores(m.Load.Start, m.Load.End, b.Run.Hardware.CPUs); ok {
		other := max(0, busy-(m.Server.CPUAvgPercent+m.Client.CPUAvgPercent)/100)
		m.OtherCores = &other
	}
	return m, nil
}

// hostPeriod is how often the host's counters are read during a
// measurement: the window's ends are known to within it.
const hostPeriod = 250 * time.Millisecond

// phaseTime is the time the phases took in all.
func phaseTime(phases []report.Phase) float64 {
	var total float64
	for _, p := range phases {
		total += p.Seconds
	}
	return total
}

func roundText(r report.Round) string {
	text := fmt.Sprintf("%.0f req/s, server CPU %.1f%%, client CPU %.1f%%", r.Load.RPS, r.Server.CPUAvgPercent, r.Client.CPUAvgPercent)
	switch {
	case r.ClientBound:
		text += "; client-bound"
	}
	switch {
	case r.Capacity != nil:
		text += fmt.Sprintf("; capacity (%s): %.0f req/s, server CPU %.1f%%",
			r.Capacity.Load.Tool, r.Capacity.Load.RPS, r.Capacity.Server.CPUAvgPercent)
	case r.CapacityFailure != "":
		text += "; the capacity measurement failed: " + r.CapacityFailure
	}
	return text
}

func (b *Bench) cellText(cell report.Cell) string {
	if len(b.Run.Cells) == 1 {
		return ""
	}
	return " in " + cell.Name()
}

// fail records why a round could not be measured.
func (b *Bench) fail(name string, round report.Round, err error) report.Round {
	f := suite.FailureOf(err)
	slog.Debug("round failed", "server", name, "round", round.Round, "phase", f.Phase, "err", err)
	b.Progress.Printf("%s: %s failed: %s", name, f.Phase, f.Reason)
	round.Failure = &f
	return round
}

// BuildClient builds the orchestrator's own image, with its log in the run
// folder.
func BuildClient(ctx context.Context, b images.Builder, folder report.Folder, out progress.Reporter) (string, error) {
	out.Printf("building the load client image %s", b.ClientTag())
	out.Building("the load client image")
	log, err := folder.Create("grpcbench-build.log")
	if err != nil {
		return "", err
	}
	defer log.Close()
	tag, err := b.Client(ctx, io.MultiWriter(log, progress.StepWriter(out)))
	if err != nil {
		return "", fmt.Errorf("%w (log: %s)", err, log.Name())
	}
	return tag, nil
}

// BuildServer builds a server's image, with its log as logName in folder,
// and records the build as a phase.
func BuildServer(ctx context.Context, b images.Builder, name string, sc *scenario.Scenario, folder report.Folder, logName string, out progress.Reporter) (images.Image, report.Phase, error) {
	out.Printf("%s: building %s", name, b.ServerTag(name, sc.Name))
	out.Building(name)
	start := time.Now()
	img, err := buildServer(ctx, b, name, sc, folder, logName, progress.StepWriter(out))
	phase := report.Phase{Name: "build", Start: start, Seconds: time.Since(start).Seconds()}
	if err != nil {
		return img, phase, &suite.PhaseError{Phase: "build", Err: fmt.Errorf("%w (log: %s)", err, folder.Path(logName))}
	}
	return img, phase, nil
}

func buildServer(ctx context.Context, b images.Builder, name string, sc *scenario.Scenario, folder report.Folder, logName string, steps io.Writer) (images.Image, error) {
	log, err := folder.Create(logName)
	if err != nil {
		return images.Image{}, err
	}
	defer log.Close()
	return b.Server(ctx, name, sc, io.MultiWriter(log, steps))
}

// BuildImages builds the client image and each server's image for every
// scenario without running anything; the first failure ends it.
func BuildImages(ctx context.Context, b, client images.Builder, servers []string, scenarios []*scenario.Scenario, folder report.Folder, out progress.Reporter) error {
	if _, err := BuildClient(ctx, client, folder, out); err != nil {
		return err
	}
	for _, sc := range scenarios {
		for _, name := range b.Catalog.Bases(servers) {
			sub, err := folder.Sub(name)
			if err != nil {
				return err
			}
			if _, _, err := BuildServer(ctx, b, name, sc, sub, "build-"+sc.Name+".log", out); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// ServerSpec is how a server runs in a cell; env is what a variant adds to
// its environment.
func ServerSpec(cfg config.Config, cell report.Cell, name, image string, env []string, sc *scenario.Scenario, folder report.Folder) suite.ServerSpec {
	return suite.ServerSpec{Name: name, Image: image, Env: env, Scenario: sc, CPUs: cell.ServerCPUs, RAM: cfg.ServerRAM,
		ReadyTimeout: cfg.ReadyTimeout, Placement: cell.Placement, Folder: folder}
}

// LoadSpec is the load of a cell, measured for duration.
func LoadSpec(cfg config.Config, cell report.Cell, duration time.Duration) load.Spec {
	return load.Spec{Connections: cell.Connections, Concurrency: cell.Concurrency, QPS: cfg.QPS,
		Warmup: cfg.Warmup, Duration: duration, CPUs: float64(cell.ClientCPUs)}
}

// roundOverhead is about what a round takes beyond its loads: containers
// started, readiness, the gate, stats.
const roundOverhead = 1500 * time.Millisecond

// Planned is the number of rounds a run of servers over cells has still to
// measure: all of them, but for a resumed run the rounds it has and none of
// a server that failed.
func Planned(cells []report.Cell, servers []string, rounds int) int {
	n := 0
	for _, c := range cells {
		for _, name := range servers {
			i := slices.IndexFunc(c.Servers, func(s report.Server) bool { return s.Name == name })
			switch {
			case i < 0:
				n += rounds
			case c.Servers[i].FirstFailure() == nil:
				n += max(0, rounds-len(c.Servers[i].Rounds))
			}
		}
	}
	return n
}

// PerRound estimates a round's time before any is measured: warm-up,
// measurement, the load past the window and overhead, and the capacity
// measurement when it is on.
func PerRound(cfg config.Config) time.Duration {
	each := cfg.Warmup + cfg.RoundDuration() + usage.LoadTail + roundOverhead
	if cfg.CapacityOn() {
		c := capacitySpec(load.Spec{Warmup: cfg.Warmup, Duration: cfg.RoundDuration()})
		each += c.Warmup + c.Duration + usage.LoadTail
	}
	return each
}

// Cells sets a run's cells up: the product of the list-valued settings,
// each with its footer and its placement on the cores of the servers' and
// the clients' engines (one engine: the same count twice).
func Cells(cfg config.Config, serverCPUs, clientCPUs int) []report.Cell {
	var cells []report.Cell
	for _, c := range cfg.Cells(config.Facts{EngineCPUs: serverCPUs, ClientCPUs: clientCPUs}) {
		placement := suite.Place(serverCPUs, c.ServerCPUs, c.ClientCPUs)
		if cfg.TwoEngines() {
			placement = suite.PlaceApart(serverCPUs, clientCPUs, c.ServerCPUs, c.ClientCPUs)
		}
		cells = append(cells, report.Cell{Cell: c, Settings: cfg.Settings(c), Placement: placement})
	}
	return cells
}

// ScenarioNames lists the scenarios of cells, once each, in order.
func ScenarioNames(cells []report.Cell) []string {
	var names []string
	for _, c := range cells {
		if !slices.Contains(names, c.Scenario) {
			names = append(names, c.Scenario)
		}
	}
	return names
}
