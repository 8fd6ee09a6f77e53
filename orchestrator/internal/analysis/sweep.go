package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// Sweep is a saturation cell with its rate cells: each server's latency
// at each rate, the points of its latency–throughput curve, and the
// objective's ranking when the run has one.
type Sweep struct {
	// Cell is the saturation cell's index in the run, Name its name.
	Cell int
	Name string
	// Points are every server's, server by server in the cell's order,
	// each server's by target rate (a server that falls behind may
	// achieve less at a higher target).
	Points []Point
	// SLO is the run's latency objective, unset when it has none;
	// Objective is then its ranking.
	SLO       config.SLO
	Objective *Objective
	// Tool is the tool that loaded the rate cells; Unit what their rates
	// count (req/s, or msg/s of a stream's messages).
	Tool, Unit string
	// Search says the rate cells are an objective's probes.
	Search bool
}

// Point is one server at one rate.
type Point struct {
	Server string
	// Cell is the rate cell's index in the run; Rate says its rate as the
	// settings do ("25%", "5000", "probe 2").
	Cell int
	Rate string
	// Target is the rate asked for in req/s, 0 when none could be set
	// (the server's capacity was not known); Row sums up the rounds
	// measured (RPS is the rate achieved; latencies pooled, see
	// Row.Pooled), with no rounds when none was.
	Target float64
	Row    Row
	// Failed says how the server failed at this rate (a crash, an OOM kill
	// at overload, no rate to load at), "" when it did not. Unsustained
	// says why a round did not sustain the target, Unstable why a round's
	// queue grew over its window. Such a point is drawn and listed,
	// marked, and no objective counts it.
	Failed, Unsustained, Unstable string
	// Verdict is the objective's at this rate, nil without one.
	Verdict *sweep.Verdict
	// Series are the measured rounds' intervals, for the latency over
	// time.
	Series []RoundSeries
}

// RoundSeries is one round's series, with where its window starts in it.
type RoundSeries struct {
	Round  int
	Window time.Time
	*record.Series
}

// Measured says the point has at least one measured round.
func (p Point) Measured() bool { return p.Row.RPS.N > 0 }

// Meets says the objective was met at this rate.
func (p Point) Meets() bool { return p.Verdict != nil && p.Verdict.Met }

// Mark says, "" for a clean point, why no objective counts it: failed,
// unsustained or unstable, with why.
func (p Point) Mark() string {
	switch {
	case p.Failed != "":
		return "failed: " + p.Failed
	case p.Unsustained != "":
		return "unsustained: " + p.Unsustained
	case p.Unstable != "":
		return "unstable: " + p.Unstable
	}
	return ""
}

// Objective is a sweep's servers ranked by the throughput each sustains
// within the latency objective: the bracket between the highest rate it
// met and the lowest it failed, both tested, and its middle as the
// figure. The middle is the bracket's geometric one, not an
// interpolation of the curve, which would assume its shape at the knee,
// where latency climbs fastest. None names the servers that met it at no
// rate.
type Objective struct {
	Rows  []Sustained
	None  []string
	Notes []string
}

// Sustained is one server's sustainable throughput within an objective.
type Sustained struct {
	Name string
	// Group is the row's letters: rows whose brackets overlap share one.
	Group string
	// Met is the point of the highest rate met below every rate that
	// failed; Failed the point of the lowest rate failed above it, nil
	// when none did.
	Met    Point
	Failed *Point
	// Capacity is the highest throughput a round of the server's
	// saturation cell measured, 0 when none did: no rate above it can be
	// sustained, for the closed loop at saturation is the most the server
	// answered. It closes the bracket when no rate tried failed.
	Capacity float64
}

// Lo and Hi bracket the sustainable throughput in req/s: the rate met,
// and the lowest failed above it; when none did, the capacity, or +Inf
// when it is not above the rate met.
func (s Sustained) Lo() float64 { return s.Met.Target }
func (s Sustained) Hi() float64 {
	switch {
	case s.Failed != nil:
		return s.Failed.Target
	case s.Capacity > s.Lo():
		return s.Capacity
	}
	return math.Inf(1)
}

// Figure is the sustainable throughput a ranking shows: the bracket's
// geometric middle, √(Lo·Hi), off any rate inside the bracket by at most
// a factor √(Hi/Lo). The rate met alone is a bound that the grid of rates
// tried sets below the knee by up to a whole step, and two runs whose
// shares of capacity fall on different rates can never put their rates
// met inside each other's brackets. With no bound above it, the figure is
// the rate met, a lower bound (Bounded says which).
func (s Sustained) Figure() float64 {
	if !s.Bounded() {
		return s.Lo()
	}
	return math.Sqrt(s.Lo() * s.Hi())
}

