package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
	"github.com/grpcbench/grpcbench/orchestrator/internal/visible"
)

// TLSTwins are a plaintext cell and the TLS cell that differs from it by
// GRPC_TLS alone.
type TLSTwins struct {
	Off, On record.Cell
}

// TLSTwinsOf pairs each plaintext cell of a run with its TLS twin, in
// the order of the cells.
func TLSTwinsOf(run record.Run) []TLSTwins {
	var out []TLSTwins
	for _, off := range run.Cells {
		if off.TLS {
			continue
		}
		for _, on := range run.Cells {
			twin := on.Cell
			twin.TLS = false
			if on.TLS && twin == off.Cell {
				out = append(out, TLSTwins{Off: off, On: on})
			}
		}
	}
	return out
}

// TLSCost is what TLS costs one server, ranked in both twins, by one
// kind of measurement (the load tool's or the capacity tool's).
type TLSCost struct {
	Name string `json:"name"`
	// RPS is OK calls per second; CPUPerCall the server's CPU time per OK
	// call, in seconds (the inverse of req/s per core).
	RPS        TLSFigure `json:"rps"`
	CPUPerCall TLSFigure `json:"cpu_per_call"`
	// ClientBound says the load client set the pace in a round of either
	// cell: its req/s are the client's.
	ClientBound bool `json:"client_bound,omitempty"`
}

// TLSFigure is a figure in plaintext and over TLS, medians of the rounds,
// and the test of the two as the rankings test a pair of servers: paired
// by round where both cells ran in the same rounds (Pair.Ratio is TLS over
// plaintext, Lo–Hi its interval), else Mann–Whitney, else too few rounds.
type TLSFigure struct {
	Off  float64    `json:"off"`
	On   float64    `json:"on"`
	Pair stats.Pair `json:"test"`
}

// Ratio is TLS over plaintext: the pair's when it was tested, else the
// medians'.
func (f TLSFigure) Ratio() float64 {
	if f.Pair.Ratio > 0 {
		return f.Pair.Ratio
	}
	if f.Off == 0 {
		return math.NaN()
	}
	return f.On / f.Off
}

// measurement picks one kind of measurement of a round: nil when the round
// has none.
type measurement func(record.Round) *record.Measurement

func loadMeasurement(r record.Round) *record.Measurement { return &r.Measurement }

func capacityMeasurement(r record.Round) *record.Measurement { return r.Capacity }

// TLSCosts compares the servers ranked in both twins by the load tool's
// measurements, or with capacity by the capacity tool's, in the plaintext
// cell's ranking order; left lists the servers of either cell not
// compared.
func TLSCosts(run record.Run, t TLSTwins, capacity bool) (costs []TLSCost, left []string) {
	rank, pick := Ranking, measurement(loadMeasurement)
	if capacity {
		rank, pick = CapacityRanking, capacityMeasurement
	}
	on := map[string]RankingRow{}
	for _, r := range rank(t.On) {
		on[r.Name] = r
	}
	compared := map[string]bool{}
	for _, off := range rank(t.Off) {
		tls, ok := on[off.Name]
		if !ok {
			continue
		}
		compared[off.Name] = true
		offServer, _ := t.Off.Server(off.Name)
		onServer, _ := t.On.Server(off.Name)
		offRPS, offCPU := tlsSamples(offServer, pick)
		onRPS, onCPU := tlsSamples(onServer, pick)
		costs = append(costs, TLSCost{Name: off.Name, ClientBound: off.ClientBound || tls.ClientBound,
			RPS: tlsFigure(run, offRPS, onRPS), CPUPerCall: tlsFigure(run, offCPU, onCPU)})
	}
	for _, c := range []record.Cell{t.Off, t.On} {
		for _, s := range c.Servers {
			if !compared[s.Name] && !slices.Contains(left, s.Name) {
				left = append(left, s.Name)
			}
		}
	}
	return costs, left
}

// tlsSamples are a server's req/s and CPU per call in each round that has
// the measurement (CPU only where the server had a stats reading).
func tlsSamples(s record.Server, pick measurement) (rps, cpu stats.Sample) {
	for _, r := range s.Rounds {
		m := pick(r)
		if m == nil || m.Load == nil {
			continue
		}
		rps.Rounds, rps.Values = append(rps.Rounds, r.Round), append(rps.Values, m.Load.RPS)
		if m.Server.Samples > 0 && m.Server.CPUAvgPercent > 0 && m.Load.RPS > 0 {
			cpu.Rounds, cpu.Values = append(cpu.Rounds, r.Round), append(cpu.Values, m.Server.CPUAvgPercent/100/m.Load.RPS)
		}
	}
	return rps, cpu
}

// tlsFigure tests on against off by the run's design.
func tlsFigure(run record.Run, off, on stats.Sample) TLSFigure {
	off.Name, on.Name = "off", "on"
	f := TLSFigure{Off: stats.Median(off.Values), On: stats.Median(on.Values)}
	if a := stats.Analyse([]stats.Sample{off, on}, run.DesignOrFixed()); len(a.Pairs) == 1 {
		f.Pair = a.Pairs[0]
	}
	return f
}

