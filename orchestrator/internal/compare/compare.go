// Package compare sets two runs side by side, as a reader or a CI gate
// needs them: every cell and every server of either run, with the change
// of each figure measured in both, whether it is real, and whether a server
// got slower beyond a threshold (a regression).
//
// Rounds of one run are not independent of the run: they share its
// machine, its hour and its neighbours, so the spread of one run's rounds
// understates how far two runs land apart, and testing two runs' rounds as
// samples of one thing would see drift as change. Two things stand for
// that drift: where a cell has DriftServers or more servers measured in
// both runs, the median shift of all of them (a whole-machine drift) is
// taken out of each server's change before it is judged, and reported;
// and a regression must exceed the threshold, which covers what drift is
// left, as well as be significant.
package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// DefaultThreshold is the slowdown a regression must exceed: on the
// 2-core VMs here a server's median moves by up to 10% between two runs
// of the same code, after the machine's drift is taken out.
const DefaultThreshold = 0.10

// DriftServers is how many servers measured in both runs a cell needs for
// their median shift to be taken as the machine's drift: with fewer, one
// server's own change would be half the estimate.
const DriftServers = 3

// Statuses of a server in two runs.
const (
	Compared    = "compared"   // ranked in both
	NowFails    = "now fails"  // ranked in the first, not ranked in the second
	NowRanked   = "now ranked" // not ranked in the first, ranked in the second
	FailsInBoth = "fails in both"
	OnlyInA     = "only in a" // the second run did not run it
	OnlyInB     = "only in b" // new in the second run
)

// Figure is one figure of a server in two runs: the estimates from each
// run's rounds and their difference (two-sided U test, as benchstat).
// A judged figure is also tested for a slowdown after the drift.
type Figure struct {
	A    stats.Estimate   `json:"a"`
	B    stats.Estimate   `json:"b"`
	Diff stats.Difference `json:"diff"`
	// Judged says the figure decides whether the server regressed: a
	// figure client-bound in either run measures the load client, not the
	// server, and is shown only.
	Judged bool `json:"judged"`
	// Adjusted is the change once the cell's drift is taken out of the
	// second run (the same as Diff.Change without a drift); SlowerP is the
	// one-sided p of "the second run is slower", on the adjusted rounds.
	Adjusted float64 `json:"adjusted_change"`
	SlowerP  float64 `json:"slower_p"`
	// Regressed says this figure makes the server a regression.
	Regressed bool `json:"regressed,omitempty"`
}

// Change is one server of a cell in two runs.
type Change struct {
	Server string `json:"server"`
	Status string `json:"status"`
	// Failure says why it was not ranked, in the run that failed it.
	Failure string `json:"failure,omitempty"`
	// ImageA and ImageB are the images' ids when they differ.
	ImageA string `json:"image_a,omitempty"`
	ImageB string `json:"image_b,omitempty"`
	// ClientBound names the runs ("a", "b") whose load tool was
	// client-bound on this server.
	ClientBound []string `json:"client_bound,omitempty"`
	// RPS is req/s by the load tool, P99 the p99 latency in nanoseconds,
	// Capacity req/s of the capacity measurement (when both runs have it).
	RPS      *Figure `json:"rps,omitempty"`
	P99      *Figure `json:"p99,omitempty"`
	Capacity *Figure `json:"capacity,omitempty"`
	// Regression says why the server counts as a regression; empty if not.
	Regression string `json:"regression,omitempty"`
}

// Drift is the median shift of a figure over the servers of a cell
// measured in both runs: +0.03 is every server 3% faster, as a machine
// would be.
type Drift struct {
	Change  float64 `json:"change"`
	Servers int     `json:"servers"`
}

// ComparedCell is one cell of either run.
type ComparedCell struct {
	Name string    `json:"name"`
	Cell plan.Cell `json:"cell"`
	// In names the only run that has the cell ("a" or "b"); empty when
	// both have it.
	In string `json:"in,omitempty"`
	// Settings are the cell's settings that differ.
	Settings []ChangedSetting `json:"settings,omitempty"`
	// RPSDrift and CapacityDrift are taken out of the changes before they
	// are judged; nil with fewer than DriftServers servers.
	RPSDrift      *Drift   `json:"rps_drift,omitempty"`
	CapacityDrift *Drift   `json:"capacity_drift,omitempty"`
	Servers       []Change `json:"servers"`
}