// Bounded says the bracket closes: a rate above the one met failed, or
// the capacity is above it.
func (s Sustained) Bounded() bool { return !math.IsInf(s.Hi(), 1) }

// sweeps are the run's sweeps, in the order of their saturation cells.
func (a Run) sweeps() []Sweep {
	run := a.Record
	slo := runSLO(run)
	var out []Sweep
	for si, sat := range run.Cells {
		if plan.Of(sat).Swept() {
			continue
		}
		sw := Sweep{Cell: si, Name: plan.Of(sat).Name(), SLO: slo, Unit: scenario.Kind(sat.Kind).RateUnit()}
		for _, srv := range sat.Servers {
			var points []Point
			for ci, c := range run.Cells {
				if plan.Of(c).Swept() && sweep.Saturation(run, ci) == si {
					if p, ok := pointOf(c, ci, srv.Name, slo, sweep.Poisson(run)); ok {
						points = append(points, p)
						sw.Search = sw.Search || c.Probe > 0
						if p.Measured() {
							sw.Tool = cmp.Or(sw.Tool, p.Row.Tools[0])
						}
					}
				}
			}
			slices.SortStableFunc(points, func(a, b Point) int { return cmp.Compare(a.Target, b.Target) })
			sw.Points = append(sw.Points, points...)
		}
		if len(sw.Points) == 0 {
			continue
		}
		sw.Tool = cmp.Or(sw.Tool, "none measured")
		if slo.Set() {
			sw.Objective = a.objective(sw)
		}
		out = append(out, sw)
	}
	return out
}

// pointOf is a server's point in a rate cell, when it has a round there.
func pointOf(c record.Cell, ci int, name string, slo config.SLO, poisson bool) (Point, bool) {
	s, ok := c.Server(name)
	if !ok || s.Unsupported != "" || len(s.Rounds) == 0 {
		return Point{}, false
	}
	p := Point{Server: name, Cell: ci, Rate: RateName(plan.Of(c)), Target: s.Rounds[0].TargetRPS}
	var measured []record.Round
	for _, r := range s.Rounds {
		if r.Failure != nil || r.Load == nil {
			continue
		}
		measured = append(measured, r)
		if why := sweep.Unsustained(r.TargetRPS, poisson, *r.Load); why != "" && p.Unsustained == "" {
			p.Unsustained = fmt.Sprintf("round %d: %s", r.Round, why)
		}
		if why := sweep.Unstable(r.TargetRPS, *r.Load); why != "" && p.Unstable == "" {
			p.Unstable = fmt.Sprintf("round %d: %s", r.Round, why)
		}
		if r.Load.Series != nil {
			p.Series = append(p.Series, RoundSeries{Round: r.Round, Window: r.Load.Start, Series: r.Load.Series})
		}
	}
	if len(measured) > 0 {
		p.Row = rowOf(s, measured, loadMeasurement, c.ClientCPUs)
	} else {
		p.Row = Row{Name: name, Stack: s.Stack, Library: s.Built()}
	}
	if f := s.FirstFailure(); f != nil {
		p.Failed = where(*f) + " failed: " + f.Reason
	}
	if slo.Set() {
		v := sweep.Decide(s.Rounds, slo, poisson)
		p.Verdict = &v
	}
	return p, true
}

// RateName is a rate cell's rate as the settings say it.
func RateName(c plan.Cell) string {
	if c.Probe > 0 {
		return "probe " + strconv.Itoa(c.Probe)
	}
	return c.Rate.String()
}

// runSLO is the run's GRPC_LATENCY_SLO, unset when it has none (or a
// record from before it).
func runSLO(run record.Run) config.SLO {
	var slo config.SLO
	if s, ok := run.Setting("GRPC_LATENCY_SLO"); ok {
		_ = slo.UnmarshalText([]byte(s.Value)) // the run validated it
	}
	return slo
}

// RateCell is a server's point in rate cell ci, for the table rows of a
// rate cell.
func (a Run) RateCell(ci int, server string) (Point, bool) {
	return pointOf(a.Record.Cells[ci], ci, server, runSLO(a.Record), sweep.Poisson(a.Record))
}