// tlsTestText says what the test of a figure found: the ratio's interval
// and p when paired, p when not, or why nothing is claimed.
func tlsTestText(f TLSFigure) string {
	p := f.Pair
	switch p.Test {
	case stats.PairedT:
		return fmt.Sprintf("%.3f–%.3f, p %.3f, %s", p.Lo, p.Hi, p.P, p.Verdict)
	case stats.MannWhitney:
		return fmt.Sprintf("unpaired, p %.3f, %s", p.P, p.Verdict)
	}
	return fmt.Sprintf("%d rounds, too few", p.N)
}

// tlsTable is one table of TLS costs: a pair of twins by one kind of
// measurement, and what the reader must know beside it.
type tlsTable struct {
	Name, By string
	Costs    []TLSCost
	Notes    []string
}

// tlsTables are the run's TLS cost tables: for each plaintext cell with a
// TLS twin, by the load tool and, where the run has it, the capacity tool.
func tlsTables(run record.Run) []tlsTable {
	var out []tlsTable
	for _, t := range TLSTwinsOf(run) {
		for _, capacity := range []bool{false, true} {
			by := "the load tool (" + toolOf(t.Off) + ")"
			if capacity {
				if CapacityRanking(t.Off) == nil {
					continue
				}
				by = "the capacity tool"
			}
			costs, left := TLSCosts(run, t, capacity)
			tab := tlsTable{Name: t.Off.Name(), By: by, Costs: costs}
			for _, c := range costs {
				if c.ClientBound {
					tab.Notes = append(tab.Notes, c.Name+": client-bound in a round of either cell: its req/s and their ratio are the load client's, not the server's; its CPU per call is the server's")
				}
			}
			if len(left) > 0 {
				tab.Notes = append(tab.Notes, "not compared (not ranked in both cells): "+strings.Join(left, ", "))
			}
			out = append(out, tab)
		}
	}
	return out
}

// tlsCaption says how the TLS cost tables were computed.
var tlsCaption = fmt.Sprintf("µs/call is the server's CPU time per OK call (1e6 over req/s per core); on/off is the geometric mean of the per-round ratios where the rounds pair, else the ratio of the medians; tests as the rankings': %s, or %s when the cells share fewer than %d rounds, at %.0f%%",
	stats.PairedT, stats.MannWhitney, stats.MinRounds, 100*stats.Alpha)

// tlsRowFormat lays out the TLS cost tables of bench.txt.
const tlsRowFormat = "| %-27s | %9s | %9s | %6s | %-32s | %11s | %11s | %6s | %-32s |\n"

// writeTLSCosts writes bench.txt's closing section, the TLS cost tables.
func writeTLSCosts(b *strings.Builder, run record.Run) {
	tables := tlsTables(run)
	if len(tables) == 0 {
		return
	}
	b.WriteString("\n== TLS cost: each server over TLS (on) against plaintext (off), in the cells that differ by GRPC_TLS alone\n")
	for _, tab := range tables {
		fmt.Fprintf(b, "-- %s, by %s\n", tab.Name, tab.By)
		header := fmt.Sprintf(tlsRowFormat, "name", "req/s off", "req/s on", "on/off", "req/s test", "µs/call off", "µs/call on", "on/off", "CPU per call test")
		rule := strings.Repeat("-", utf8.RuneCountInString(header)-1) + "\n"
		b.WriteString(rule + header + rule)
		for _, c := range tab.Costs {
			v := tlsViewOf(c)
			fmt.Fprintf(b, tlsRowFormat, v.Name, v.RPSOff, v.RPSOn, v.RPSRatio, v.RPSTest, v.CPUOff, v.CPUOn, v.CPURatio, v.CPUTest)
		}
		b.WriteString(rule)
		for _, n := range tab.Notes {
			b.WriteString("! " + visible.Text(n) + "\n")
		}
	}
	b.WriteString("! " + tlsCaption + "\n")
}

// tlsView is a TLS cost as text, for bench.txt and report.html.
type tlsView struct {
	Name                             string
	RPSOff, RPSOn, RPSRatio, RPSTest string
	PerCoreOff, PerCoreOn            string
	CPUOff, CPUOn, CPURatio, CPUTest string
}

func tlsViewOf(c TLSCost) tlsView {
	v := tlsView{Name: visible.Text(c.Name),
		RPSOff: fmt.Sprintf("%.0f", c.RPS.Off), RPSOn: fmt.Sprintf("%.0f", c.RPS.On), RPSRatio: fmt.Sprintf("%.3f", c.RPS.Ratio()), RPSTest: tlsTestText(c.RPS),
		PerCoreOff: perCoreText(c.CPUPerCall.Off), PerCoreOn: perCoreText(c.CPUPerCall.On),
		CPUOff: micros(c.CPUPerCall.Off), CPUOn: micros(c.CPUPerCall.On), CPURatio: fmt.Sprintf("%.3f", c.CPUPerCall.Ratio()), CPUTest: tlsTestText(c.CPUPerCall)}
	if c.ClientBound {
		v.RPSOn = "≥" + v.RPSOn
	}
	return v
}

func micros(seconds float64) string {
	if seconds == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", seconds*1e6)
}

func perCoreText(seconds float64) string {
	if seconds == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f", 1/seconds)
}
