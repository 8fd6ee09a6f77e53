// Package bench is the benchmark: every image built first, then rounds,
// interleaved (round 1 of every server in every cell, then round 2, ...),
// each a fresh server container warmed up and measured with the run's load
// tool, and with the capacity tool too (when it is on), so that each
// ranking comes from one tool. The run's record is saved after each round, so that a run that
// dies keeps what it finished.
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/harness"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/session"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
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
	spec.Warmup, spec.Steady = min(capacityWarmup, loadSpec.Warmup), nil
	spec.Duration = max(loadSpec.Duration/2, time.Second)
	return spec
}

// Store keeps the record as the benchmark adds to it: Save after each
// round, so that a run that dies keeps every round it finished, and
// Publish, which also writes the files people read from the record, once
// the builds are done, at each look and at the end.
type Store interface {
	Save(record.Run) error
	Publish(record.Run) error
}

// Options are what a benchmark runs with.
type Options struct {
	// Kit is the run's hosts, builders, catalog and harness.
	Kit   *session.Kit
	Store Store
	// Progress hears how the run goes.
	Progress progress.Reporter
}

// Bench is one benchmark run, as New built it.
type Bench struct {
	Options
	// run is the record, its cells set up (settings, placement), filled as
	// rounds finish; the benchmark alone changes it.
	run record.Run
	// tool measures every round; capacity, nil when off, measures it again;
	// rate, nil without rate cells, loads those.
	tool, capacity, rate load.Tool
}