// objective ranks a sweep's servers by the bracket of their sustainable
// throughput.
func (a Run) objective(sw Sweep) *Objective {
	o := &Objective{}
	for _, name := range serverNames(sw.Points) {
		var points []Point
		for _, p := range sw.Points {
			if p.Server == name && p.Target > 0 {
				points = append(points, p)
			}
		}
		row, note, ok := bracket(name, points, sw.Unit)
		if note != "" {
			o.Notes = append(o.Notes, note)
		}
		if !ok {
			o.None = append(o.None, name)
			o.Notes = append(o.Notes, noneNote(name, sw.SLO, points, sw.Unit))
			continue
		}
		row.Capacity = capacityOf(a.Record.Cells[sw.Cell], name)
		if f := row.Failed; f != nil {
			o.Notes = append(o.Notes, fmt.Sprintf("%s: met at %s (%.0f %s), %s; not at %s (%.0f %s): %s",
				name, row.Met.Rate, row.Met.Target, sw.Unit, verdictFigure(*row.Met.Verdict, sw.SLO.Percentile), f.Rate, f.Target, sw.Unit, f.Verdict.Why))
		}
		o.Rows = append(o.Rows, row)
	}
	slices.SortStableFunc(o.Rows, func(x, y Sustained) int {
		return cmp.Or(cmp.Compare(y.Figure(), x.Figure()), cmp.Compare(y.Hi(), x.Hi()))
	})
	letters := stats.Letters(len(o.Rows), func(i, j int) bool {
		x, y := o.Rows[i], o.Rows[j]
		return x.Lo() >= y.Hi() || y.Lo() >= x.Hi()
	})
	for i := range o.Rows {
		o.Rows[i].Group = letters[i]
	}
	o.Notes = append(o.Notes, a.objectiveNotes(sw)...)
	return o
}

// bracket is a server's sustainable throughput from its points, by
// target: the lowest rate that failed the objective, and the highest met
// below it; note says when a rate above that failure met it all the same.
func bracket(name string, points []Point, unit string) (row Sustained, note string, ok bool) {
	failed := slices.IndexFunc(points, func(p Point) bool { return !p.Meets() })
	below := points
	if failed >= 0 {
		below = points[:failed]
		f := points[failed]
		row.Failed = &f
		for _, p := range points[failed+1:] {
			if p.Meets() {
				note = fmt.Sprintf("%s: met the objective at %s (%.0f %s) above a rate it failed, %s (%.0f %s): ranked below that failure",
					name, p.Rate, p.Target, unit, f.Rate, f.Target, unit)
				break
			}
		}
	}
	if len(below) == 0 {
		return Sustained{}, note, false
	}
	row.Name, row.Met = name, below[len(below)-1]
	return row, note, true
}

// capacityOf is the highest capacity a round of a server's saturation
// cell measured (the figure a share of capacity is taken of).
func capacityOf(sat record.Cell, name string) float64 {
	s, _ := sat.Server(name)
	best := 0.0
	for _, r := range s.Rounds {
		if c, ok := sweep.RoundCapacity(r); ok {
			best = max(best, c)
		}
	}
	return best
}

// noneNote says why a server met the objective at no rate: the verdict
// at its lowest.
func noneNote(name string, slo config.SLO, points []Point, unit string) string {
	if len(points) == 0 || points[0].Verdict == nil {
		return fmt.Sprintf("%s: no rate met %s (none could be set)", name, slo)
	}
	p := points[0]
	return fmt.Sprintf("%s: no rate met %s; at the lowest, %s (%.0f %s): %s", name, slo, p.Rate, p.Target, unit, p.Verdict.Why)
}

// objectiveNotes say how the objective was decided, and what the search
// cost.
func (a Run) objectiveNotes(sw Sweep) []string {
	pc := sw.SLO.Percentile
	out := []string{
		fmt.Sprintf("sustainable throughput: the highest rate (%s asked for) at which every round was measured, sustained and stable with %s of every call of the rounds within %s at %.0f%% confidence (the upper bound of its distribution-free interval, failed and unanswered calls counted slower than any), below the lowest rate that failed; the bracket runs from it to that lowest failure or, when none failed, to the highest capacity a round of its saturation cell measured (no rate above it can be sustained), and the figure (%s) is the bracket's geometric middle, √(met × failed), a rate between the two ends, or the rate met as a lower bound (≥) when neither bounds it (rates loaded open-loop by %s)",
			sw.Unit, pc, sw.SLO.Bound, 100*histogram.Confidence, sw.Unit, sw.Tool),
		"groups: rows whose brackets overlap share a letter; a server that met a rate another failed is ranked above it",
	}
	if slices.ContainsFunc(sw.Points, func(p Point) bool { return p.Measured() && p.Verdict != nil && !p.Verdict.Pooled }) {
		out = append(out, fmt.Sprintf("where a round kept no latency histogram (an older record, a tool without one), every round's own %s must be within the bound, and the figure is the slowest round's", pc))
	}
	if sw.Search {
		rounds := 0
		for _, p := range sw.Points {
			rounds = max(rounds, p.Row.RPS.N)
		}
		out = append(out, fmt.Sprintf("search: %d probes per server, a bisection of the share of its capacity on the grid k/%d (up to the capacity itself), each probe's rate decided on every round of the probes before it; cost: %d probes × %d rounds = %d loads of warm-up and window per server, measured after every other round",
			plan.SLOProbes, sweep.Grid, plan.SLOProbes, rounds, plan.SLOProbes*rounds))
	}
	return out
}