// ChangedSetting is a setting, or a fact of the hardware, that differs; A
// or B is empty when that run does not have it.
type ChangedSetting struct {
	Name string `json:"name"`
	A    string `json:"a"`
	B    string `json:"b"`
}

// Comparison is two runs side by side.
type Comparison struct {
	// A and B name the runs in the text (their folders); RunA and RunB are
	// the runs' ids.
	A, B      string  `json:"-"`
	RunA      string  `json:"run_a"`
	RunB      string  `json:"run_b"`
	Threshold float64 `json:"threshold"`
	// Settings are the run-wide settings (as given) that differ, Hardware
	// the facts of the machines.
	Settings    []ChangedSetting `json:"settings,omitempty"`
	Hardware    []ChangedSetting `json:"hardware,omitempty"`
	Cells       []ComparedCell   `json:"cells"`
	Regressions int              `json:"regressions"`
	// Unfinished lists the runs that did not run all their rounds: their
	// figures are not final, and a gate cannot pass them.
	Unfinished []Unfinished `json:"unfinished,omitempty"`
}

// Unfinished is a run ("a" or "b") that did not finish, and how it ended.
type Unfinished struct {
	Run   string `json:"run"`
	State string `json:"state"`
}

// unfinished says how a run that did not finish stands, "" when it did:
// interrupted (--resume finishes it), or not finished (still running, or
// killed outright).
func unfinished(r record.Run) string {
	switch r.State {
	case record.Finished:
		return ""
	case record.Interrupted:
		return string(record.Interrupted)
	}
	return "not finished"
}

// Runs compares run a with run b: every cell of either, matched by their
// settings (two runs of one cell each are matched whatever their settings,
// one server at 1 and at 2 CPUs, say), and in each every server of either.
// A server is a regression when it is slower in b by more than threshold
// (a share: 0.05 is 5%) after the cell's drift, with one-sided p ≤
// stats.Alpha, by req/s where the load tool kept up in both runs and by
// the capacity measurement's req/s where both runs have it; and when it was
// ranked in a and fails in b. A server b did not run is listed, not
// counted: b may be a run of fewer servers.
func Runs(a, b record.Run, threshold float64) Comparison {
	cmp := Comparison{A: a.ID, B: b.ID, RunA: a.ID, RunB: b.ID, Threshold: threshold,
		Settings: differences(a.Settings, b.Settings), Hardware: hardware(a, b)}
	matched := map[int]bool{}
	aa, ab := analysis.Of(a), analysis.Of(b)
	for _, ca := range aa.Cells {
		i := slices.IndexFunc(ab.Cells, func(c analysis.Cell) bool { return c.Plan == ca.Plan })
		if i < 0 && len(a.Cells) == 1 && len(b.Cells) == 1 {
			i = 0
		}
		if i < 0 {
			cmp.Cells = append(cmp.Cells, ComparedCell{Name: ca.Name, Cell: ca.Plan, In: "a", Servers: alone(ca.Record, OnlyInA)})
			continue
		}
		matched[i] = true
		cmp.Cells = append(cmp.Cells, cell(ca, ab.Cells[i], threshold))
	}
	for i, cb := range ab.Cells {
		if !matched[i] {
			cmp.Cells = append(cmp.Cells, ComparedCell{Name: cb.Name, Cell: cb.Plan, In: "b", Servers: alone(cb.Record, OnlyInB)})
		}
	}
	for _, c := range cmp.Cells {
		for _, s := range c.Servers {
			if s.Regression != "" {
				cmp.Regressions++
			}
		}
	}
	for name, r := range map[string]record.Run{"a": a, "b": b} {
		if state := unfinished(r); state != "" {
			cmp.Unfinished = append(cmp.Unfinished, Unfinished{Run: name, State: state})
		}
	}
	slices.SortFunc(cmp.Unfinished, func(x, y Unfinished) int { return strings.Compare(x.Run, y.Run) })
	return cmp
}

// alone lists the servers of a cell only one run has.
func alone(c record.Cell, status string) []Change {
	var out []Change
	for _, s := range c.Servers {
		ch := Change{Server: s.Name, Status: status}
		if !s.Ranked() {
			ch.Failure = analysis.FailureText(s)
		}
		out = append(out, ch)
	}
	return out
}

