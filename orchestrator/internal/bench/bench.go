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

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/images"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/progress"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/suite"
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
	spec.Warmup = min(capacityWarmup, loadSpec.Warmup)
	spec.Duration = max(loadSpec.Duration/2, time.Second)
	return spec
}

// Options are what a benchmark runs with.
type Options struct {
	// Hosts are where the servers and their clients run; Observer, when
	// set, hears what each server is doing.
	Hosts    suite.Hosts
	Observer suite.Observer
	// Builder builds the servers' images, ClientBuilder the client's, each
	// on the engine that runs them.
	Builder       images.Builder
	ClientBuilder images.Builder
	Config        config.Config
	// Scenarios are the run's scenarios, compiled, by name.
	Scenarios map[string]*scenario.Scenario
	Folder    record.Folder
	// Run is the record: its cells set up (settings, placement), filled as
	// rounds finish.
	Run *record.Run
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

// Bench is one benchmark run, as New built it.
type Bench struct {
	Options
	// tool measures every round; capacity, nil when off, measures it again;
	// rate, nil without rate cells, loads those.
	tool, capacity, rate load.Tool
	// suite is made once the client image is built.
	suite *suite.Suite
}

// New builds a benchmark with the settings' load tools, refusing one that
// does not drive the call kind of every scenario of the run.
func New(o Options) (*Bench, error) {
	b := &Bench{Options: o}
	var err error
	if b.tool, b.capacity, err = b.tools(); err != nil {
		return nil, err
	}
	var scenarios []*scenario.Scenario
	for _, name := range plan.ScenarioNames(o.Run.Cells) {
		scenarios = append(scenarios, o.Scenarios[name])
	}
	if err := plan.Drives("GRPC_LOAD_TOOL", b.tool, scenarios); err != nil {
		return nil, err
	}
	if b.capacity != nil {
		if err := plan.Drives("GRPC_CAPACITY_TOOL", b.capacity, scenarios); err != nil {
			return nil, err
		}
	}
	if slices.ContainsFunc(o.Run.Cells, func(c record.Cell) bool { return c.Swept() }) {
		rate, ok := load.Lookup(config.RateTool)
		if !ok {
			return nil, fmt.Errorf("no load tool %q for the rate cells", config.RateTool)
		}
		if err := plan.Drives("GRPC_LOAD_RATES", rate, scenarios); err != nil {
			return nil, err
		}
		b.rate = rate
	}
	return b, nil
}

// Benchmark measures every server in every cell. It returns ctx's error
// when the run was interrupted; a server that fails is recorded, and the
// run goes on.
func (b *Bench) Benchmark(ctx context.Context, servers []string) error {
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
	active := func(record.Server) bool { return true }
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
				spent, err := b.visit(ctx, v, r, look)
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
		active = func(s record.Server) bool { return open[s.Name] }
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
func (b *Bench) visits(r int, active func(record.Server) bool) []record.Visit {
	var visits []record.Visit
	for ci, cell := range b.Run.Cells {
		for _, srv := range cell.Servers {
			if srv.Unsupported == "" && srv.FirstFailure() == nil && active(srv) {
				visits = append(visits, record.Visit{Cell: ci, Server: srv.Name})
			}
		}
	}
	rng := rand.New(rand.NewPCG(b.Run.Seed, uint64(r)))
	rng.Shuffle(len(visits), func(i, j int) { visits[i], visits[j] = visits[j], visits[i] })
	if r == 1 { // a rate cell's first round needs its server's capacity, a probe the probe before
		stage := func(v record.Visit) int { return sweep.Stage(b.Run.Cells[v.Cell].Cell) }
		slices.SortStableFunc(visits, func(v, w record.Visit) int { return cmp.Compare(stage(v), stage(w)) })
	}
	return visits
}

// visit measures round r of one server of one cell, unless it has it (a
// resumed run) or failed since the round's order was drawn, and saves the
// record. It returns the time the round took, 0 when skipped.
func (b *Bench) visit(ctx context.Context, v record.Visit, r, look int) (time.Duration, error) {
	cell := &b.Run.Cells[v.Cell]
	srv := &cell.Servers[slices.IndexFunc(cell.Servers, func(s record.Server) bool { return s.Name == v.Server })]
	if len(srv.Rounds) >= r || srv.FirstFailure() != nil {
		return 0, nil
	}
	start := time.Now()
	b.Progress.Round(srv.Name)
	b.Progress.Printf("%s: round %d of %d%s", srv.Name, r, look, b.cellText(*cell))
	round := b.round(ctx, v.Cell, srv, r)
	b.Progress.RoundDone()
	gone := b.hostGone(ctx, round.Failure)
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
	rec := record.RunLook{Rounds: rounds, Elapsed: elapsed.Seconds()}
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
func openIn(run record.Run, rows []report.RankingRow) (stats.Analysis, []string) {
	a := report.Judge(run, rows)
	samples := make([]stats.Sample, len(rows))
	for i, r := range rows {
		samples[i] = stats.Sample{Name: r.Name}
	}
	return a, a.Open(samples)
}

// HostGoneError stops a run whose engine no longer answers.
type HostGoneError struct{ Err error }

func (e *HostGoneError) Error() string {
	return "the Docker engine went away during the run (" + e.Err.Error() + "); the servers measured until then are in the results"
}

func (e *HostGoneError) Unwrap() error { return e.Err }

// hostGone checks, after a failure other than an interruption, whether
// the engine still answers.
func (b *Bench) hostGone(ctx context.Context, f *record.Failure) error {
	if f == nil || ctx.Err() != nil || b.Alive == nil {
		return nil
	}
	if err := b.Alive(ctx); err != nil {
		return &HostGoneError{Err: err}
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
	client, err := images.BuildClient(ctx, b.ClientBuilder, b.Folder, b.Progress)
	if err != nil {
		return err
	}
	b.suite = suite.New(b.Hosts, suite.Images{Client: client}, b.Observer)
	type key struct{ scenario, base string }
	failed := map[key]error{}
	ids := map[key]string{}
	for _, sc := range plan.ScenarioNames(b.Run.Cells) {
		for _, base := range b.Builder.Catalog.Bases(servers) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if b.Builder.Catalog.Unsupported(base, sc, false) != "" {
				continue
			}
			folder, err := b.Folder.Sub(base)
			if err != nil {
				return err
			}
			img, _, err := images.BuildServer(ctx, b.Builder, base, b.Scenarios[sc], folder, "build-"+sc+".log", b.Progress)
			if err != nil {
				f := suite.FailureOf(err)
				if gone := b.hostGone(ctx, &f); gone != nil {
					return gone
				}
			}
			ids[key{sc, base}], failed[key{sc, base}] = img.ID, err
		}
	}
	for ci := range b.Run.Cells {
		cell := &b.Run.Cells[ci]
		if sc := b.Scenarios[cell.Scenario]; sc.Kind != scenario.Unary {
			cell.Kind = sc.Kind
		}
		for _, name := range servers {
			k := key{cell.Scenario, b.Builder.Catalog.Base(name)}
			i := slices.IndexFunc(cell.Servers, func(s record.Server) bool { return s.Name == name })
			if i < 0 { // a resumed run has its servers already
				cell.Servers = append(cell.Servers, record.Server{Name: name})
				i = len(cell.Servers) - 1
			}
			srv := &cell.Servers[i]
			srv.Image, srv.ImageID = b.Builder.ServerTag(k.base, k.scenario), ids[k]
			m := b.Builder.Catalog.Manifest(name)
			srv.Stack, srv.Library, srv.Version = m.Stack, m.Name, m.Version
			if m.GRPC != nil {
				srv.GRPC = m.GRPC.Name + " " + m.GRPC.Version
			}
			srv.Unsupported = b.Builder.Catalog.Unsupported(name, cell.Scenario, cell.TLS)
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
func (b *Bench) round(ctx context.Context, ci int, srv *record.Server, r int) record.Round {
	cell := b.Run.Cells[ci]
	round := record.Round{Round: r, Start: time.Now()}
	folder, err := b.Folder.Sub(srv.Name, record.CellDir(*b.Run, cell), fmt.Sprintf("round-%d", r))
	if err != nil {
		return b.fail(srv.Name, round, err)
	}
	if cell.Swept() { // known before a container starts: the capacity, the probes before
		if round.TargetRPS, err = sweep.Target(*b.Run, ci, srv.Name, b.Config.SLO); err != nil {
			return b.fail(srv.Name, round, &record.PhaseError{Phase: "rate", Err: err})
		}
	}
	spec := plan.ServerSpec(b.Config, cell, srv.Name, srv.Image, b.Builder.Catalog.Env(srv.Name), b.Scenarios[cell.Scenario], folder)
	up, err := b.suite.Up(ctx, spec)
	defer up.Down(ctx)
	if up.Conformance != nil && srv.Conformance == nil {
		srv.Conformance = up.Conformance
	}
	if up.RoundTrip != nil && b.Run.RoundTrip == nil {
		b.Run.RoundTrip = up.RoundTrip
	}
	if b.Hosts.Remote != nil {
		round.ServerAddress = up.Address
	}
	spent := time.Duration(0) // warm-ups and measurements, for the overhead
	if err == nil {
		before, hostOK := usage.ReadHostCPU(b.HostStat)
		loadSpec := plan.LoadSpec(b.Config, cell, b.Scenarios[cell.Scenario], b.Config.RoundDuration())
		tool, capacity := b.tool, b.capacity
		if cell.Swept() {
			tool, capacity = b.rate, nil // a capacity at a set rate is the rate
			loadSpec.QPS = max(1, int(math.Round(round.TargetRPS)))
		}
		b.Progress.Printf("%s: ready; warm-up %s, then measuring %s with %s%s", srv.Name, loadSpec.Warmup, loadSpec.Duration, tool.Name(), rateText(round.TargetRPS))
		round.Measurement, err = b.measure(ctx, up, tool, loadSpec, "load")
		spent += loadSpec.Warmup + loadSpec.Duration + usage.LoadTail
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
	b.Progress.Printf("%s: %s", srv.Name, roundText(round, b.Scenarios[cell.Scenario].Kind.RateUnit()))
	return round
}

// measure loads the server and, when the client runs on this machine,
// reads how much other work the host did over the measurement window.
func (b *Bench) measure(ctx context.Context, up *suite.Instance, tool load.Tool, spec load.Spec, name string) (record.Measurement, error) {
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
func phaseTime(phases []record.Phase) float64 {
	var total float64
	for _, p := range phases {
		total += p.Seconds
	}
	return total
}

// rateText says the rate a rate cell's load is at.
func rateText(target float64) string {
	if target == 0 {
		return ""
	}
	return fmt.Sprintf(" at %.0f req/s", target)
}

// roundText says what a round measured, its rates in unit.
func roundText(r record.Round, unit string) string {
	text := fmt.Sprintf("%.0f %s, server CPU %.1f%%, client CPU %.1f%%", r.Load.RPS, unit, r.Server.CPUAvgPercent, r.Client.CPUAvgPercent)
	if r.TargetRPS > 0 {
		text = fmt.Sprintf("%.0f of %.0f %s, p99 %s, server CPU %.1f%%, client CPU %.1f%%", r.Load.RPS, r.TargetRPS, unit,
			r.Load.Latency.P99.Round(10*time.Microsecond), r.Server.CPUAvgPercent, r.Client.CPUAvgPercent)
		if why := sweep.Unsustained(r.TargetRPS, *r.Load); why != "" {
			text += "; unsustained: " + why
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
	if len(b.Run.Cells) == 1 {
		return ""
	}
	return " in " + cell.Name()
}

// fail records why a round could not be measured.
func (b *Bench) fail(name string, round record.Round, err error) record.Round {
	f := suite.FailureOf(err)
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