// serverNames are the points' servers, in their order.
func serverNames(points []Point) []string {
	var names []string
	for _, p := range points {
		if !slices.Contains(names, p.Server) {
			names = append(names, p.Server)
		}
	}
	return names
}

// rateRanking is a rate cell's ranking: every server at its own rate, so
// that its req/s is its target and says nothing of the server; the rows
// go by the objective's percentile (p99 without one), lowest first, and
// its groups test the rounds' own values of it.
func (a Run) rateRanking(c record.Cell) Ranking {
	name := cmp.Or(runSLO(a.Record).Percentile, "p99")
	rows := LoadRanking(c)
	key := func(r Row) time.Duration { return cmp.Or(r.Percentile(name), histogram.Infinite) } // n/a last
	slices.SortStableFunc(rows, func(x, y Row) int { return cmp.Compare(key(x), key(y)) })
	tested := slices.Clone(rows)
	for i, r := range tested {
		s, _ := c.Server(r.Name)
		tested[i].Values = nil
		for _, rd := range s.Rounds {
			tested[i].Values = append(tested[i].Values, float64(sweep.Percentile(name, rd.Load.Latency)))
		}
	}
	an := Judge(a.Design, tested)
	for i := range rows {
		rows[i].Group = tested[i].Group
	}
	verdicts := a.verdicts(rows, an)
	if len(verdicts) > 0 {
		verdicts[0] = strings.Replace(verdicts[0], "cannot be told apart", "cannot be told apart by their rounds' "+name, 1)
	}
	return Ranking{Rows: rows, Analysis: an, Verdicts: verdicts}
}

// rateNotes say, in a rate cell, what each server was loaded at and
// whether it kept up: a row's req/s is the rate achieved, not a capacity.
func (a Run) rateNotes(c Cell) []string {
	if !c.Plan.Swept() {
		return nil
	}
	name := cmp.Or(runSLO(a.Record).Percentile, "p99")
	ci := slices.IndexFunc(a.Record.Cells, func(o record.Cell) bool { return plan.Of(o) == c.Plan })
	out := []string{fmt.Sprintf("rate cell: each server loaded open-loop by %s at %s; %s is the rate achieved, beside the target; rows by %s, lowest first", c.Tool, rateWhat(c.Plan, c.Unit), c.Unit, name)}
	for _, s := range c.Record.Servers {
		p, ok := a.RateCell(ci, s.Name)
		if !ok || !p.Measured() {
			continue
		}
		line := fmt.Sprintf("%s: target %.0f %s, achieved %.0f", s.Name, p.Target, c.Unit, p.Row.RPS.Median)
		if mark := p.Mark(); mark != "" && p.Failed == "" {
			line += "; " + mark + ", so no latency objective counts this rate"
		}
		if v := p.Verdict; v != nil && v.Met {
			line += fmt.Sprintf("; meets %s: %s", runSLO(a.Record), verdictFigure(*v, name))
		}
		out = append(out, line)
	}
	return out
}

// verdictFigure says the figure a verdict compared with the bound, and
// what it is.
func verdictFigure(v sweep.Verdict, name string) string {
	if !v.Pooled {
		return fmt.Sprintf("%s %s in its slowest round (no histograms to pool)", name, sweep.DurationText(v.Upper))
	}
	return fmt.Sprintf("%s at most %s (%.0f%% confidence, %d calls)", name, sweep.DurationText(v.Upper), 100*histogram.Confidence, v.Calls)
}

// rateWhat says what a rate cell's rate is.
func rateWhat(c plan.Cell, unit string) string {
	switch {
	case c.Probe > 0:
		return fmt.Sprintf("the latency objective's probe %d (a bisection of the share of its capacity)", c.Probe)
	case c.Rate.Share > 0:
		return c.Rate.String() + " of its capacity (the capacity tool's " + unit + " in round 1 of the saturation cell)"
	}
	return c.Rate.String() + " " + unit
}

// Percentile is a row's percentile named as GRPC_LATENCY_SLO names it.
func (r Row) Percentile(name string) time.Duration {
	return sweep.Percentile(name, record.Latency{P50: r.P50, P90: r.P90, P95: r.P95, P99: r.P99, P999: r.P999})
}