// side is a server's rows in one run: its load ranking row and its
// capacity row, where it has them.
type side struct {
	srv      *record.Server
	row, cap *analysis.Row
}

func sides(c analysis.Cell) (map[string]side, []string) {
	out := map[string]side{}
	var order []string
	for _, r := range c.Load.Rows {
		out[r.Name] = side{row: &r}
		order = append(order, r.Name)
	}
	for _, r := range c.Capacity.Rows {
		s := out[r.Name]
		s.cap = &r
		out[r.Name] = s
	}
	for i := range c.Record.Servers {
		srv := &c.Record.Servers[i]
		s := out[srv.Name]
		s.srv = srv
		out[srv.Name] = s
		if !slices.Contains(order, srv.Name) {
			order = append(order, srv.Name)
		}
	}
	return out, order
}

// cell compares a cell present in both runs: a's servers in a's order
// (ranked first), then those only b has.
func cell(ca, cb analysis.Cell, threshold float64) ComparedCell {
	out := ComparedCell{Name: ca.Name, Cell: ca.Plan, Settings: differences(ca.Record.Settings, cb.Record.Settings)}
	sa, order := sides(ca)
	sb, orderB := sides(cb)
	for _, name := range orderB {
		if _, ok := sa[name]; !ok {
			order = append(order, name)
		}
	}
	for _, name := range order {
		out.Servers = append(out.Servers, change(name, sa[name], sb[name]))
	}
	out.RPSDrift = drift(out.Servers, func(c *Change) *Figure { return c.RPS })
	out.CapacityDrift = drift(out.Servers, func(c *Change) *Figure { return c.Capacity })
	for i := range out.Servers {
		judge(&out.Servers[i], sa[out.Servers[i].Server], sb[out.Servers[i].Server], out.RPSDrift, out.CapacityDrift, threshold)
	}
	return out
}

// change is a server's status and figures in two runs, not yet judged.
func change(name string, a, b side) Change {
	ch := Change{Server: name}
	switch {
	case a.srv == nil:
		ch.Status = OnlyInB
	case b.srv == nil:
		ch.Status = OnlyInA
	case a.row != nil && b.row != nil:
		ch.Status = Compared
	case a.row != nil:
		ch.Status = NowFails
	case b.row != nil:
		ch.Status = NowRanked
	default:
		ch.Status = FailsInBoth
	}
	for _, s := range []side{b, a} { // the newer failure says more
		if s.srv != nil && !s.srv.Ranked() && ch.Failure == "" {
			ch.Failure = analysis.FailureText(*s.srv)
		}
	}
	if a.srv != nil && b.srv != nil && a.srv.ImageID != b.srv.ImageID {
		ch.ImageA, ch.ImageB = a.srv.ImageID, b.srv.ImageID
	}
	for run, s := range map[string]side{"a": a, "b": b} {
		if s.row != nil && s.row.ClientBound {
			ch.ClientBound = append(ch.ClientBound, run)
		}
	}
	slices.Sort(ch.ClientBound)
	if ch.Status != Compared {
		return ch
	}
	ch.RPS = figure(a.row.Values, b.row.Values, !a.row.ClientBound && !b.row.ClientBound)
	ch.P99 = figure(a.row.P99Values, b.row.P99Values, false)
	if a.cap != nil && b.cap != nil {
		ch.Capacity = figure(a.cap.Values, b.cap.Values, !a.cap.ClientBound && !b.cap.ClientBound)
	}
	return ch
}

func figure(a, b []float64, judged bool) *Figure {
	f := &Figure{A: stats.Of(a), B: stats.Of(b), Diff: stats.Compare(a, b), Judged: judged}
	f.Adjusted = f.Diff.Change
	return f
}

// drift is the median log shift of a judged figure over the cell's
// servers, when there are DriftServers of them or more.
func drift(changes []Change, pick func(*Change) *Figure) *Drift {
	var shifts []float64
	for i := range changes {
		if f := pick(&changes[i]); f != nil && f.Judged && f.A.Median > 0 && f.B.Median > 0 {
			shifts = append(shifts, math.Log(f.B.Median/f.A.Median))
		}
	}
	if len(shifts) < DriftServers {
		return nil
	}
	return &Drift{Change: math.Expm1(stats.Median(shifts)), Servers: len(shifts)}
}