// New builds a benchmark that goes on from the record run, with the
// settings' load tools, refusing one that does not drive the call kind of
// every scenario of the run.
func New(o Options, run record.Run) (*Bench, error) {
	b := &Bench{Options: o, run: run}
	if bl := o.Kit.Baseline; bl != nil {
		b.run.Baseline = &bl.Baseline
	}
	var err error
	if b.tool, b.capacity, err = b.tools(); err != nil {
		return nil, err
	}
	var scenarios []*scenario.Scenario
	for _, name := range plan.ScenarioNames(run.Cells) {
		scenarios = append(scenarios, o.Kit.Scenarios[name])
	}
	if err := plan.Drives("GRPC_LOAD_TOOL", b.tool, scenarios); err != nil {
		return nil, err
	}
	if b.capacity != nil {
		if err := plan.Drives("GRPC_CAPACITY_TOOL", b.capacity, scenarios); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(run.Cells, func(c record.Cell) bool { return plan.Of(c).Swept() }) {
		rate, ok := load.OpenLoopTool()
		if !ok {
			return nil, errors.New("no load tool loads open-loop, as the rate cells need")
		}
		if err := plan.Drives("GRPC_LOAD_RATES", rate, scenarios); err != nil {
			return nil, err
		}
		b.rate = rate
	}
	return b, nil
}

// Benchmark measures every server in every cell and returns the record.
// It returns ctx's error when the run was interrupted; a server that fails
// is recorded, and the run goes on.
func (b *Bench) Benchmark(ctx context.Context, servers []string) (record.Run, error) {
	if err := b.build(ctx, servers); err != nil {
		return b.stop(err) // an interrupted build leaves a run to resume
	}
	if err := b.Store.Publish(b.run); err != nil {
		return b.run, err
	}
	design := plan.Design(b.Kit.Config)
	b.run.Design = analysis.DesignRecord(design)
	if b.run.Seed == 0 { // a resumed run keeps its seed
		b.run.Seed = b.seed()
	}
	start, done := time.Now(), 0
	var took []float64 // each round's seconds, for the budget
	active := func(int, record.Server) bool { return true }
	for {
		look, ok := design.NextLook(done)
		if !ok {
			b.run.StopReason = "the last look was reached"
			break
		}
		for r := done + 1; r <= look; r++ {
			visits := b.visits(r, active)
			b.run.Order = append(b.run.Order[:min(r-1, len(b.run.Order))], visits)
			for _, v := range visits {
				spent, stop, err := b.next(ctx, v, r, look)
				if stop != nil {
					return b.stop(stop)
				}
				if err != nil {
					return b.run, err
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
		open, going := b.look(look, time.Since(start))
		if going == 0 {
			b.run.StopReason = "every pair was decided"
			break
		}
		if next, ok := design.NextLook(look); ok && b.Kit.Config.Budget > 0 {
			need := time.Duration(float64(next-look) * float64(going) * stats.Median(took) * float64(time.Second))
			if time.Since(start)+need > b.Kit.Config.Budget {
				b.run.StopReason = fmt.Sprintf("GRPC_BENCHMARK_BUDGET=%s: the next look's rounds (about %s) would end past it", b.Kit.Config.Budget, need.Round(time.Second))
				break
			}
		}
		active = func(ci int, s record.Server) bool { return open[ci][s.Name] }
		if err := b.Store.Publish(b.run); err != nil {
			return b.run, err
		}
	}
	perProbe, _ := design.NextLook(0)
	if stop, err := b.search(ctx, perProbe); stop != nil || err != nil {
		if err != nil {
			return b.run, err
		}
		return b.stop(stop)
	}
	return b.stop(ctx.Err())
}

// next measures round r of a visit unless the run must stop first (it was
// interrupted, or its host is held): stop is then why.
func (b *Bench) next(ctx context.Context, v record.Visit, r, look int) (spent time.Duration, stop, err error) {
	if ctx.Err() != nil {
		return 0, ctx.Err(), nil
	}
	if b.Kit.Held != nil {
		if err := b.Kit.Held(ctx); err != nil {
			// An engine shutting down still answers for a while, with
			// errors: the lock it stopped is not one a prune removed.
			if gone := b.hostGone(ctx, shutdownTime); gone != nil {
				return 0, gone, nil
			}
			return 0, err, nil
		}
	}
	spent, err = b.visit(ctx, v, r, look)
	return spent, nil, err
}

// seed is GRPC_BENCHMARK_SEED, else one drawn for the run.
func (b *Bench) seed() uint64 {
	if seed, ok := b.Kit.Config.SeedValue(); ok {
		return seed
	}
	return max(1, rand.Uint64())
}

// visits are round r's servers of every cell that active lets on and that
// have not failed, in a random order drawn from the run's seed and the
// round: each server meets a different predecessor and moment in every
// round, and a resumed run follows the order it was interrupted in.
func (b *Bench) visits(r int, active func(int, record.Server) bool) []record.Visit {
	var visits []record.Visit
	for ci, cell := range b.run.Cells {
		if cell.Probe > 0 { // measured after the rounds, by search
			continue
		}
		for _, srv := range cell.Servers {
			if srv.Unsupported == "" && srv.FirstFailure() == nil && active(ci, srv) {
				visits = append(visits, record.Visit{Cell: ci, Server: srv.Name})
			}
		}
	}
	rng := rand.New(rand.NewPCG(b.run.Seed, uint64(r)))
	rng.Shuffle(len(visits), func(i, j int) { visits[i], visits[j] = visits[j], visits[i] })
	if r == 1 { // a rate cell's first round needs its server's capacity and warm-up
		stage := func(v record.Visit) int { return sweep.Stage(plan.Of(b.run.Cells[v.Cell])) }
		slices.SortStableFunc(visits, func(v, w record.Visit) int { return cmp.Compare(stage(v), stage(w)) })
	}
	if b.Kit.Baseline != nil {
		visits = pairVisits(b.run, visits)
	}
	return visits
}

// visit measures round r of one server of one cell, unless it has it (a
// resumed run) or failed since the round's order was drawn, and saves the
// record. It returns the time the round took, 0 when skipped.
func (b *Bench) visit(ctx context.Context, v record.Visit, r, look int) (time.Duration, error) {
	cell := &b.run.Cells[v.Cell]
	srv := &cell.Servers[slices.IndexFunc(cell.Servers, func(s record.Server) bool { return s.Name == v.Server })]
	if len(srv.Rounds) >= r || srv.FirstFailure() != nil {
		return 0, nil
	}
	start := time.Now()
	b.Progress.Round(srv.Name)
	b.Progress.Printf("%s: round %d of %d%s", srv.Name, r, look, b.cellText(*cell))
	round := b.round(ctx, v.Cell, srv, r)
	b.Progress.RoundDone()
	var gone error
	if round.Failure != nil {
		gone = b.hostGone(ctx, 0)
	}
	if gone != nil {
		round.Failure.Reason = "the Docker engine went away: " + round.Failure.Reason
		round.Failure.CutShort = true
	}
	srv.Rounds = append(srv.Rounds, round)
	if err := b.Store.Save(b.run); err != nil {
		return 0, err
	}
	if gone != nil {
		_, err := b.stop(gone)
		return 0, err
	}
	return time.Since(start), nil
}

// look analyses every cell's ranking after a sequential design's look,
// records it, and returns, per cell, the servers of its open pairs, which
// go on in that cell alone, and how many they are in all.
func (b *Bench) look(rounds int, elapsed time.Duration) ([]map[string]bool, int) {
	rec := record.Look{Rounds: rounds, Elapsed: elapsed.Seconds()}
	var open []map[string]bool
	going := 0
	for _, cell := range analysis.Of(b.run).Cells {
		// Both rankings decide: a client-bound server is out of the load
		// ranking's tests, and its order stands on the capacity ranking.
		loadOpen, capacityOpen := cell.Load.Open(), cell.Capacity.Open()
		names, set := []string{}, map[string]bool{}
		for _, srv := range cell.Record.Servers {
			if slices.Contains(loadOpen, srv.Name) || slices.Contains(capacityOpen, srv.Name) {
				names = append(names, srv.Name)
				set[srv.Name] = true
			}
		}
		going += len(names)
		open = append(open, set)
		rec.Cells = append(rec.Cells, cell.Load.Record())
		rec.Capacity = append(rec.Capacity, cell.Capacity.Record())
		rec.Continuing = append(rec.Continuing, names)
	}
	// A resumed run looks again at the looks it had: each is recorded once.
	b.run.Looks = append(slices.DeleteFunc(b.run.Looks, func(l record.Look) bool { return l.Rounds >= rounds }), rec)
	b.Progress.Printf("look after round %d: %d servers go on, over the cells", rounds, going)
	return open, going
}

// HostGoneError stops a run whose engine no longer answers.
type HostGoneError struct{ Err error }

func (e *HostGoneError) Error() string {
	return "the Docker engine went away during the run (" + e.Err.Error() + "); the servers measured until then are in the results"
}

func (e *HostGoneError) Unwrap() error { return e.Err }

// shutdownTime is how long an engine that fails a call is watched for
// going away: dockerd stops its containers, then its store, then its API,
// within its shutdown timeout (15 s by default).
const shutdownTime = 20 * time.Second

// hostGone checks, after a failure other than an interruption, whether
// the engine still answers, and goes on asking for up to within.
func (b *Bench) hostGone(ctx context.Context, within time.Duration) error {
	if ctx.Err() != nil || b.Kit.Alive == nil {
		return nil
	}
	deadline := time.Now().Add(within)
	for {
		err := b.Kit.Alive(ctx)
		if err != nil {
			return &HostGoneError{Err: err}
		}
		if !time.Now().Before(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stop ends the run's record, interrupted when err says so, publishes it
// and returns it.
func (b *Bench) stop(err error) (record.Run, error) {
	b.run.End(err)
	if serr := b.Store.Publish(b.run); serr != nil {
		return b.run, errors.Join(err, serr)
	}
	return b.run, err
}

// tools looks up the load tool and the capacity tool (nil when off, or
// when it is the load tool itself).
func (b *Bench) tools() (load.Tool, load.Tool, error) {
	cfg := b.Kit.Config
	tool, ok := load.Lookup(cfg.LoadTool)
	if !ok {
		return nil, nil, fmt.Errorf("no load tool %q", cfg.LoadTool)
	}
	if !cfg.CapacityOn() {
		return tool, nil, nil
	}
	capacity, ok := load.Lookup(cfg.CapacityTool)
	if !ok {
		return nil, nil, fmt.Errorf("no capacity tool %q", cfg.CapacityTool)
	}
	return tool, capacity, nil
}

// build builds the client image and each server's image once per scenario
// before anything is measured, so that no build runs beside a measurement,
// and sets up the servers of every cell. A variant runs its base's image.
func (b *Bench) build(ctx context.Context, servers []string) error {
	k := b.Kit
	type key struct{ scenario, base string }
	codes := b.codes()
	failed := make([]map[key]error, len(codes))
	ids := make([]map[key]string, len(codes))
	for i, c := range codes {
		failed[i], ids[i] = map[key]error{}, map[key]string{}
		for _, sc := range plan.ScenarioNames(b.run.Cells) {
			for _, base := range c.catalog.Bases(c.present(servers)) {
				if err := ctx.Err(); err != nil {
					return err
				}
				if c.catalog.Unsupported(base, sc, false) != "" {
					continue
				}
				folder, err := k.Folder.Sub(c.name(base))
				if err != nil {
					return err
				}
				img, _, err := images.BuildServer(ctx, c.builder, base, c.scenarios[sc], folder, "build-"+sc+".log", b.Progress)
				if err != nil {
					if gone := b.hostGone(ctx, 0); gone != nil {
						return gone
					}
				}
				ids[i][key{sc, base}], failed[i][key{sc, base}] = img.ID, err
			}
		}
	}
	for ci := range b.run.Cells {
		cell := &b.run.Cells[ci]
		if sc := k.Scenarios[cell.Scenario]; sc.Kind != scenario.Unary {
			cell.Kind = string(sc.Kind)
		}
		for _, server := range servers {
			for i, c := range codes {
				name := c.name(server)
				built := key{cell.Scenario, c.catalog.Base(server)}
				j := slices.IndexFunc(cell.Servers, func(s record.Server) bool { return s.Name == name })
				if j < 0 { // a resumed run has its servers already
					cell.Servers = append(cell.Servers, record.Server{Name: name})
					j = len(cell.Servers) - 1
				}
				srv := &cell.Servers[j]
				if c.ref != "" {
					srv.Of = server
				}
				if !slices.Contains(c.catalog.Servers, server) {
					srv.Failure = &record.Failure{Phase: "build", Reason: fmt.Sprintf("no server %s at %s", server, c.ref)}
					continue
				}
				srv.Image, srv.ImageID = c.builder.ServerTag(built.base, built.scenario), ids[i][built]
				m := c.catalog.Manifest(server)
				srv.Stack, srv.Library, srv.Version = m.Stack, m.Name, m.Version
				if m.GRPC != nil {
					srv.GRPC = m.GRPC.Name + " " + m.GRPC.Version
				}
				srv.Unsupported = c.catalog.Unsupported(server, cell.Scenario, cell.TLS)
				if err := failed[i][built]; err != nil {
					f := harness.FailureOf(err)
					srv.Failure = &f
				}
			}
		}
	}
	return nil
}

// round brings a fresh container of the server up, measures it and tears
// it down.
func (b *Bench) round(ctx context.Context, ci int, srv *record.Server, r int) record.Round {
	k, cell := b.Kit, b.run.Cells[ci]
	round := record.Round{Round: r, Start: time.Now(), ImageID: srv.ImageID}
	folder, err := k.Folder.Sub(srv.Name, record.CellDir(b.run, cell), fmt.Sprintf("round-%d", r))
	if err != nil {
		return b.fail(srv.Name, round, err)
	}
	swept := plan.Of(cell).Swept()
	if swept { // known before a container starts: the capacity, the probes before
		if round.TargetRPS, err = sweep.Target(b.run, ci, srv.Name, k.Config.SLO); err != nil {
			return b.fail(srv.Name, round, &record.PhaseError{Phase: "rate", Err: err})
		}
	}
	sc := k.Scenarios[cell.Scenario]
	spec := k.ServerSpec(cell, sc, srv.Name, srv.Image, folder)
	if srv.Of != "" && k.Baseline != nil { // a baseline's row runs with the baseline's environment
		spec.Env = k.Baseline.Catalog.Env(srv.Of)
	}
	up, err := k.Harness.Up(ctx, spec)
	defer up.Down(ctx)
	if up.Conformance != nil && srv.Conformance == nil {
		srv.Conformance = up.Conformance
	}
	if up.RoundTrip != nil && b.run.RoundTrip == nil {
		b.run.RoundTrip = up.RoundTrip
	}
	if up.Remote() {
		round.ServerAddress = up.Address
	}
	spent := time.Duration(0) // warm-ups and measurements, for the overhead
	if err == nil {
		before, hostOK := usage.ReadHostCPU(k.HostStat)
		tool, capacity := b.tool, b.capacity
		if swept {
			tool, capacity = b.rate, nil // a capacity at a set rate is the rate
		}
		loadSpec := plan.LoadSpec(k.Config, cell, sc, k.Config.RoundDuration(), tool)
		if swept {
			loadSpec.QPS = max(1, int(math.Round(round.TargetRPS)))
		}
		switch {
		case swept && loadSpec.Steady != nil:
			// At a set rate every interval completes the rate's calls: the
			// warm-up is what the server needed in its saturation cell.
			loadSpec.Warmup, loadSpec.Steady = b.saturationWarmup(ci, srv.Name, loadSpec.Warmup), nil
		case loadSpec.Steady != nil:
			loadSpec.Steady.Min = seededMin(*srv, loadSpec, b.manifest(srv).LeastWarmup())
		}
		b.Progress.Printf("%s: ready; warm-up %s, then measuring %s with %s%s", srv.Name, warmupText(loadSpec), loadSpec.Duration, tool.Name(), rateText(round.TargetRPS, scenario.Kind(cell.Kind).RateUnit()))
		round.Measurement, err = b.measure(ctx, up, tool, loadSpec, "load")
		spent += loadSpec.Duration + usage.LoadTail
		if round.Load != nil {
			spent += round.Load.Warmup
		}
		if err == nil && round.Load.OK == 0 {
			err = &record.PhaseError{Phase: "load", Err: fmt.Errorf("no call succeeded (%s)", round.Load.Failures())}
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
			if after, ok := usage.ReadHostCPU(k.HostStat); ok && hostOK {
				steal := after.StealSince(before)
				round.HostSteal = &steal
			}
		}
	}
	round.Phases = up.Phases
	round.ServerCPUSet, round.ClientCPUSet = up.ServerCPUSet, up.ClientCPUSet
	round.OOMKills = up.OOMKills()
	if err != nil {
		return b.fail(srv.Name, round, err)
	}
	round.Overhead = max(0, round.Took()-spent.Seconds())
	b.Progress.Printf("%s: %s", srv.Name, roundText(round, scenario.Kind(cell.Kind).RateUnit(), sweep.Poisson(b.run)))
	return round
}

// measure loads the server and, when the client runs on this machine,
// reads how much other work the host did over the measurement window.
func (b *Bench) measure(ctx context.Context, up *harness.Instance, tool load.Tool, spec load.Spec, name string) (record.Measurement, error) {
	if b.Kit.HostStat == "" {
		return up.Measure(ctx, tool, spec, name)
	}
	host := usage.SampleHost(ctx, b.Kit.HostStat, hostPeriod)
	m, err := up.Measure(ctx, tool, spec, name)
	host.Stop()
	if err != nil || m.Load == nil || m.Server.Samples == 0 || m.Client.Samples == 0 {
		return m, err
	}
	if busy, ok := host.BusyCores(m.Load.Start, m.Load.End, b.run.Hardware.CPUs); ok {
		other := max(0, busy-(m.Server.CPUAvgPercent+m.Client.CPUAvgPercent)/100)
		m.OtherCores = &other
	}
	return m, nil
}

// hostPeriod is how often the host's counters are read during a
// measurement: the window's ends are known to within it.
const hostPeriod = 250 * time.Millisecond

// seededMin is the least warm-up of a server's next round under the
// steady-state rule: the rule's own, the one the server declares
// (declared, its server.json's warmup_min), or half the median warm-up of
// its rounds so far that the rule ended (their transients: the rule ends
// a warm-up once the steady stretch is as long as the transient before
// it), so that a round whose noise hides the end of a climb its server's
// earlier rounds showed does not stop inside it. Never more than half the
// cap, which leaves the rule room.
func seededMin(srv record.Server, spec load.Spec, declared time.Duration) time.Duration {
	var warmups []float64
	for _, r := range srv.Rounds {
		if r.Load != nil && r.Load.WarmupEnd == record.WarmupSteady {
			warmups = append(warmups, float64(r.Load.Warmup))
		}
	}
	seeded := time.Duration(stats.Median(warmups) / 2).Truncate(load.SeriesInterval)
	return min(max(spec.Steady.Min, declared, seeded), spec.Warmup/2)
}

// manifest is what a row's server declares: a baseline row's as the
// baseline's catalog has it.
func (b *Bench) manifest(srv *record.Server) catalog.Manifest {
	if srv.Of != "" && b.Kit.Baseline != nil {
		return b.Kit.Baseline.Catalog.Manifest(srv.Of)
	}
	return b.Kit.Catalog.Manifest(srv.Name)
}

// saturationWarmup is the warm-up of a rate cell's round: the longest its
// server needed in the rounds of its saturation cell so far, else the cap.
func (b *Bench) saturationWarmup(ci int, name string, capped time.Duration) time.Duration {
	srv, ok := b.run.Cells[sweep.Saturation(b.run, ci)].Server(name)
	longest := time.Duration(0)
	for _, r := range srv.Rounds {
		if r.Load != nil && r.Load.WarmupEnd == record.WarmupSteady {
			longest = max(longest, r.Load.Warmup)
		}
	}
	if !ok || longest == 0 {
		return capped
	}
	return min(longest, capped)
}

// warmupText says how a load warms up.
func warmupText(spec load.Spec) string {
	// A rate cell's warm-up is its saturation cell's, measured to the
	// nanosecond: a tenth of a second says it.
	if spec.Steady == nil {
		return spec.Warmup.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("until steady (from %s, at most %s)", spec.Steady.Min, spec.Warmup)
}

// rateText says the rate a rate cell's load is at, in the cell's unit
// (msg/s for a stream's messages).
func rateText(target float64, unit string) string {
	if target == 0 {
		return ""
	}
	return fmt.Sprintf(" at %.0f %s", target, unit)
}

// roundText says what a round measured, its rates in unit.
func roundText(r record.Round, unit string, poisson bool) string {
	text := fmt.Sprintf("%.0f %s, server CPU %.1f%%, client CPU %.1f%%", r.Load.RPS, unit, r.Server.CPUAvgPercent, r.Client.CPUAvgPercent)
	if r.TargetRPS > 0 {
		text = fmt.Sprintf("%.0f of %.0f %s, p99 %s, server CPU %.1f%%, client CPU %.1f%%", r.Load.RPS, r.TargetRPS, unit,
			r.Load.Latency.P99.Round(10*time.Microsecond), r.Server.CPUAvgPercent, r.Client.CPUAvgPercent)
		if why := sweep.Unsustained(r.TargetRPS, poisson, *r.Load); why != "" {
			text += "; unsustained: " + why
		}
		if why := sweep.Unstable(r.TargetRPS, *r.Load); why != "" {
			text += "; unstable: " + why
		}
	}
	switch {
	case r.ClientBound:
		text += "; client-bound"
	}
	switch {
	case r.Capacity != nil:
		text += fmt.Sprintf("; capacity (%s): %.0f %s, server CPU %.1f%%",
			r.Capacity.Load.Tool, r.Capacity.Load.RPS, unit, r.Capacity.Server.CPUAvgPercent)
	case r.CapacityFailure != "":
		text += "; the capacity measurement failed: " + r.CapacityFailure
	}
	return text
}

func (b *Bench) cellText(cell record.Cell) string {
	if len(b.run.Cells) == 1 {
		return ""
	}
	return " in " + plan.Of(cell).Name()
}

// fail records why a round could not be measured.
func (b *Bench) fail(name string, round record.Round, err error) record.Round {
	f := harness.FailureOf(err)
	slog.Debug("round failed", "server", name, "round", round.Round, "phase", f.Phase, "err", err)
	b.Progress.Printf("%s: %s failed: %s", name, f.Phase, f.Reason)
	round.Failure = &f
	return round
}

// roundOverhead is about what a round takes beyond its loads: containers
// started, readiness, the gate, stats.
const roundOverhead = 1500 * time.Millisecond

// Planned is the number of rounds a run of servers over cells has still to
// measure: all of them, but for a resumed run the rounds it has and none of
// a server that failed.
func Planned(cells []record.Cell, servers []string, rounds int) int {
	n := 0
	for _, c := range cells {
		for _, name := range servers {
			s, ok := c.Server(name)
			switch {
			case !ok:
				n += rounds
			case s.FirstFailure() == nil:
				n += max(0, rounds-len(s.Rounds))
			}
		}
	}
	return n
}

// PerRound estimates a round's time before any is measured: warm-up (under
// auto its least, which a server steady from the start takes),
// measurement, the load past the window and overhead, and the capacity
// measurement when it is on.
func PerRound(cfg config.Config) time.Duration {
	warmup := cfg.WarmupCap()
	if cfg.Warmup.Auto {
		warmup = steady.Default.Min
	}
	each := warmup + cfg.RoundDuration() + usage.LoadTail + roundOverhead
	if cfg.CapacityOn() {
		c := capacitySpec(load.Spec{Warmup: warmup, Duration: cfg.RoundDuration()})
		each += c.Warmup + c.Duration + usage.LoadTail
	}
	return each
}