// pSlack keeps rounding from lifting the smallest p a sample size allows
// (3 rounds a side: 0.05 one-sided) above stats.Alpha.
const pSlack = 1e-9

// judge decides whether a server regressed: a server that fails now, or a
// judged figure slower by more than threshold after the drift, with the
// one-sided U test's p at most stats.Alpha on the second run's rounds
// divided by the drift.
func judge(ch *Change, a, b side, rpsDrift, capDrift *Drift, threshold float64) {
	if ch.Status == NowFails {
		ch.Regression = "ranked in the first run, fails in the second: " + ch.Failure
		return
	}
	if ch.Status != Compared {
		return
	}
	var why []string
	for _, m := range []struct {
		name  string
		f     *Figure
		a, b  *analysis.Row
		drift *Drift
	}{{"req/s", ch.RPS, a.row, b.row, rpsDrift}, {"capacity req/s", ch.Capacity, a.cap, b.cap, capDrift}} {
		if m.f == nil || !m.f.Judged {
			continue
		}
		factor := 1.0
		if m.drift != nil {
			factor = 1 + m.drift.Change
		}
		adjusted := make([]float64, len(m.b.Values))
		for i, v := range m.b.Values {
			adjusted[i] = v / factor
		}
		d := stats.Compare(m.a.Values, adjusted)
		m.f.Adjusted = d.Change
		m.f.SlowerP = 1 - d.P/2 // the other tail
		if d.Change < 0 {
			m.f.SlowerP = d.P / 2
		}
		if m.f.Adjusted < -threshold && m.f.SlowerP <= stats.Alpha+pSlack {
			m.f.Regressed = true
			why = append(why, fmt.Sprintf("%s %+.1f%% (p=%.3f, one-sided)", m.name, 100*m.f.Adjusted, m.f.SlowerP))
		}
	}
	if len(why) > 0 {
		ch.Regression = fmt.Sprintf("slower by more than %.0f%%: %s", 100*threshold, joinAnd(why))
	}
}

func joinAnd(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return parts[0] + " and " + parts[1]
}

// differences lists the settings whose values differ; where the results
// went changes no figure.
func differences(a, b []record.Setting) []ChangedSetting {
	values := map[string]string{}
	for _, s := range a {
		values[config.Current(s.Name)] = s.Value // a record may hold a setting's old name
	}
	var out []ChangedSetting
	seen := map[string]bool{}
	for _, s := range b {
		name := config.Current(s.Name)
		seen[name] = true
		if v := values[name]; v != s.Value && name != "GRPC_RESULTS_DIR" {
			out = append(out, ChangedSetting{Name: name, A: v, B: s.Value})
		}
	}
	for _, s := range a {
		if name := config.Current(s.Name); !seen[name] && s.Value != "" && name != "GRPC_RESULTS_DIR" {
			out = append(out, ChangedSetting{Name: name, A: s.Value})
		}
	}
	return out
}

// hardware lists the facts of the machines that differ.
func hardware(a, b record.Run) []ChangedSetting {
	facts := func(h record.Hardware) []record.Setting {
		return []record.Setting{{Name: "cpu model", Value: h.CPUModel}, {Name: "cpus", Value: fmt.Sprint(h.CPUs)},
			{Name: "memory", Value: fmt.Sprint(h.MemoryBytes)}, {Name: "kernel", Value: h.Kernel}, {Name: "os", Value: h.OS},
			{Name: "docker", Value: h.DockerVersion}, {Name: "cgroup", Value: h.CgroupVersion}, {Name: "storage driver", Value: h.StorageDriver}}
	}
	out := differences(facts(a.Hardware), facts(b.Hardware))
	clientA, clientB := a.Hardware, b.Hardware
	if a.ClientHardware != nil {
		clientA = *a.ClientHardware
	}
	if b.ClientHardware != nil {
		clientB = *b.ClientHardware
	}
	if a.ClientHardware != nil || b.ClientHardware != nil {
		for _, d := range differences(facts(clientA), facts(clientB)) {
			d.Name = "clients' " + d.Name
			out = append(out, d)
		}
	}
	return out
}
